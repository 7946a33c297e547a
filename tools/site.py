"""Build the series as a static web site from the stored notebooks, without running them.

Usage: ``python -m tools.site [NOTEBOOK_DIR] [OUT_DIR] [SLIDES_DIR] [--repo OWNER/NAME]``
(``make site`` runs ``notebooks`` -> ``build/site``, after ``make slides`` wrote ``build/slides``,
and passes ``REPO=OWNER/NAME`` as ``--repo``).

- ``index.html``: what the series is and for whom, the chapter list, how to run it locally
  (all from README.md, the sections named in :data:`README_SECTIONS`); ``references.html``:
  ``docs/references.md``. A section or file missing stops the build with
  :class:`SiteSourceError`, naming what it expected.
- one page per notebook, ``NN_name.html``: prose, MathML maths, code, outputs and figures, with
  the exercises as in the student edition (``tools.student``) and without speaker notes; an
  explorer shows as the still of its default view with a line saying it is interactive in
  JupyterLab.
- ``slides/`` (the decks, copied) and ``notebooks/`` (each notebook's student edition, the file
  ``make student`` writes), which pages link to.
- where the repository's address is known (``--repo``, else ``GITHUB_REPOSITORY`` in GitHub
  Actions, else git's remote ``origin``: ``tools.links.find_repo``, as ``make links`` takes it),
  each chapter's open-in-Colab and open-in-Binder links on the index and on its page.

Every page is plain HTML and CSS with one small inline script that nothing depends on
(``static/site.js``), and nothing from the network.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path
from urllib.parse import urlencode

from . import search
from .links import NOTEBOOK_TABLE, Repo, find_repo, repo_argument, with_links
from .publish import TEMPLATES, exporter, markdown_to_html, slide_type, static_outputs, title_of
from .student import student_notebook, student_text

SERIES = "Attention, from one dot product to a trained Transformer"

# What the site takes from README.md, by the level-2 heading it sits under ("" is the text
# between the title and the first heading), and where it shows it. Renaming one of these
# headings in README.md means renaming it here too: the build stops until both agree.
README_SECTIONS = {
    "": "the opening of index.html",
    "Two commands": '"Run it on your machine" on index.html',
    NOTEBOOK_TABLE: "each chapter's one line, from the rows | 03 | `03_masking` | what you learn |",
}
REFERENCES = "docs/references.md"  # references.html, relative to README.md's folder
# A row of README's notebook table: | 03 | `03_masking` | what you learn | (a last column of
# links, which tools.links writes, is not part of the line).
_TABLE_ROW = re.compile(r"^\|\s*\d+\s*\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|(?:[^|]*\|)?\s*$", re.M)


class SiteSourceError(ValueError):
    """README.md or docs/references.md lacks something the site is built from."""


@dataclass(frozen=True)
class Chapter:
    """One notebook of the series, as the site lists it."""

    stem: str  # "03_masking"
    title: str  # "03 · Masking"
    summary: str  # one line

    @property
    def page(self) -> str:
        return f"{self.stem}.html"


def readme_sections(text: str) -> dict[str, str]:
    """README.md split at its level-2 headings: ``{"": intro, "Two commands": ..., ...}``."""
    sections: dict[str, str] = {}
    name, lines = "", []
    for line in text.splitlines():
        if line.startswith("## "):
            sections[name] = "\n".join(lines).strip()
            name, lines = line[3:].strip(), []
        elif not (name == "" and line.startswith("# ")):
            lines.append(line)
    sections[name] = "\n".join(lines).strip()
    return sections


def readme_summaries(notebooks_section: str) -> dict[str, str]:
    """``{"03_masking": "causal masks two ways, ..."}`` from README's table of notebooks."""
    return dict(_TABLE_ROW.findall(notebooks_section))


def site_sections(text: str) -> dict[str, str]:
    """The sections of README.md (its text) that the site shows, by :data:`README_SECTIONS`.

    Raises :class:`SiteSourceError` naming the heading that is missing or empty, or the table row
    format when the notebook table has no row of it: a renamed heading would otherwise drop its
    text from the site without a word."""
    sections = readme_sections(text)
    for name, use in README_SECTIONS.items():
        if sections.get(name):
            continue
        if not name:
            raise SiteSourceError(
                f'README.md has no text between its title and its first "## " heading ({use})'
            )
        found = ", ".join(f'"## {s}"' for s in sections if s) or "none"
        raise SiteSourceError(
            f'README.md has no section "## {name}", which the site shows as {use}; its sections are'
            f" {found}. Rename the heading back, or change README_SECTIONS in tools/site.py."
        )
    if not readme_summaries(sections[NOTEBOOK_TABLE]):
        raise SiteSourceError(
            f'README.md\'s section "## {NOTEBOOK_TABLE}" has no table row of the form'
            " | 03 | `03_masking` | what you learn |, from which the site takes each chapter's line"
        )
    return {name: sections[name] for name in README_SECTIONS}


_TARGET = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def for_the_site(markdown: str, page: str, root: Path, out_dir: Path, repo: Repo | None) -> str:
    """Markdown of the repository's file ``page`` (``README.md``, ``docs/references.md``) as a
    page of the site can show it. An image it shows from the repository is copied into the
    site's ``images/``; a link to a file of the repository or to a section of one, which the site
    does not have, leads to GitHub where the repository's address is known and is plain text
    otherwise. Web addresses stay as they are."""

    def target(match: re.Match) -> str:
        bang, text, where = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:", where, re.I):  # https:, mailto:
            return match[0]
        file, _, anchor = where.partition("#")
        path = (Path(page).parent / file).as_posix() if file else page
        if bang:
            source = root / path
            if not source.is_file():
                raise SiteSourceError(f"{page} shows the image {where}, which does not exist")
            (out_dir / "images").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out_dir / "images" / source.name)
            return f"![{text}](images/{source.name})"
        if repo is None:
            return text
        url = f"https://github.com/{repo.slug}/blob/{repo.branch}/{path}"
        return f"[{text}]({url}#{anchor})" if anchor else f"[{text}]({url})"

    return _TARGET.sub(target, markdown)


def references_markdown(root: Path) -> str:
    """The body of ``docs/references.md`` (under ``root``), its ``# `` title left out."""
    path = root / REFERENCES
    if not path.is_file():
        raise SiteSourceError(f"{REFERENCES} is missing: the site's references.html shows it")
    return re.sub(r"\A\s*# .*\n", "", path.read_text(encoding="utf-8")).strip()


def summary_of(nb: dict) -> str:
    """A chapter's one line when README has none yet: the subtitle under the notebook's title
    (its first ``##``/``###`` heading in the title cell), else the first sentence of prose."""
    prose = [
        c for c in nb["cells"] if c.get("cell_type") == "markdown" and slide_type(c) not in ("notes", "skip")
    ]
    for cell in prose[:1]:
        match = re.search(r"^#\s.*\n+#{2,3}\s+(.+)$", _text(cell), re.M)
        if match:
            return match.group(1).strip()
    for cell in prose:
        for para in re.split(r"\n\s*\n", _text(cell)):
            para = para.strip()
            if para and not para.startswith(("#", "|", "!", "<", "```", "-", "*", ">")):
                return re.split(r"(?<=[.!?])\s", " ".join(para.split()), maxsplit=1)[0]
    return ""


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def chapters(notebooks: list[Path], summaries: dict[str, str]) -> list[Chapter]:
    """The chapters in file-name order, each with README's one line (or the notebook's first sentence)."""
    import nbformat

    out = []
    for path in sorted(notebooks):
        nb = nbformat.read(path, as_version=4)
        out.append(Chapter(path.stem, title_of(nb) or path.stem, summaries.get(path.stem) or summary_of(nb)))
    return out


def site_notebook(nb: dict) -> dict:
    """The notebook as the site shows it: the student edition, no speaker notes, explorers as stills.
    The links line of its first markdown cell is left out: the page gives the same links."""
    nb = student_notebook(nb)
    first = next((c for c in nb["cells"] if c.get("cell_type") == "markdown"), None)
    if first is not None:
        first["source"] = with_links(_text(first), None, "")
    nb["cells"] = [c for c in nb["cells"] if slide_type(c) not in ("notes", "skip")]
    return static_outputs(nb)


def _nav(items: list[Chapter], current: str) -> str:
    links = []
    for ch in items:
        mark = ' aria-current="page"' if ch.stem == current else ""
        links.append(f'<li><a href="{ch.page}"{mark}>{escape(ch.title)}</a></li>')
    home = ' aria-current="page"' if current == "index" else ""
    refs = ' aria-current="page"' if current == "references" else ""
    # The search box stays outside the list that a phone keeps closed; the search page has its own.
    form = "" if current == "search" else search.FORM
    return (
        f'<nav class="series" aria-label="chapters">{form}'
        '<details class="menu" open><summary>Chapters</summary>'
        f'<p><a href="index.html"{home}>{escape(SERIES)}</a></p>'
        f'<ol>{"".join(links)}</ol><p><a href="references.html"{refs}>References</a></p></details></nav>'
    )


def _pager(items: list[Chapter], i: int) -> str:
    prev = (
        f'<a rel="prev" href="{items[i - 1].page}">← {escape(items[i - 1].title)}</a>'
        if i > 0
        else "<span></span>"
    )
    nxt = (
        f'<a rel="next" href="{items[i + 1].page}">{escape(items[i + 1].title)} →</a>'
        if i + 1 < len(items)
        else ""
    )
    return f'<nav class="pager" aria-label="previous and next">{prev}{nxt}</nav>'


# Every page ends with the licences (LICENSE, LICENSE-content.md): the content may be reused in
# other courses, with credit, and a reader of the site must be able to see that.
LICENCE_FOOTER = (
    '<footer class="licence"><p>Text, figures and slides: Creative Commons Attribution 4.0 '
    "(CC BY 4.0, creativecommons.org/licenses/by/4.0). Code (attnlib and the notebooks' code "
    "cells): MIT licence.</p></footer>"
)


def _focusable_pre(html: str) -> str:
    """Code blocks that may scroll sideways take the keyboard focus, so they scroll without a
    mouse (WCAG 2.1.1; axe-core's scrollable-region-focusable)."""
    return html.replace("<pre>", '<pre tabindex="0">')


_TABLE = re.compile(r"<table\b.*?</table>", re.S)


def _table_label(table: str) -> str:
    """What a table's scroll box is called: its column headings, e.g. "Table: the paper, this
    notebook, why (scrolls sideways)"."""
    first_row = re.search(r"<tr\b.*?</tr>", table, re.S)
    cells = re.findall(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", first_row[0] if first_row else "", re.S)
    names = [" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in cells]
    names = [unescape(name) for name in names if name]
    return f"Table: {', '.join(names)} (scrolls sideways)" if names else "Table (scrolls sideways)"


def scrolling_tables(html: str) -> str:
    """Every table in a box that scrolls it sideways on a narrow screen, and says so: the box
    takes the keyboard focus and is named after the table's columns, and above it a line
    "Scroll sideways" that site.js shows, and a fading right edge, while columns are hidden."""

    def wrap(match: re.Match) -> str:
        table = match[0]
        label = escape(_table_label(table))
        return (
            '<div class="wide-table"><p class="scroll-cue">Scroll sideways for more columns →</p>'
            f'<div class="table-scroll" role="region" tabindex="0" aria-label="{label}">{table}</div></div>'
        )

    return _TABLE.sub(wrap, html)


def _plain_page(title: str, nav: str, body: str) -> str:
    css = (TEMPLATES / "attn-page" / "static" / "site.css").read_text(encoding="utf-8")
    script = (TEMPLATES / "attn-page" / "static" / "site.js").read_text(encoding="utf-8")
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        f'<title>{escape(title)}</title>\n<link rel="icon" href="data:,">\n'
        f"<style>\n{css}\n</style>\n</head>\n"
        f'<body>\n<div class="layout">{nav}\n<main class="prose">\n'
        f"{scrolling_tables(_focusable_pre(body))}\n{LICENCE_FOOTER}\n"
        f"</main></div>\n<script>\n{script}</script>\n"
        "</body>\n</html>\n"
    )


def _launch(repo: Repo | None, stem: str) -> str:
    """``, <a>Colab</a>, <a>Binder</a>`` for one notebook, or nothing where the address is unknown."""
    if repo is None:
        return ""
    path = f"notebooks/{stem}.ipynb"
    colab, binder = escape(repo.colab(path)), escape(repo.binder(path))
    return f', <a href="{colab}">Colab</a>, <a href="{binder}">Binder</a>'


def home_page(sections: dict[str, str], items: list[Chapter], repo: Repo | None = None) -> str:
    rows = "".join(
        f'<li><a href="{ch.page}">{escape(ch.title)}</a> — {markdown_to_html(ch.summary).strip()[3:-4]}'
        f' <span class="links">(<a href="slides/{ch.stem}.slides.html">slides</a>,'
        f' <a href="notebooks/{ch.stem}.ipynb" download>student notebook</a>'
        f"{_launch(repo, ch.stem)})</span></li>"
        for ch in items
    )
    body = (
        f"<h1>{escape(SERIES)}</h1>\n{markdown_to_html(sections[''])}\n"
        f'<h2 id="chapters">The chapters</h2>\n<ol class="chapters">{rows}</ol>\n'
        f'<h2 id="run-it">Run it on your machine</h2>\n{markdown_to_html(sections["Two commands"])}\n'
        f'<p>The references are on <a href="references.html">their own page</a>.</p>'
    )
    # The prose pages' style sheet leaves images their own width; a phone must not scroll sideways.
    body = body.replace("<img ", '<img style="max-width: 100%; height: auto" ')
    return _plain_page(SERIES, _nav(items, "index"), body)


def search_page(items: list[Chapter]) -> str:
    return _plain_page(f"Search · {SERIES}", _nav(items, "search"), search.search_page_body())


def _report(repo: Repo | None, page: str, title: str) -> str:
    """`` · <a>Report a problem on this page</a>`` where the repository's address is known."""
    if repo is None:
        return ""
    query = urlencode({"title": f"{title}: ", "body": f"Page: {page}\n\nWhat is wrong, and where:\n"})
    url = f"https://github.com/{repo.slug}/issues/new?{query}"
    return f' · <a href="{escape(url)}">Report a problem on this page</a>'


def references_page(references: str, items: list[Chapter]) -> str:
    body = f"<h1>References</h1>\n{markdown_to_html(references)}"
    return _plain_page(f"References · {SERIES}", _nav(items, "references"), body)


def build_site(
    notebook_dir: Path, out_dir: Path, slides_dir: Path | None, readme: Path, repo: Repo | None = None
) -> list[Path]:
    """Write the site into ``out_dir``; return the HTML pages written. With ``repo``, every
    chapter links to its notebook in Colab and in Binder."""
    import nbformat

    root = readme.parent
    sections = site_sections(readme.read_text(encoding="utf-8"))
    references = references_markdown(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    shown = {name: for_the_site(text, "README.md", root, out_dir, repo) for name, text in sections.items()}
    paths = sorted(notebook_dir.glob("*.ipynb"))
    items = chapters(paths, readme_summaries(sections[NOTEBOOK_TABLE]))
    pages = [out_dir / "index.html", out_dir / "references.html", out_dir / search.PAGE]
    pages[0].write_text(home_page(shown, items, repo), encoding="utf-8")
    refs = for_the_site(references, REFERENCES, root, out_dir, repo)
    pages[1].write_text(references_page(refs, items), encoding="utf-8")
    pages[2].write_text(search_page(items), encoding="utf-8")
    entries: list[dict[str, str]] = []
    exp = exporter("html", "attn-page")
    for i, (path, ch) in enumerate(zip(paths, items, strict=True)):
        nb = site_notebook(nbformat.read(path, as_version=4))
        resources = {
            "metadata": {"name": ch.title, "path": str(path.parent)},
            "series_nav": _nav(items, ch.stem),
            "pager": _pager(items, i),
            "licence_footer": LICENCE_FOOTER,
            "chapter_links": (
                f'<p class="chapter-links">Present it: <a href="slides/{ch.stem}.slides.html">slides</a>'
                f' · Run it: <a href="notebooks/{ch.stem}.ipynb" download>{ch.stem}.ipynb</a>'
                " (the student edition, exercises left for you; open it in JupyterLab)"
                + (f". Run it without installing: {_launch(repo, ch.stem)[2:]}" if repo else "")
                + _report(repo, ch.page, ch.title)
                + "</p>"
            ),
        }
        html, _ = exp.from_notebook_node(nbformat.from_dict(nb), resources=resources)
        html = scrolling_tables(html)
        (out_dir / ch.page).write_text(html, encoding="utf-8")
        pages.append(out_dir / ch.page)
        entries += search.page_sections(html, ch.page, ch.title)
    search.write_index(out_dir, entries)
    # What a reader downloads is the student edition, the very file `make student` writes.
    (out_dir / "notebooks").mkdir(exist_ok=True)
    for path in paths:
        (out_dir / "notebooks" / path.name).write_text(student_text(path), encoding="utf-8")
    if slides_dir is not None and slides_dir.exists():
        shutil.rmtree(out_dir / "slides", ignore_errors=True)
        shutil.copytree(slides_dir, out_dir / "slides")
    (out_dir / ".nojekyll").write_text("")
    return pages


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.site", description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", type=Path, default=Path("notebooks"))
    parser.add_argument("target", nargs="?", type=Path, default=Path("build/site"))
    parser.add_argument("slides", nargs="?", type=Path, default=Path("build/slides"))
    repo_argument(parser)
    args = parser.parse_args(argv)
    source, target = args.source, args.target
    readme = source.resolve().parent / "README.md"
    repo = find_repo(None, readme.parent, slug=args.repo)
    try:
        pages = build_site(source, target, args.slides, readme, repo)
    except SiteSourceError as err:
        print(f"tools.site: {err}", file=sys.stderr)
        return 1
    links = f"Colab and Binder links to {repo.slug}" if repo else "no Colab or Binder links (address unknown)"
    print(f"wrote {len(pages)} pages into {target} ({links}); open {target / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Build the series as a static web site from the stored notebooks, without running them.

Usage: ``python -m tools.site [NOTEBOOK_DIR] [OUT_DIR] [SLIDES_DIR] [--repo OWNER/NAME] [--lang zh_CN]``
(``make site`` runs ``notebooks`` -> ``build/site``, after ``make slides`` wrote ``build/slides``,
and passes ``REPO=OWNER/NAME`` as ``--repo``).

**Translations.** With ``--lang zh_CN`` the site also has a Chinese copy of every page under
``OUT_DIR/zh/`` (:data:`EDITION_FOLDERS`), built from the notebooks as ``tools.i18n build`` writes
them (into a temporary folder, so never from a stale ``build/zh``) and from ``README.zh-CN.md``
(:data:`README_FILES`, its headings :data:`README_HEADINGS`); its pages link to the decks in
``SLIDES_DIR/zh/`` (``python -m tools.slides --lang zh_CN``). Every page of either language has a
switch to its counterpart and ``<link rel="alternate" hreflang>`` to both. The interface text
that this module and :mod:`tools.search` write is marked ``N_`` and looked up in
``locale/<lang>/site.po`` (:mod:`tools.ui`): a string without a translation stops the build.

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

import contextlib
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path
from urllib.parse import urlencode

from . import search
from .links import NOTEBOOK_TABLE, Repo, find_repo, repo_argument, with_links
from .publish import (
    TEMPLATES,
    exporter,
    html_lang,
    markdown_to_html,
    slide_type,
    static_outputs,
    template_text,
    title_of,
)
from .student import student_notebook, student_text
from .ui import N_
from .ui import text as ui_text

SERIES = N_("Attention, from one dot product to a trained Transformer")
ENGLISH = "en"
# Where each translation of the site (and of the decks, under SLIDES_DIR) lies, by catalogue name.
EDITION_FOLDERS = {"zh_CN": "zh"}
# What a language switch says: each language's name in that language (never translated).
LANGUAGE_NAMES = {ENGLISH: "English", "zh_CN": "简体中文"}
# The README the index page of each language comes from, next to README.md.
README_FILES = {ENGLISH: "README.md", "zh_CN": "README.zh-CN.md"}
# The headings of README_SECTIONS as each translated README writes them.
README_HEADINGS = {"zh_CN": {"Two commands": "两条命令", NOTEBOOK_TABLE: "笔记本一览"}}

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
    """README.md split at its level-2 headings: ``{"": intro, "Two commands": ..., ...}``. What
    stands above the ``# `` title (the line that links to the README in another language) is
    not part of the intro: the site's pages have their own language switch."""
    sections: dict[str, str] = {}
    name, lines = "", []
    all_lines = text.splitlines()
    for i, line in enumerate(all_lines):
        if line.startswith("## "):
            break
        if line.startswith("# "):
            all_lines = all_lines[i:]
            break
    for line in all_lines:
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


def site_sections(text: str, lang: str = ENGLISH) -> dict[str, str]:
    """The sections of README.md (its text), or of the README of ``lang`` (:data:`README_FILES`),
    that the site shows, by :data:`README_SECTIONS`, keyed by their English headings.

    Raises :class:`SiteSourceError` naming the heading that is missing or empty, or the table row
    format when the notebook table has no row of it: a renamed heading would otherwise drop its
    text from the site without a word."""
    if lang not in README_FILES:
        raise ValueError(f"expected a language among {sorted(README_FILES)}, got {lang!r}")
    sections, readme = readme_sections(text), README_FILES[lang]
    headings = {name: README_HEADINGS.get(lang, {}).get(name, name) for name in README_SECTIONS}
    for name, use in README_SECTIONS.items():
        if sections.get(headings[name]):
            continue
        if not name:
            raise SiteSourceError(
                f'{readme} has no text between its title and its first "## " heading ({use})'
            )
        found = ", ".join(f'"## {s}"' for s in sections if s) or "none"
        where = "README_HEADINGS" if lang != ENGLISH else "README_SECTIONS"
        raise SiteSourceError(
            f'{readme} has no section "## {headings[name]}", which the site shows as {use}; its sections are'
            f" {found}. Rename the heading back, or change {where} in tools/site.py."
        )
    if not readme_summaries(sections[headings[NOTEBOOK_TABLE]]):
        raise SiteSourceError(
            f'{readme}\'s section "## {headings[NOTEBOOK_TABLE]}" has no table row of the form'
            " | 03 | `03_masking` | what you learn |, from which the site takes each chapter's line"
        )
    return {name: sections[headings[name]] for name in README_SECTIONS}


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


def site_notebook(nb: dict, lang: str = ENGLISH) -> dict:
    """The notebook as the site shows it: the student edition, no speaker notes, explorers as stills
    (the lines about them in ``lang``). The links line of its first markdown cell is left out: the
    page gives the same links."""
    nb = student_notebook(nb, lang=lang)
    first = next((c for c in nb["cells"] if c.get("cell_type") == "markdown"), None)
    if first is not None:
        first["source"] = with_links(_text(first), None, "")
    nb["cells"] = [c for c in nb["cells"] if slide_type(c) not in ("notes", "skip")]
    return static_outputs(nb, lang=lang)


@dataclass(frozen=True)
class Switch:
    """Where a page's counterparts in the other languages are: ``{lang: prefix}``, the path from
    this edition's folder to that edition's (``{"zh_CN": "zh/"}`` on the English site,
    ``{"en": "../"}`` on the Chinese one)."""

    lang: str = ENGLISH
    others: tuple[tuple[str, str], ...] = ()

    def links(self, page: str) -> str:
        """The language switch of ``page``: a link to each counterpart, named in its own language."""
        items = " · ".join(
            f'<a href="{escape(prefix + page)}" hreflang="{html_lang(lang)}" lang="{html_lang(lang)}"'
            f' rel="alternate">{escape(LANGUAGE_NAMES[lang])}</a>'
            for lang, prefix in self.others
        )
        label = escape(ui_text(N_("Language"), self.lang))
        return f'<nav class="lang-switch" aria-label="{label}">{items}</nav>' if items else ""

    def head(self, page: str) -> str:
        """``<link rel="alternate" hreflang>`` to ``page`` in every language, this one included."""
        if not self.others:
            return ""
        editions = [(self.lang, ""), *self.others]
        return "".join(
            f'<link rel="alternate" hreflang="{html_lang(lang)}" href="{escape(prefix + page)}">\n'
            for lang, prefix in editions
        )


def _nav(items: list[Chapter], current: str, lang: str = ENGLISH, switch: Switch | None = None) -> str:
    links = []
    for ch in items:
        mark = ' aria-current="page"' if ch.stem == current else ""
        links.append(f'<li><a href="{ch.page}"{mark}>{escape(ch.title)}</a></li>')
    home = ' aria-current="page"' if current == "index" else ""
    refs = ' aria-current="page"' if current == "references" else ""
    page = {"index": "index.html", "references": "references.html", "search": search.PAGE}.get(
        current, f"{current}.html"
    )
    # The search box stays outside the list that a phone keeps closed; the search page has its own.
    form = "" if current == "search" else search.form(lang)
    t = {
        english: escape(ui_text(english, lang))
        for english in (N_("chapters"), N_("Chapters"), N_("References"))
    }
    return (
        f'<nav class="series" aria-label="{t["chapters"]}">{(switch or Switch(lang)).links(page)}{form}'
        f'<details class="menu" open><summary>{t["Chapters"]}</summary>'
        f'<p><a href="index.html"{home}>{escape(ui_text(SERIES, lang))}</a></p>'
        f'<ol>{"".join(links)}</ol><p><a href="references.html"{refs}>{t["References"]}</a></p>'
        "</details></nav>"
    )


def _pager(items: list[Chapter], i: int, lang: str = ENGLISH) -> str:
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
    label = escape(ui_text(N_("previous and next"), lang))
    return f'<nav class="pager" aria-label="{label}">{prev}{nxt}</nav>'


# Every page ends with the licences (LICENSE, LICENSE-content.md): the content may be reused in
# other courses, with credit, and a reader of the site must be able to see that.
LICENCE = N_(
    "Text, figures and slides: Creative Commons Attribution 4.0 (CC BY 4.0, "
    "creativecommons.org/licenses/by/4.0). Code (attnlib and the notebooks' code cells): MIT licence."
)


def licence_footer(lang: str = ENGLISH) -> str:
    """The footer of every page: the licences, in ``lang``."""
    return f'<footer class="licence"><p>{escape(ui_text(LICENCE, lang))}</p></footer>'


def _focusable_pre(html: str) -> str:
    """Code blocks that may scroll sideways take the keyboard focus, so they scroll without a
    mouse (WCAG 2.1.1; axe-core's scrollable-region-focusable)."""
    return html.replace("<pre>", '<pre tabindex="0">')


_TABLE = re.compile(r"<table\b.*?</table>", re.S)


def _table_label(table: str, lang: str = ENGLISH) -> str:
    """What a table's scroll box is called: its column headings, e.g. "Table: the paper, this
    notebook, why (scrolls sideways)"."""
    first_row = re.search(r"<tr\b.*?</tr>", table, re.S)
    cells = re.findall(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", first_row[0] if first_row else "", re.S)
    names = [" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in cells]
    names = [unescape(name) for name in names if name]
    if not names:
        return ui_text(N_("Table (scrolls sideways)"), lang)
    comma = ui_text(N_(", "), lang)
    return ui_text(N_("Table: {columns} (scrolls sideways)"), lang).format(columns=comma.join(names))


def scrolling_tables(html: str, lang: str = ENGLISH) -> str:
    """Every table in a box that scrolls it sideways on a narrow screen, and says so: the box
    takes the keyboard focus and is named after the table's columns, and above it a line
    "Scroll sideways" that site.js shows, and a fading right edge, while columns are hidden."""

    cue = ui_text(N_("Scroll sideways for more columns →"), lang)

    def wrap(match: re.Match) -> str:
        table = match[0]
        label = escape(_table_label(table, lang))
        return (
            f'<div class="wide-table"><p class="scroll-cue">{escape(cue)}</p>'
            f'<div class="table-scroll" role="region" tabindex="0" aria-label="{label}">{table}</div></div>'
        )

    return _TABLE.sub(wrap, html)


def _plain_page(title: str, nav: str, body: str, lang: str = ENGLISH, head: str = "") -> str:
    css = (TEMPLATES / "attn-page" / "static" / "site.css").read_text(encoding="utf-8")
    script = (TEMPLATES / "attn-page" / "static" / "site.js").read_text(encoding="utf-8")
    return (
        f'<!DOCTYPE html>\n<html lang="{html_lang(lang)}">\n<head>\n<meta charset="utf-8" />\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        f'<title>{escape(title)}</title>\n<link rel="icon" href="data:,">\n{head}'
        f"<style>\n{css}\n</style>\n</head>\n"
        f'<body>\n<div class="layout">{nav}\n<main class="prose">\n'
        f"{scrolling_tables(_focusable_pre(body), lang)}\n{licence_footer(lang)}\n"
        f"</main></div>\n<script>\n{script}</script>\n"
        "</body>\n</html>\n"
    )


def _launch(repo: Repo | None, stem: str, lang: str = ENGLISH) -> str:
    """``, <a>Colab</a>, <a>Binder</a>`` for one notebook's student edition in ``lang``, or
    nothing where the address is unknown."""
    if repo is None:
        return ""
    path = f"notebooks/{stem}.ipynb"
    colab, binder = repo.colab(path, lang), repo.binder(path, lang)
    comma = ui_text(N_(", "), lang)
    return f'{comma}<a href="{escape(colab)}">Colab</a>{comma}<a href="{escape(binder)}">Binder</a>'


@dataclass(frozen=True)
class Edition:
    """What one language's pages need besides the chapters: its language, the path from its
    folder to the decks, and its language switch."""

    lang: str = ENGLISH
    slides: str = "slides/"  # the folder of this language's decks, relative to its pages
    switch: Switch = Switch()

    def t(self, english: str) -> str:
        """``english`` (marked ``N_``) in this edition's language, HTML-escaped."""
        return escape(ui_text(english, self.lang))


def home_page(
    sections: dict[str, str], items: list[Chapter], repo: Repo | None = None, edition: Edition = Edition()
) -> str:
    t, lang = edition.t, edition.lang
    slides, download = t(N_("slides")), t(N_("student notebook"))
    chapters_heading, run_it = t(N_("The chapters")), t(N_("Run it on your machine"))
    comma = ui_text(N_(", "), lang)
    rows = "".join(
        f'<li><a href="{ch.page}">{escape(ch.title)}</a> — {markdown_to_html(ch.summary).strip()[3:-4]}'
        ' <span class="links">'
        + ui_text(N_("({links})"), lang).format(
            links=f'<a href="{edition.slides}{ch.stem}.slides.html">{slides}</a>{comma}'
            f'<a href="notebooks/{ch.stem}.ipynb" download>{download}</a>{_launch(repo, ch.stem, lang)}'
        )
        + "</span></li>"
        for ch in items
    )
    series = ui_text(SERIES, lang)
    body = (
        f"<h1>{escape(series)}</h1>\n{markdown_to_html(sections[''])}\n"
        f'<h2 id="chapters">{chapters_heading}</h2>\n<ol class="chapters">{rows}</ol>\n'
        f'<h2 id="run-it">{run_it}</h2>\n'
        f"{markdown_to_html(sections['Two commands'])}\n"
        "<p>"
        + ui_text(N_('The references are on <a href="references.html">their own page</a>.'), lang)
        + "</p>"
    )
    # The prose pages' style sheet leaves images their own width; a phone must not scroll sideways.
    body = body.replace("<img ", '<img style="max-width: 100%; height: auto" ')
    return _plain_page(
        series, _nav(items, "index", lang, edition.switch), body, lang, edition.switch.head("index.html")
    )


def search_page(items: list[Chapter], edition: Edition = Edition()) -> str:
    lang = edition.lang
    title = ui_text(N_("Search · {series}"), lang).format(series=ui_text(SERIES, lang))
    return _plain_page(
        title,
        _nav(items, "search", lang, edition.switch),
        search.search_page_body(lang),
        lang,
        edition.switch.head(search.PAGE),
    )


def _report(repo: Repo | None, page: str, title: str, lang: str = ENGLISH) -> str:
    """`` · <a>Report a problem on this page</a>`` where the repository's address is known."""
    if repo is None:
        return ""
    body = ui_text(N_("Page: {page}\n\nWhat is wrong, and where:\n"), lang).format(page=page)
    query = urlencode({"title": ui_text(N_("{title}: "), lang).format(title=title), "body": body})
    url = f"https://github.com/{repo.slug}/issues/new?{query}"
    report = escape(ui_text(N_("Report a problem on this page"), lang))
    return f' · <a href="{escape(url)}">{report}</a>'


def references_page(references: str, items: list[Chapter], edition: Edition = Edition()) -> str:
    lang, heading = edition.lang, ui_text(N_("References"), edition.lang)
    body = f"<h1>{escape(heading)}</h1>\n{markdown_to_html(references)}"
    title = ui_text(N_("References · {series}"), lang).format(series=ui_text(SERIES, lang))
    return _plain_page(
        title,
        _nav(items, "references", lang, edition.switch),
        body,
        lang,
        edition.switch.head("references.html"),
    )


def chapter_links(ch: Chapter, repo: Repo | None, edition: Edition = Edition()) -> str:
    """The line at the top of a chapter's page: its deck, its student notebook, Colab and Binder,
    and where to report a problem."""
    lang, slides = edition.lang, edition.t(N_("slides"))
    line = ui_text(
        N_(
            "Present it: {slides} · Run it: {notebook} (the student edition, exercises left for you;"
            " open it in JupyterLab)"
        ),
        lang,
    ).format(
        slides=f'<a href="{edition.slides}{ch.stem}.slides.html">{slides}</a>',
        notebook=f'<a href="notebooks/{ch.stem}.ipynb" download>{ch.stem}.ipynb</a>',
    )
    if repo is not None:
        comma = ui_text(N_(", "), lang)
        line += ui_text(N_(". Run it without installing: {links}"), lang).format(
            links=_launch(repo, ch.stem, lang)[len(comma) :]
        )
    return f'<p class="chapter-links">{line}{_report(repo, ch.page, ch.title, lang)}</p>'


def build_site(
    notebook_dir: Path,
    out_dir: Path,
    slides_dir: Path | None,
    readme: Path,
    repo: Repo | None = None,
    edition: Edition = Edition(),
) -> list[Path]:
    """Write the site into ``out_dir``; return the HTML pages written. With ``repo``, every
    chapter links to its notebook in Colab and in Binder. ``edition`` says the language of the
    notebooks in ``notebook_dir`` and of ``readme``, and where the pages in other languages are
    (:func:`build_editions` builds them all)."""
    import nbformat

    lang = edition.lang
    root = readme.parent
    sections = site_sections(readme.read_text(encoding="utf-8"), lang)
    references = references_markdown(root)
    ui = template_text(lang)  # fails on a missing translation before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    shown = {name: for_the_site(text, readme.name, root, out_dir, repo) for name, text in sections.items()}
    paths = sorted(notebook_dir.glob("*.ipynb"))
    items = chapters(paths, readme_summaries(sections[NOTEBOOK_TABLE]))
    pages = [out_dir / "index.html", out_dir / "references.html", out_dir / search.PAGE]
    pages[0].write_text(home_page(shown, items, repo, edition), encoding="utf-8")
    refs = for_the_site(references, REFERENCES, root, out_dir, repo)
    pages[1].write_text(references_page(refs, items, edition), encoding="utf-8")
    pages[2].write_text(search_page(items, edition), encoding="utf-8")
    entries: list[dict[str, str]] = []
    exp = exporter("html", "attn-page", lang)
    for i, (path, ch) in enumerate(zip(paths, items, strict=True)):
        nb = site_notebook(nbformat.read(path, as_version=4), lang)
        nb["metadata"]["title"] = ch.title  # the page's <title>, in its language
        resources = {
            "metadata": {"name": ch.title, "path": str(path.parent)},
            "series_nav": _nav(items, ch.stem, lang, edition.switch),
            "pager": _pager(items, i, lang),
            "licence_footer": licence_footer(lang),
            "alternates": edition.switch.head(ch.page),
            "ui": ui,
            "chapter_links": chapter_links(ch, repo, edition),
        }
        html, _ = exp.from_notebook_node(nbformat.from_dict(nb), resources=resources)
        html = scrolling_tables(html, lang)
        (out_dir / ch.page).write_text(html, encoding="utf-8")
        pages.append(out_dir / ch.page)
        entries += search.page_sections(html, ch.page, ch.title)
    search.write_index(out_dir, entries)
    # What a reader downloads is the student edition, the very file `make student` writes.
    (out_dir / "notebooks").mkdir(exist_ok=True)
    for path in paths:
        (out_dir / "notebooks" / path.name).write_text(student_text(path, lang), encoding="utf-8")
    if slides_dir is not None and slides_dir.exists():
        shutil.rmtree(out_dir / "slides", ignore_errors=True)
        shutil.copytree(slides_dir, out_dir / "slides")
    (out_dir / ".nojekyll").write_text("")
    return pages


def build_editions(
    notebook_dir: Path,
    out_dir: Path,
    slides_dir: Path | None,
    readme: Path,
    repo: Repo | None = None,
    langs: list[str] | tuple[str, ...] = (),
    translated: dict[str, Path] | None = None,
) -> list[Path]:
    """The English site into ``out_dir`` and a copy in each of ``langs`` into its folder under it
    (:data:`EDITION_FOLDERS`), every page with a switch to its counterparts; the pages written.

    The notebooks of a translation are ``translated[lang]`` where given (a folder of them, e.g.
    ``build/zh``), else those that ``tools.i18n.build`` writes into a temporary folder from the
    catalogues (which must be complete). Its README is :data:`README_FILES` next to ``readme``;
    its pages link to the decks in ``slides/<folder>/`` of the site."""
    unknown = [lang for lang in langs if lang not in EDITION_FOLDERS]
    if unknown:
        raise ValueError(f"expected languages among {sorted(EDITION_FOLDERS)}, got {unknown}")
    folders = {lang: EDITION_FOLDERS[lang] for lang in langs}
    for lang in langs:
        if not (readme.parent / README_FILES[lang]).is_file():
            raise SiteSourceError(f"{README_FILES[lang]} is missing: the {lang} site's index.html shows it")
    with contextlib.ExitStack() as stack:
        sources = dict(translated or {})
        for lang in langs:  # translate first: a catalogue that cannot stops the build before it writes
            if lang not in sources:
                from .i18n import build

                tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"site-{lang}-")))
                build(sorted(notebook_dir.glob("*.ipynb")), tmp, lang)
                sources[lang] = tmp
        english = Edition(switch=Switch(ENGLISH, tuple((lang, f"{folders[lang]}/") for lang in langs)))
        pages = build_site(notebook_dir, out_dir, slides_dir, readme, repo, english)
        for lang in langs:
            others = ((ENGLISH, "../"), *((o, f"../{folders[o]}/") for o in langs if o != lang))
            edition = Edition(lang, f"../slides/{folders[lang]}/", Switch(lang, others))
            source = readme.parent / README_FILES[lang]
            pages += build_site(sources[lang], out_dir / folders[lang], None, source, repo, edition)
    return pages


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.site", description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", type=Path, default=Path("notebooks"))
    parser.add_argument("target", nargs="?", type=Path, default=Path("build/site"))
    parser.add_argument("slides", nargs="?", type=Path, default=Path("build/slides"))
    parser.add_argument(
        "--lang",
        action="append",
        default=[],
        choices=sorted(EDITION_FOLDERS),
        help="also build the site in this language, into OUT_DIR/<folder>/ (repeatable)",
    )
    repo_argument(parser)
    args = parser.parse_args(argv)
    source, target = args.source, args.target
    readme = source.resolve().parent / "README.md"
    repo = find_repo(None, readme.parent, slug=args.repo)
    from .i18n import CatalogueError

    try:
        pages = build_editions(source, target, args.slides, readme, repo, args.lang)
    except (SiteSourceError, CatalogueError) as err:
        print(f"tools.site: {err}", file=sys.stderr)
        return 1
    links = f"Colab and Binder links to {repo.slug}" if repo else "no Colab or Binder links (address unknown)"
    print(f"wrote {len(pages)} pages into {target} ({links}); open {target / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

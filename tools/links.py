"""Open-in-Colab and open-in-Binder links, and where a notebook installs attnlib from.

Usage: ``python -m tools.links [--repo OWNER/NAME] [--branch BRANCH]`` (``make links``), and
``python -m tools.links --lang zh_CN build/zh`` for a translated edition's notebooks (after ``make zh``).

The links come from the repository's address on GitHub, never from a placeholder:
``--repo`` (``make links REPO=OWNER/NAME``), else ``GITHUB_REPOSITORY`` (set in GitHub Actions),
else the git remote ``origin`` (``https://github.com/OWNER/NAME.git`` or
``git@github.com:OWNER/NAME.git``): :func:`find_repo`, which ``tools.site`` (``make site``)
uses the same way. With an address,
this writes, and on a second run refreshes (the links open the *student edition*, which
``.github/workflows/student-edition.yml`` publishes on the branch ``student-edition``):

- README.md, section "The notebooks": a last column with each notebook's two links;
- each notebook's first markdown cell: one line with its two links;
- each notebook's first code cell: the set-up lines at its top (:func:`bootstrap`), which
  install attnlib from ``git+https://github.com/OWNER/NAME@BRANCH`` where it is not installed.

It changes nothing else. With no address known it changes no file at all, and says so. The
site builder (``tools.site``) adds the same links to every page when it knows the address.

**Translated editions.** The Chinese student edition lies next to the English one, in the folder
``student-zh/`` of the same branch (:data:`EDITION_FOLDERS`). ``make links`` also rewrites
README.zh-CN.md from README.md and its catalogue (:mod:`tools.readme_i18n`), whose notebook table
then links to the Chinese edition; ``--lang zh_CN DIR`` writes into the first markdown cell of each
notebook in ``DIR`` (the translated notebooks of ``make zh``) the links to its Chinese student
edition, in place of the English ones it was translated with. The link words come from
``locale/<lang>/site.po`` (:mod:`tools.ui`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from .student import ENGLISH, N_
from .student import text as ui_text

ROOT = Path(__file__).resolve().parent.parent
# The remote forms git prints: https (with or without a user) and ssh (scp-like or URL).
_REMOTE = re.compile(
    r"^(?:https://(?:[^@/]+@)?github\.com/|ssh://git@github\.com/|git@github\.com:)"
    r"(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$"
)
_LINKS_LINE = re.compile(r"^.*\]\(https://colab\.research\.google\.com/github/.*$\n?", re.M)
_BOOTSTRAP_FIRST = "# Where attnlib is not installed"  # how the set-up lines begin


# The links open the student edition: `make student`'s copy of every notebook, with the exercises
# left to the student. .github/workflows/student-edition.yml publishes it on every push to main as
# the branch EDITION_BRANCH: main's files plus the folder EDITION_FOLDER, so that Binder can build
# the environment from that branch and Colab can open a notebook from it.
EDITION_BRANCH, EDITION_FOLDER = "student-edition", "student"
#: Each edition's folder on that branch, by language (`make student STUDENT_LANG=zh_CN` writes student-zh/).
EDITION_FOLDERS = {ENGLISH: EDITION_FOLDER, "zh_CN": "student-zh"}
OPEN_IN_COLAB, OPEN_IN_BINDER = N_("Open in Colab"), N_("Open in Binder")
#: The head of the table's last column (README.md and its translations).
RUN_IT = N_("run it without installing")
# README.md's section that holds the notebook table (`## The notebooks`); tools.site reads it too.
NOTEBOOK_TABLE = "The notebooks"


@dataclass(frozen=True)
class Repo:
    """A GitHub repository, the branch attnlib is installed from, and where the links point."""

    owner: str
    name: str
    branch: str = "main"
    edition_branch: str = EDITION_BRANCH

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def pip_source(self) -> str:
        """What ``pip install`` takes to install attnlib from this repository."""
        return f"git+https://github.com/{self.slug}@{self.branch}"

    def student_path(self, path: str, lang: str = ENGLISH) -> str:
        """Where the student edition in ``lang`` of notebook ``path`` (e.g. ``notebooks/03_masking.ipynb``)
        lies."""
        return f"{edition_folder(lang)}/{Path(path).name}"

    def colab(self, path: str, lang: str = ENGLISH) -> str:
        """Colab opens a notebook straight from GitHub: ``/github/OWNER/NAME/blob/BRANCH/PATH``.

        ``path`` is the notebook's path in the repository; the link opens its student edition
        (in ``lang``).
        """
        where = self.student_path(path, lang)
        return f"https://colab.research.google.com/github/{self.slug}/blob/{self.edition_branch}/{where}"

    def binder(self, path: str, lang: str = ENGLISH) -> str:
        """mybinder.org builds the branch's environment and opens the student edition of ``path``."""
        labpath = quote(self.student_path(path, lang), safe="")
        return f"https://mybinder.org/v2/gh/{self.slug}/{self.edition_branch}?labpath={labpath}"

    def links(self, path: str, lang: str = ENGLISH) -> str:
        """The two links to the student edition in ``lang`` of notebook ``path``, as one line of
        Markdown, its words in ``lang``."""
        colab, binder = ui_text(OPEN_IN_COLAB, lang), ui_text(OPEN_IN_BINDER, lang)
        return f"[{colab}]({self.colab(path, lang)}) · [{binder}]({self.binder(path, lang)})"


def edition_folder(lang: str) -> str:
    """The folder of the student edition in ``lang`` on the branch :data:`EDITION_BRANCH`."""
    if lang not in EDITION_FOLDERS:
        raise ValueError(
            f"expected a language with a student edition, one of {sorted(EDITION_FOLDERS)}, got {lang!r}"
        )
    return EDITION_FOLDERS[lang]


def parse_remote(url: str) -> tuple[str, str] | None:
    """``(owner, name)`` from a GitHub remote URL (https or ssh form), or None for any other."""
    match = _REMOTE.match(url.strip())
    return (match["owner"], match["name"]) if match else None


_SLUG = re.compile(r"[\w.-]+/[\w.-]+")


def find_repo(
    env: dict[str, str] | None = None, root: Path = ROOT, branch: str = "main", slug: str | None = None
) -> Repo | None:
    """The repository's address: ``slug`` (``OWNER/NAME``, from ``--repo``, i.e. ``REPO=`` of
    ``make links`` and ``make site``), else ``GITHUB_REPOSITORY`` in ``env``, else git's remote
    ``origin``; None where none is known."""
    if slug is not None:
        return Repo(*repo_slug(slug).split("/"), branch)
    env = os.environ if env is None else env
    slug = env.get("GITHUB_REPOSITORY", "")
    if _SLUG.fullmatch(slug):
        owner, name = slug.split("/")
        return Repo(owner, name, branch)
    try:
        url = subprocess.run(
            ["git", "remote", "get-url", "origin"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = parse_remote(url)
    return Repo(*found, branch) if found else None


def repo_slug(text: str) -> str:
    """``OWNER/NAME`` as given, or ValueError: a mistyped ``REPO=`` must not fall back to another address."""
    if not _SLUG.fullmatch(text):
        raise ValueError(f"expected the repository as OWNER/NAME (REPO=someone/series), got {text!r}")
    return text


def repo_argument(parser) -> None:
    """``--repo OWNER/NAME``, as ``tools.links`` and ``tools.site`` both take it."""
    parser.add_argument(
        "--repo",
        type=repo_slug,
        metavar="OWNER/NAME",
        help="the repository on GitHub (default: GITHUB_REPOSITORY, else git's remote origin)",
    )


def bootstrap(repo: Repo | None) -> str:
    """The lines at the top of every notebook's first code cell.

    Where attnlib is installed (``make lab``, ``make test``, Binder) they do nothing and print
    nothing. Elsewhere (Colab, a fresh Python) they install attnlib without its dependencies,
    so that the platform's own torch stays, then the notebooks' extras that are missing (pip
    leaves installed ones as they are). ``ATTNLIB_SOURCE`` (a path or a git URL) overrides the
    repository's address; with no address known, they ask for one.
    """
    head = (
        "# Where attnlib is not installed (Colab, say), install it first, keeping the platform's torch.\n"
        "import importlib.util, os\n"
        'if importlib.util.find_spec("attnlib") is None:\n'
    )
    if repo is None:
        source = (
            '    source = os.environ.get("ATTNLIB_SOURCE")  # a path or git URL of the series\' repository\n'
            "    if not source:\n"
            '        raise ModuleNotFoundError("attnlib is not installed: run  %pip install --no-deps '
            '<path or git URL of the repository>  or set ATTNLIB_SOURCE to it, then run this cell again")\n'
        )
    else:
        source = f'    source = os.environ.get("ATTNLIB_SOURCE", "{repo.pip_source}")\n'
    tail = (
        "    %pip install --quiet --no-deps {source}\n"
        "    %pip install --quiet matplotlib ipywidgets tqdm scikit-learn\n"
    )
    return head + source + tail


def without_bootstrap(code: str) -> str:
    """A first code cell without its set-up lines (the decks leave them out)."""
    if code.startswith(_BOOTSTRAP_FIRST):
        return code.split("\n\n", 1)[1] if "\n\n" in code else ""
    return code


def with_bootstrap(code: str, repo: Repo | None) -> str:
    """A first code cell with the set-up lines at its top, written or refreshed."""
    return bootstrap(repo) + "\n" + without_bootstrap(code)


def with_links(markdown: str, repo: Repo | None, path: str, lang: str = ENGLISH) -> str:
    """A first markdown cell whose last line holds the notebook's links to its student edition in
    ``lang`` (none without ``repo``); any links line it had, in any language, goes."""
    text = _LINKS_LINE.sub("", markdown).rstrip("\n")
    return f"{text}\n\n{repo.links(path, lang)}" if repo else text


# The table's rows: the head "| # | <notebook> | <what you learn> |", its rule, "| 03 | `03_masking` | ... |".
_HEAD_ROW = re.compile(r"^(\|\s*#\s*\|[^|]*\|[^|]*\|)")
_NOTEBOOK_ROW = re.compile(r"^(\|\s*\d+\s*\|\s*`([^`]+)`\s*\|[^|]*\|)")


def _table_span(readme: str, section: str) -> tuple[int, int]:
    start = readme.find(f"\n## {section}\n")
    if start < 0:
        raise ValueError(f'the README has no section "## {section}", whose table gets the links')
    end = readme.find("\n## ", start + 1)
    return start, len(readme) if end < 0 else end


def with_readme_links(
    readme: str, repo: Repo, folder: str = "notebooks", lang: str = ENGLISH, section: str = NOTEBOOK_TABLE
) -> str:
    """README with a last column of links (to the student edition in ``lang``) in the table of
    ``section`` ("The notebooks"; the translated README names it in its language)."""
    start, end = _table_span(readme, section)
    out = []
    for line in without_readme_links(readme[start:end], section="").split("\n"):
        if head := _HEAD_ROW.match(line):
            line = f"{head[1]} {ui_text(RUN_IT, lang)} |"
        elif re.fullmatch(r"\|(-+\|){3}", line):
            line = "|---|---|---|---|"
        elif row := _NOTEBOOK_ROW.match(line):
            line = f"{row[1]} {repo.links(f'{folder}/{row[2]}.ipynb', lang)} |"
        out.append(line)
    return readme[:start] + "\n".join(out) + readme[end:]


def without_readme_links(readme: str, section: str = NOTEBOOK_TABLE) -> str:
    """README without the column of links that :func:`with_readme_links` adds (as before ``make
    links``); ``section=""`` takes ``readme`` as the section itself."""
    start, end = _table_span(readme, section) if section else (0, len(readme))
    out = []
    for line in readme[start:end].split("\n"):
        if _HEAD_ROW.match(line) or _NOTEBOOK_ROW.match(line):
            cells = re.match(r"^(\|[^|]*\|[^|]*\|[^|]*\|)(.*)$", line)
            line = cells[1] if cells[2].strip() else line
        elif re.fullmatch(r"\|(-+\|){4}", line):
            line = "|---|---|---|"
        out.append(line)
    return readme[:start] + "\n".join(out) + readme[end:]


def readme_repo(readme: str) -> Repo | None:
    """The repository that README's links point at (None where it has none): what a translated
    README links to, so that it follows README.md without being told the address again."""
    found = re.search(
        r"https://colab\.research\.google\.com/github/([\w.-]+)/([\w.-]+)/blob/([\w./-]+?)/", readme
    )
    return Repo(found[1], found[2], edition_branch=found[3]) if found else None


def _first(cells: list, kind: str) -> dict:
    return next(c for c in cells if c["cell_type"] == kind)


def update_notebook(path: Path, repo: Repo | None, root: Path = ROOT, lang: str = ENGLISH) -> bool:
    """Write or refresh one notebook's set-up lines and links (to its student edition in ``lang``);
    True if it changed. A translated notebook gets its links only: its code is the English
    notebook's, set-up lines included, byte for byte."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    markdown, code = _first(nb.cells, "markdown"), _first(nb.cells, "code")
    path = Path(path).resolve()
    relative = (
        path.relative_to(root.resolve()).as_posix() if path.is_relative_to(root.resolve()) else path.name
    )
    new_markdown = with_links(markdown.source, repo, relative, lang)
    new_code = with_bootstrap(code.source, repo) if lang == ENGLISH else code.source
    if (new_markdown, new_code) == (markdown.source, code.source):
        return False
    markdown.source, code.source = new_markdown, new_code
    nbformat.write(nb, path)
    return True


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.links", description=__doc__.split("\n")[0])
    repo_argument(parser)
    parser.add_argument(
        "--branch",
        default="main",
        help=(
            "the branch the set-up lines install attnlib from (default: main); "
            "the links always open the student edition, on the branch student-edition"
        ),
    )
    parser.add_argument(
        "--lang",
        default=ENGLISH,
        help="a translated edition (zh_CN): write its links into the notebooks of the folders named",
    )
    parser.add_argument(
        "folders", nargs="*", type=Path, help="with --lang: the translated notebooks (build/zh)"
    )
    args = parser.parse_args(argv)
    if (args.lang != ENGLISH) != bool(args.folders):
        parser.error("--lang zh_CN takes the folder of that edition's notebooks (build/zh), and only it does")
    edition_folder(args.lang)  # a language without an edition is an error before anything is written
    repo = find_repo(None, ROOT, args.branch, args.repo)
    if repo is None:
        # Writing "no address" would strip links that an earlier run wrote: leave every file alone.
        print(
            "no repository address known (no REPO=OWNER/NAME, no GITHUB_REPOSITORY, no GitHub remote"
            " 'origin'): nothing written, every file left as it was. Run  make links REPO=OWNER/NAME"
        )
        return 0
    if args.lang != ENGLISH:
        paths = [p for folder in args.folders for p in sorted(folder.glob("*.ipynb"))]
        if not paths:
            parser.error(f"expected notebooks in {', '.join(map(str, args.folders))}, got none (run make zh)")
        changed = [p.name for p in paths if update_notebook(p, repo, ROOT, args.lang)]
        print(f"links to {repo.slug}, {edition_folder(args.lang)}/")
        print(f"updated: {', '.join(changed)}" if changed else "nothing to change")
        return 0
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = with_readme_links(text, repo)  # before any notebook changes: README may lack the table
    changed = [p.name for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if update_notebook(p, repo)]
    if new != text:
        readme.write_text(new, encoding="utf-8")
        changed.append("README.md")
    from . import i18n, readme_i18n  # Babel: the translated READMEs follow README.md, links included

    try:
        changed += readme_i18n.write_all()
    except i18n.CatalogueError as error:
        print(f"links to {repo.slug}@{repo.branch}; updated: {', '.join(changed) or 'nothing'}")
        print(f"the translated READMEs were not rewritten: {error}", file=sys.stderr)
        return 1
    print(f"links to {repo.slug}@{repo.branch}")
    print(f"updated: {', '.join(changed)}" if changed else "nothing to change")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

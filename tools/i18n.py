"""Translations of the notebooks: one gettext catalogue per notebook, and the edition built from them.

Usage (``make po`` and ``make zh`` run the first two; docs/translation.md is the maintainer's page)::

    python -m tools.i18n po [--lang zh_CN] [--locale-dir locale] [NB ...]
    python -m tools.i18n build --lang zh_CN --out build/zh [--locale-dir locale] [NB ...]
    python -m tools.i18n status [--lang zh_CN] [--locale-dir locale] [NB ...]
    python -m tools.i18n execute build/zh

``NB`` is a notebook or a folder of them (default: ``notebooks``). The catalogue of
``notebooks/03_masking.ipynb`` is ``locale/zh_CN/notebooks/03_masking.po``.

**Units.** Each markdown cell is cut into units (:func:`split_markdown`): a heading, a paragraph
(consecutive non-blank lines, its line breaks kept), a list item with its continuation lines, a
table row. Blank lines, table rules (``|---|``), fenced code, display maths (``$$ ... $$`` on
lines of their own) and units with no word outside formulas, code spans, link targets and HTML
tags pass through untouched. A heading's ``#``s, a list item's marker and the indentation of its
continuation lines are not part of the unit either. A code cell's caption (``metadata.caption``:
the figure's alt text and caption on the site and in the decks) is one unit too. The code of
code cells is never a unit.

**Entries.** One per unit: ``msgctxt`` is the cell id (``<id>#alt`` for a caption, and
``<id>#2``, ``<id>#3`` ... for the second and later units of a cell whose English is the same
as an earlier one's), so that the same sentence in two cells is two entries and a one-word
change in English invalidates one entry, not a whole cell. Babel (``babel.messages``) reads,
updates and writes the catalogues: it is pinned already, as a dependency of Sphinx.

- ``po`` creates or updates catalogues: a new unit gets an empty entry, a changed one keeps its
  translation marked fuzzy with the previous English (``#| msgid``), a removed one that had a
  translation becomes obsolete (``#~``). A notebook named by its file gets a catalogue if it has
  none; a folder (or none named: ``notebooks/``) updates only the catalogues that exist.
- ``build`` writes each notebook with every unit translated: code, outputs, cell ids and metadata
  as in the English (a caption translated). It refuses, listing the units, when an entry is
  missing, untranslated, fuzzy, or fails :func:`check_translation`; it never writes into
  ``notebooks/``.
- ``status`` prints a Markdown table: per notebook its units and how many are translated, fuzzy
  and untranslated.
- ``execute`` runs translated notebooks top to bottom in place, from ``notebooks/``'s folder, and
  names the cells whose outputs differ from the English run's (the language-dependent ones).

The built edition differs from the English in one code line: its set-up cell sets attnlib's
feedback language (:func:`with_language`).
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import mistune
import nbformat
from babel.messages import Catalog
from babel.messages.pofile import denormalize, generate_po, normalize, read_po

from tools.publish import join_cjk_lines

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LOCALE_DIR = ROOT / "locale"
DEFAULT_LANG = "zh_CN"
ALT = "alt"  # msgctxt suffix of a code cell's caption
HEADER = (
    "Translation of {notebook}, one entry per unit of its markdown cells and captions.\n"
    "Written by `python -m tools.i18n po` (make po); docs/translation.md says how to translate it.\n"
    "Licensed as the notebooks' prose: LICENSE-content.md."
)

# --- units --------------------------------------------------------------------------------------

_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
_DISPLAY_MATH = re.compile(r"\s*\$\$")
_HEADING = re.compile(r"\s{0,3}#{1,6}[ \t]+")
_ITEM = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])[ \t]+(?=\S)")
_TABLE_ROW = re.compile(r"\s*\|")
_TABLE_RULE = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
_LINES = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True)
class Piece:
    """One unit of a markdown cell as it sits in the cell: ``text`` is its English (the msgid),
    and every line after the first is indented by ``indent`` in the cell."""

    kind: str  # "heading", "paragraph", "list item", "table row"
    text: str
    indent: str = ""

    def render(self, text: str) -> str:
        """``text`` (this unit or its translation) as it goes back into the cell."""
        first, *rest = text.split("\n")
        return first + "".join(f"\n{self.indent}{line}" for line in rest)


def split_markdown(source: str) -> list[str | Piece]:
    """A markdown cell's source as pass-through strings and :class:`Piece` units, in order.

    ``join(split_markdown(s))`` is ``s``, byte for byte (:func:`join`).
    """
    lines = _LINES.findall(source)
    out: list[str | Piece] = []
    i = 0
    while i < len(lines):
        body = lines[i].rstrip("\n")
        if not body.strip() or _TABLE_RULE.fullmatch(body):
            end = i + 1
        elif fence := _FENCE.match(body):
            marker = fence.group(1)
            closing = (j + 1 for j in range(i + 1, len(lines)) if lines[j].strip().startswith(marker))
            end = next(closing, len(lines))
        elif _DISPLAY_MATH.match(body) and (end := _display_math_end(lines, i)):
            pass
        else:
            if heading := _HEADING.match(body):
                kind, prefix, end = "heading", heading.group(0), i + 1
            elif _TABLE_ROW.match(body):
                kind, prefix, end = "table row", body[: len(body) - len(body.lstrip())], i + 1
            else:
                item = _ITEM.match(body)
                kind = "list item" if item else "paragraph"
                prefix = item.group(0) if item else body[: len(body) - len(body.lstrip())]
                end = i + 1
                while end < len(lines) and not _starts_block(lines[end].rstrip("\n"), kind == "list item"):
                    end += 1
            out.extend(_piece(kind, prefix, lines[i:end]))
            i = end
            continue
        out.append("".join(lines[i:end]))
        i = end
    return _merged(out)


def _starts_block(body: str, after_item: bool = False) -> bool:
    """Whether this line ends the paragraph or list item above it. As in CommonMark, a numbered
    line interrupts a paragraph only as "1." or "1)" (a line of a sentence that happens to begin
    "16) = ..." goes on the paragraph); after a list item any numbered item starts the next one."""
    if not body.strip():
        return True
    if item := _ITEM.match(body):
        number = item.group(0).strip().rstrip(".)")
        return after_item or not number.isdigit() or number == "1"
    return any(rule.match(body) for rule in (_FENCE, _DISPLAY_MATH, _HEADING, _TABLE_ROW))


def _display_math_end(lines: list[str], i: int) -> int:
    """The line after a ``$$ ... $$`` block that starts on line ``i``, or 0 where none closes."""
    text = "".join(lines[i:])
    close = text.find("$$", text.index("$$") + 2)
    if close < 0:
        return 0
    return i + text.count("\n", 0, close) + 1


def _piece(kind: str, prefix: str, lines: list[str]) -> list[str | Piece]:
    ending = "\n" if lines[-1].endswith("\n") else ""
    rows = [line.rstrip("\n") for line in lines]
    rest = rows[1:]
    indent = _common_indent(rest)
    text = "\n".join([rows[0][len(prefix) :], *(row[len(indent) :] for row in rest)])
    if not has_words(text):
        return ["".join(lines)]
    return [prefix, Piece(kind, text, indent), ending]


def _common_indent(rows: list[str]) -> str:
    indents = [row[: len(row) - len(row.lstrip())] for row in rows]
    if not indents:
        return ""
    shortest = min(indents, key=len)
    while not all(ind.startswith(shortest) for ind in indents):
        shortest = shortest[:-1]
    return shortest


def _merged(parts: list[str | Piece]) -> list[str | Piece]:
    out: list[str | Piece] = []
    for part in parts:
        if isinstance(part, str) and not part:
            continue
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        else:
            out.append(part)
    return out


def join(parts: list[str | Piece], translations: Iterable[str] | None = None) -> str:
    """The cell's source again, its units replaced by ``translations`` in order (by default by
    their own English)."""
    pieces = [part for part in parts if isinstance(part, Piece)]
    texts = [piece.text for piece in pieces] if translations is None else list(translations)
    if len(texts) != len(pieces):
        raise ValueError(f"expected {len(pieces)} translations, one per unit, got {len(texts)}")
    rendered = iter(piece.render(text) for piece, text in zip(pieces, texts, strict=True))
    return "".join(part if isinstance(part, str) else next(rendered) for part in parts)


@dataclass(frozen=True)
class Unit:
    """One catalogue entry's worth of a notebook: its English and where it sits."""

    cell_id: str
    kind: str  # a Piece's kind, or "alt text"
    msgid: str
    context: str  # the msgctxt: the cell id, "<id>#alt" or "<id>#<n>"


def units_of_cell(cell: dict) -> list[Unit]:
    """The units of one cell, in order: a markdown cell's pieces, a code cell's caption."""
    cell_id = cell.get("id")
    if not cell_id:
        kind = cell["cell_type"]
        raise ValueError(f"expected every cell to have an id (nbformat 4.5), got a {kind} cell without")
    if cell["cell_type"] == "code":
        caption = cell.get("metadata", {}).get("caption")
        return [Unit(cell_id, "alt text", caption, f"{cell_id}#{ALT}")] if caption else []
    if cell["cell_type"] != "markdown":
        return []
    seen: Counter[str] = Counter()
    units = []
    for piece in split_markdown(_source(cell)):
        if isinstance(piece, Piece):
            seen[piece.text] += 1
            n = seen[piece.text]
            units.append(Unit(cell_id, piece.kind, piece.text, cell_id if n == 1 else f"{cell_id}#{n}"))
    return units


def units_of(nb: dict) -> list[Unit]:
    """Every unit of a notebook, in the order of its cells."""
    ids = Counter(cell.get("id") for cell in nb["cells"])
    repeated = sorted(str(cell_id) for cell_id, n in ids.items() if n > 1)
    if repeated:
        raise ValueError(f"expected unique cell ids, got {repeated} more than once")
    return [unit for cell in nb["cells"] for unit in units_of_cell(cell)]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


# --- what must pass through ----------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_DISPLAY = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\])+?\$")
_LINK_TARGET = re.compile(r"\]\(((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?)\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")
_URL = re.compile(r"https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'\"]")
_MARKDOWN = mistune.create_markdown()  # what nbconvert renders markdown cells with
# In this order: what an earlier pattern takes is gone for the later ones (no maths in code spans).
PASS_THROUGH = {
    "code span": _CODE_SPAN,
    "display formula": _DISPLAY,
    "formula": _INLINE_MATH,
    "link target": _LINK_TARGET,
    "HTML tag": _HTML_TAG,
    "URL": _URL,
}


def pass_through(text: str) -> tuple[dict[str, Counter[str]], str]:
    """What of ``text`` must reach the translation unchanged, by kind, and the rest of it."""
    found: dict[str, Counter[str]] = {}
    for kind, pattern in PASS_THROUGH.items():
        group = 1 if kind == "link target" else 0
        found[kind] = Counter(m.group(group) for m in pattern.finditer(text))
        text = pattern.sub(" ", text)
    return found, text


def has_words(text: str) -> bool:
    """Whether ``text`` has a letter outside formulas, code spans, link targets and HTML tags."""
    return re.search(r"[^\W\d_]", pass_through(text)[1]) is not None


_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:[!:][^{}]*)?\}")


def check_translation(msgid: str, msgstr: str, *, placeholders: bool = False) -> list[str]:
    """The problems of a translation, each naming what was expected and what came; [] if none.

    Formulas, code spans, link targets, HTML tags and URLs pass through as in the English (as
    multisets, in any order); a table row keeps its number of cells; a one-line unit stays on
    one line and no translation adds a blank line (either would change the cell's structure);
    and no translation starts or ends with white space that the English does not have. With
    ``placeholders`` (a ``str.format`` template, as attnlib's catalogue holds), every ``{name}``
    passes through too.
    """
    problems = []
    if placeholders:
        want_names, got_names = (Counter(_PLACEHOLDER.findall(text)) for text in (msgid, msgstr))
        if want_names != got_names:
            problems.append(
                f"placeholders: expected {sorted(want_names.elements())}, got {sorted(got_names.elements())}"
            )
    want, want_rest = pass_through(msgid)
    got, got_rest = pass_through(msgstr)
    for kind in PASS_THROUGH:
        missing, extra = want[kind] - got[kind], got[kind] - want[kind]
        if missing or extra:
            problems.append(
                f"{kind}s: expected {list(want[kind].elements())}, got {list(got[kind].elements())}"
            )
    if msgid.lstrip().startswith("|"):
        cells, came = (rest.count("|") - rest.count("\\|") for rest in (want_rest, got_rest))
        if cells != came:
            problems.append(f"table row: expected {cells} '|', got {came}")
    if "\n" not in msgid and "\n" in msgstr:
        problems.append(f"expected one line, got {msgstr.count(chr(10)) + 1}")
    if re.search(r"\n\s*\n", msgstr) and not re.search(r"\n\s*\n", msgid):
        problems.append("expected no blank line (it would end the paragraph), got one")
    for end, name in ((0, "starts"), (-1, "ends")):
        if msgstr and msgstr[end].isspace() and not (msgid and msgid[end].isspace()):
            problems.append(f"expected no white space where the English {name}, got {msgstr[end]!r}")
    if _shown_asterisks(msgstr) > _shown_asterisks(msgid):
        problems.append(
            "expected the bold or italics to render, got literal '*': CommonMark does not close * or "
            "** between full-width punctuation and a letter; put the punctuation or the gloss outside "
            "the markers"
        )
    return problems


def _shown_asterisks(text: str) -> int:
    """How many ``*`` a reader sees in ``text`` rendered as Markdown (by mistune, nbconvert's
    renderer, with CommonMark's rules for emphasis), outside code and formulas."""
    text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", "", _CODE_SPAN.sub("", text), flags=re.S)
    if "*" not in text:
        return 0
    return re.sub(r"<code>.*?</code>", "", _MARKDOWN(text), flags=re.S).count("*")


# --- the glossary ----------------------------------------------------------------------------------

GLOSSARY = ROOT / "docs" / "glossary.md"


@dataclass(frozen=True)
class Term:
    """One row of docs/glossary.md that lists forms to avoid: where ``english`` occurs in a unit,
    its translation uses ``chinese`` and none of ``forbidden``."""

    english: str
    chinese: str
    forbidden: tuple[str, ...]

    @property
    def pattern(self) -> re.Pattern:
        """The English term as a whole phrase: any case, -ise or -ize, a plural -s or -es, and a
        space or hyphen between its words; a parenthesised sense ("memory (the encoder's
        output)") is not part of it."""
        words = re.sub(r"\(.*?\)", "", self.english).split()
        spelled = [
            re.escape(w).replace("is", "i[sz]") if w.endswith(("ise", "isation")) else re.escape(w)
            for w in words
        ]
        return re.compile(r"(?<![\w-])" + r"[\s-]+".join(spelled) + r"(?:s|es)?(?!\w)", re.I)


def glossary_terms(path: Path = GLOSSARY) -> list[Term]:
    """The rows of the glossary's table whose note ends in ``not: X, Y`` (rule 7)."""
    terms = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 3 or cells[0] == "English":
            continue
        if forbidden := re.search(r"not: (.+)$", cells[2]):
            forms = tuple(f.strip().rstrip(".") for f in forbidden.group(1).split(",") if f.strip())
            terms.append(Term(cells[0], cells[1], forms))
    return terms


def glossary_problems(msgid: str, msgstr: str, terms: Iterable[Term]) -> list[str]:
    """Where the English of a unit has a glossary term and its translation uses a form the
    glossary forbids for it (outside code and formulas), one line each naming both."""
    text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", "", _CODE_SPAN.sub("", msgstr), flags=re.S)
    return [
        f"glossary: {term.english!r} is {term.chinese}, not {form}"
        for term in terms
        if term.pattern.search(msgid)
        for form in term.forbidden
        if form in text
    ]


# --- catalogues ----------------------------------------------------------------------------------


def catalogue_path(notebook: Path, lang: str = DEFAULT_LANG, locale_dir: Path = LOCALE_DIR) -> Path:
    """Where the catalogue of ``notebook`` lives: ``<locale_dir>/<lang>/notebooks/<stem>.po``."""
    return Path(locale_dir) / lang / "notebooks" / f"{Path(notebook).stem}.po"


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def new_catalogue(lang: str, project: str, header: str) -> Catalog:
    """An empty catalogue of ``lang`` dated now, ``header`` as its comment: every catalogue's start
    (the notebooks', README's, site.po and attnlib.po)."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    return Catalog(
        locale=lang,
        project=project,
        header_comment="\n".join(f"# {line}" for line in header.splitlines()),
        creation_date=now,
        revision_date=now,
        fuzzy=False,
    )


def merge_into(path: Path, fresh: Catalog) -> None:
    """Write ``fresh`` (every unit, untranslated) to ``path``, or update the catalogue there with it
    (Babel's ``Catalog.update``): translations kept, a changed entry fuzzy, one whose English is
    gone obsolete if it had a translation; an obsolete entry whose English is back is dropped."""
    if not Path(path).exists():
        write_catalogue(fresh, path)
        return
    catalog = read_catalogue(path)
    before = {(m.id, m.context): m for m in catalog if m.id}
    catalog.update(fresh, update_creation_date=False)
    for message in catalog:
        # Catalog.update forgets the previous English of an entry that was fuzzy already
        old = before.get((message.id, message.context))
        if message.id and message.fuzzy and not message.previous_id and old is not None:
            message.previous_id = old.previous_id
    current = {(m.id, m.context) for m in catalog if m.id}
    for key, message in list(catalog.obsolete.items()):
        if not message.string or (message.id, message.context) in current:
            del catalog.obsolete[key]
    write_catalogue(catalog, path)


def add_translations_to(path: Path, translations: dict[str, str], how_to_add: str) -> None:
    """Write ``translations`` (English -> translation) into the catalogue at ``path`` under its
    lock (:class:`Locked`). English it has no entry for is a KeyError (``how_to_add`` says how to
    give it one), and a translation that fails :func:`check_translation` (placeholders included)
    a ValueError, both naming the strings; nothing is written then."""
    with Locked(path):
        catalog = read_catalogue(path)
        unknown = [english for english in translations if catalog.get(english) is None]
        if unknown:
            raise KeyError(f"{Path(path).name} has no entry for {unknown!r}: {how_to_add}")
        broken = {
            english: problems
            for english, translated in translations.items()
            if (problems := check_translation(english, translated, placeholders=True))
        }
        if broken:
            raise ValueError(f"expected translations that keep what must pass through, got {broken!r}")
        for english, translated in translations.items():
            message = catalog.get(english)
            message.string = translated
            message.flags.discard("fuzzy")
        write_catalogue(catalog, path)


class Locked:
    """An exclusive lock on ``<catalogue>.po.lock`` for the duration of a ``with`` block, so that
    writers at once (helpers translating in parallel) keep each other's entries. The lock file
    stays: removing it would let two writers lock two files."""

    def __init__(self, path: Path):
        self.lock = Path(path).with_suffix(".po.lock")

    def __enter__(self) -> Locked:
        import fcntl

        self.lock.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.lock, "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def template(notebook: Path, lang: str = DEFAULT_LANG) -> Catalog:
    """A catalogue of the notebook's units with empty translations, in the notebook's order."""
    nb = nbformat.read(notebook, as_version=4)
    shown = _shown(notebook)
    catalog = new_catalogue(lang, shown, HEADER.format(notebook=shown))
    for unit in units_of(nb):
        catalog.add(
            unit.msgid,
            "",
            locations=[(shown, None)],
            auto_comments=[f"cell {unit.cell_id}, {unit.kind}"],
            context=unit.context,
        )
    return catalog


def read_catalogue(path: Path) -> Catalog:
    """Read a catalogue, with the previous English of its fuzzy entries (``#| msgid``), which
    Babel's ``read_po`` keeps as translator comments (python-babel/babel#206)."""
    with open(path, "rb") as f:
        catalog = read_po(f, abort_invalid=True)
    for message in [*catalog, *catalog.obsolete.values()]:
        previous = [c for c in message.user_comments if c.startswith("|")]
        if previous:
            message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
            message.previous_id = _previous_msgid([c[1:].strip() for c in previous])
    return catalog


def _previous_msgid(lines: list[str]) -> list[str]:
    """The msgid of ``#|`` lines (``msgid ""``, then ``"..."`` lines), decoded by Babel."""
    fields: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith('"') and fields:
            fields[next(reversed(fields))].append(line)
        else:
            keyword, _, value = line.partition(" ")
            fields[keyword] = [value]
    return [denormalize("\n".join(fields["msgid"]))] if "msgid" in fields else []


def write_catalogue(catalog: Catalog, path: Path) -> None:
    """Write a catalogue as ``po`` does: no re-wrapping (lines break where the English does), no
    line numbers (cells move; their ids do not), and a fuzzy entry's previous English as GNU
    gettext writes it, one ``#|`` line per line (Babel's ``include_previous`` folds a multi-line
    msgid into one comment that gettext's tools cannot read)."""
    pending = iter([m for m in catalog if m.id])
    out = []
    for chunk in generate_po(catalog, width=0, include_lineno=False):
        if chunk.startswith("msgctxt "):  # the first line of the next (not obsolete) entry
            message = next(pending)
            if chunk != f"msgctxt {normalize(message.context, width=0)}\n":
                raise RuntimeError(f"expected Babel to write {message.context!r} next, got {chunk!r}")
            if message.previous_id:
                out.append(f"#| msgid {normalize(message.previous_id[0], prefix='#| ', width=0)}\n")
        out.append(chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(out).encode(catalog.charset))


def update_catalogue(notebook: Path, lang: str = DEFAULT_LANG, locale_dir: Path = LOCALE_DIR) -> Path:
    """Create or update the catalogue of ``notebook`` (Babel's ``Catalog.update``); its path.

    Translations and translators' comments are kept; a changed unit's entry is fuzzy with the
    previous English; an entry whose unit is gone becomes obsolete if it had a translation (it
    holds nothing worth keeping otherwise).
    """
    path = catalogue_path(notebook, lang, locale_dir)
    merge_into(path, template(notebook, lang))
    return path


@dataclass
class Audit:
    """A notebook's units against its catalogue (``catalogue`` is None where there is none)."""

    notebook: Path
    catalogue: Path | None
    units: list[Unit]
    translated: list[Unit] = field(default_factory=list)
    fuzzy: list[Unit] = field(default_factory=list)
    untranslated: list[Unit] = field(default_factory=list)  # empty translation
    missing: list[Unit] = field(default_factory=list)  # no entry: `po` has not run since the English changed
    broken: list[tuple[Unit, list[str]]] = field(default_factory=list)  # fails check_translation
    stale: list[str] = field(default_factory=list)  # entries of English that is no longer there
    obsolete: list[str] = field(default_factory=list)  # #~ entries

    def problems(self) -> list[str]:
        """What stops the build, one line per unit (untranslated ones included)."""
        if self.catalogue is None:
            shown = _shown(self.notebook)
            return [f"{shown}: no catalogue; `python -m tools.i18n po {shown}` starts one"]
        lines = [f"missing (run `make po`): {_describe(u)}" for u in self.missing]
        lines += [f"untranslated: {_describe(u)}" for u in self.untranslated]
        lines += [f"fuzzy: {_describe(u)}" for u in self.fuzzy]
        lines += [f"{p}: {_describe(u)}" for u, problems in self.broken for p in problems]
        return [f"{_shown(self.catalogue)}: {line}" for line in lines]

    def out_of_step(self) -> list[str]:
        """What the sync test fails on: an entry missing, fuzzy, broken, left from English that is
        gone, or obsolete. Untranslated entries are not (a catalogue in progress)."""
        if self.catalogue is None:
            return []
        lines = [f"no entry (run `make po`): {_describe(u)}" for u in self.missing]
        lines += [f"fuzzy (the English changed): {_describe(u)}" for u in self.fuzzy]
        lines += [f"{p}: {_describe(u)}" for u, problems in self.broken for p in problems]
        lines += [f"entry for English that is gone (run `make po`): {s}" for s in self.stale]
        lines += [f"obsolete entry (#~): reuse its text, then delete it: {s}" for s in self.obsolete]
        return [f"{_shown(self.catalogue)}: {line}" for line in lines]


def _describe(unit: Unit) -> str:
    text = unit.msgid.replace("\n", " ")
    return f"cell {unit.cell_id} ({unit.kind}) {text[:60]!r}{'...' if len(text) > 60 else ''}"


def audit(notebook: Path, lang: str = DEFAULT_LANG, locale_dir: Path = LOCALE_DIR) -> Audit:
    """Check the catalogue of ``notebook`` against its units."""
    units = units_of(nbformat.read(notebook, as_version=4))
    path = catalogue_path(notebook, lang, locale_dir)
    if not path.exists():
        return Audit(Path(notebook), None, units)
    catalog = read_catalogue(path)
    result = Audit(Path(notebook), path, units)
    for unit in units:
        message = catalog.get(unit.msgid, context=unit.context)
        if message is None:
            result.missing.append(unit)
        elif message.fuzzy:
            result.fuzzy.append(unit)
        elif not message.string:
            result.untranslated.append(unit)
        elif problems := check_translation(unit.msgid, message.string):
            result.broken.append((unit, problems))
        else:
            result.translated.append(unit)
    keys = {(u.msgid, u.context) for u in units}
    result.stale = [f"{m.context}: {m.id[:60]!r}" for m in catalog if m.id and (m.id, m.context) not in keys]
    result.obsolete = [f"{m.context}: {m.id[:60]!r}" for m in catalog.obsolete.values()]
    return result


# --- the translated edition ----------------------------------------------------------------------


class CatalogueError(ValueError):
    """A catalogue cannot make a translated notebook: it lacks units, or some fail the checks."""


#: The set-up line every notebook's first code cell ends its imports with; the translated edition
#: adds :data:`SET_LANGUAGE` right after it, so that the checks' feedback is in that language.
SETUP_LINE = "attnlib.reproducible()"
SET_LANGUAGE = 'attnlib.set_language("{lang}")'


def _is_setup_line(line: str) -> bool:
    """``attnlib.reproducible()`` at the start of a line, alone or before a comment."""
    rest = line.removeprefix(SETUP_LINE)
    return rest != line and (not rest.strip() or rest.lstrip().startswith("#"))


def with_language(source: str, lang: str) -> str:
    """``source`` (a set-up cell) with ``attnlib.set_language(lang)`` on the line after
    :data:`SETUP_LINE`: the one code line in which an edition differs from the English."""
    lines = source.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if _is_setup_line(line)), None)
    if at is None:
        raise CatalogueError(
            f"expected the set-up cell to have the line {SETUP_LINE!r}, after which the edition sets "
            f"the feedback language; got a cell without it:\n{source[:300]}"
        )
    return "\n".join([*lines[:at], SET_LANGUAGE.format(lang=lang), *lines[at:]])


def translated_notebook(notebook: Path, catalog: Catalog, lang: str | None = None) -> nbformat.NotebookNode:
    """The notebook with every unit replaced by its translation in ``catalog`` (which must hold
    them all: :func:`audit` first). Code, outputs, ids and metadata stay, a caption translated;
    with ``lang``, the first code cell that calls :data:`SETUP_LINE` also sets attnlib's feedback
    language (:func:`with_language`), and the notebook's metadata records the language."""
    nb = copy.deepcopy(nbformat.read(notebook, as_version=4))
    for cell in nb.cells:
        texts = [catalog.get(unit.msgid, context=unit.context).string for unit in units_of_cell(cell)]
        if cell.cell_type == "markdown":
            # a line break between two CJK characters would show as a space: joined
            cell.source = join(split_markdown(cell.source), [join_cjk_lines(t) for t in texts])
        elif texts:  # a code cell's caption
            cell.metadata["caption"] = texts[0]
    if lang is not None:
        setup = next(
            (c for c in nb.cells if c.cell_type == "code" and any(map(_is_setup_line, c.source.split("\n")))),
            None,
        )
        if setup is None:
            raise CatalogueError(f"{_shown(notebook)}: no code cell has the set-up line {SETUP_LINE!r}")
        setup.source = with_language(setup.source, lang)
        nb.metadata.setdefault("attnlib", {})["language"] = lang
    return nb


def build(
    notebooks: list[Path],
    out: Path,
    lang: str = DEFAULT_LANG,
    locale_dir: Path = LOCALE_DIR,
    feedback: bool = True,
) -> list[Path]:
    """Write each notebook, translated, into ``out``; the paths written. With ``feedback`` (the
    default) each notebook's set-up cell also sets attnlib's feedback language to ``lang``
    (:func:`with_language`; a notebook without a set-up cell is refused).

    Raises:
        CatalogueError: a catalogue is missing, or lacks a unit, or has an untranslated or fuzzy
            entry or one that fails :func:`check_translation`; nothing is written then.
        ValueError: ``out`` is the folder of the English notebooks.
    """
    out = Path(out)
    for notebook in notebooks:
        target = (out / Path(notebook).name).resolve()
        if target.parent == NOTEBOOKS or target == Path(notebook).resolve():
            raise ValueError(f"expected an output folder other than the English notebooks' own, got {out}")
    problems = [line for notebook in notebooks for line in audit(notebook, lang, locale_dir).problems()]
    if problems:
        shown = problems[:40] + ([f"... and {len(problems) - 40} more"] if len(problems) > 40 else [])
        raise CatalogueError(f"{len(problems)} units cannot be translated:\n  " + "\n  ".join(shown))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for notebook in notebooks:
        catalog = read_catalogue(catalogue_path(notebook, lang, locale_dir))
        target = out / Path(notebook).name
        nbformat.write(translated_notebook(notebook, catalog, lang if feedback else None), target)
        written.append(target)
    return written


def _shown_outputs(cell: dict) -> list[str]:
    """A code cell's outputs as text, for comparing two runs: streams joined, each output's text and
    HTML (images by their bytes), execution counts and metadata left out."""
    shown, stream = [], ""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            stream += out.get("text", "")
            continue
        data = out.get("data", {})
        shown.append(
            "".join(str(data.get(k, "")) for k in sorted(data))
            if data
            else f"{out.get('ename', '')}: {out.get('evalue', '')}"
        )
    return [stream, *shown]


def differing_cells(translated: dict, english: dict) -> list[str]:
    """The ids of the code cells whose outputs differ between the two runs (:func:`_shown_outputs`)."""
    english_cells = {c["id"]: c for c in english["cells"] if c["cell_type"] == "code"}
    return [
        c["id"]
        for c in translated["cells"]
        if c["cell_type"] == "code" and _shown_outputs(c) != _shown_outputs(english_cells.get(c["id"], {}))
    ]


def execute(notebooks: list[Path], timeout: int = 600) -> dict[Path, list[str]]:
    """Run each translated notebook top to bottom in place, in a fresh kernel whose working folder
    is ``notebooks/`` (where the English runs: the trained models' cache ``../build/models`` is
    shared, so a model the English run trained is loaded, not trained again); the ids of the code
    cells whose outputs differ from the English notebook's stored ones, per notebook.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell raised (the notebook is not written then).
    """
    from .kernels import notebook_client

    differing = {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        notebook_client(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
        ).execute()
        nbformat.write(nb, path)
        english = NOTEBOOKS / Path(path).name
        if english.exists():
            differing[Path(path)] = differing_cells(nb, nbformat.read(english, as_version=4))
    return differing


# --- status and the command line -----------------------------------------------------------------


def status_table(notebooks: list[Path], lang: str = DEFAULT_LANG, locale_dir: Path = LOCALE_DIR) -> str:
    """Coverage per notebook as a Markdown table (the note's coverage table)."""
    rows = [
        f"| notebook | units | translated | fuzzy | untranslated | % ({lang}) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for notebook in notebooks:
        a = audit(notebook, lang, locale_dir)
        name, n = Path(notebook).stem, len(a.units)
        if a.catalogue is None:
            rows.append(f"| {name} | {n} | no catalogue | | | 0.0 |")
            continue
        rest = len(a.untranslated) + len(a.missing) + len(a.broken)
        pct = 100 * len(a.translated) / n if n else 100.0
        rows.append(f"| {name} | {n} | {len(a.translated)} | {len(a.fuzzy)} | {rest} | {pct:.1f} |")
    return "\n".join(rows) + "\n"


def notebooks_in(paths: list[str]) -> list[Path]:
    """The notebooks named, a folder standing for the notebooks in it (default: ``notebooks/``)."""
    found = []
    for name in paths or [str(NOTEBOOKS)]:
        path = Path(name)
        found += sorted(path.glob("*.ipynb")) if path.is_dir() else [path]
    missing = [str(p) for p in found if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"expected notebooks, got paths that are not files: {missing}")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.i18n", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    helps = {
        "po": "create or update catalogues (a notebook named by its file gets one, others only updates)",
        "build": "write the translated notebooks",
        "status": "units and coverage per notebook, as a Markdown table",
        "execute": "run translated notebooks top to bottom in place (in notebooks/'s folder)",
    }
    for name, text in helps.items():
        command = commands.add_parser(name, help=text)
        command.add_argument("notebooks", nargs="*", metavar="NB", help="notebooks or folders (notebooks)")
        command.add_argument("--lang", default=DEFAULT_LANG, help=f"default: {DEFAULT_LANG}")
        command.add_argument("--locale-dir", type=Path, default=LOCALE_DIR, help="default: locale")
        if name == "build":
            command.add_argument("--out", type=Path, required=True, help="for example build/zh")
    args = parser.parse_args(argv)
    if args.command == "execute":
        if not args.notebooks:
            parser.error("execute: name the translated notebooks or their folder, e.g. build/zh")
        for path, cells in execute(notebooks_in(args.notebooks)).items():
            print(f"ran {path}: outputs differ from the English in {len(cells)} cells {' '.join(cells)}")
        return 0
    notebooks = notebooks_in(args.notebooks)
    if args.command == "po":
        named = {Path(name) for name in args.notebooks if Path(name).is_file()}
        notebooks = [
            nb for nb in notebooks if nb in named or catalogue_path(nb, args.lang, args.locale_dir).exists()
        ]
        if not notebooks:
            print(f"no catalogue under {args.locale_dir / args.lang} yet; name a notebook to start its own")
        for notebook in notebooks:
            print(f"wrote {update_catalogue(notebook, args.lang, args.locale_dir)}")
    elif args.command == "build":
        try:
            written = build(notebooks, args.out, args.lang, args.locale_dir)
        except CatalogueError as error:
            print(f"python -m tools.i18n build: refused. {error}", file=sys.stderr)
            return 1
        print(f"wrote {len(written)} notebooks into {args.out}")
    else:
        print(status_table(notebooks, args.lang, args.locale_dir), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

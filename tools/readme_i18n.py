"""README.md in other languages: a gettext catalogue of its units, and the README written from it.

Usage (docs/translation.md)::

    python -m tools.readme_i18n po [--lang zh_CN]      # create or update locale/zh_CN/README.po
    python -m tools.readme_i18n build [--lang zh_CN]   # write README.zh-CN.md
    python -m tools.readme_i18n check [--lang zh_CN]   # exit 1 if README.zh-CN.md is not what build writes

The units are those of the notebooks' catalogues (:func:`tools.i18n.split_markdown` on the whole
file: headings, paragraphs, list items, table rows; fenced code passes through, so its comments
stay English as code does). ``msgctxt`` is the level-2 section the unit sits in (its English
heading, ``intro`` before the first), with ``#2``, ``#3`` ... for the second and later units of
a section whose English is the same as an earlier one's, so that a paragraph added to one section
leaves every other entry as it was. The catalogue is read, updated and written as the notebooks'
are (:func:`tools.i18n.read_catalogue`, :func:`tools.i18n.write_catalogue`, Babel's ``update``:
a changed unit keeps its translation marked fuzzy, a removed one becomes obsolete).

A translation cannot change a link's target, so three things are handled here:

- a link to a section of README itself (``[student edition](#for-students)``) is rewritten to the
  translated heading's anchor (:func:`anchor`, :data:`HEADINGS`);

- the language line at the very top of README.md (:data:`LANGUAGE_LINES`, which links to the
  translations), replaced in each translation by its own line back to README.md;
- the notebook table's column of Colab and Binder links that ``make links`` writes: the units are
  taken from the table without it (:func:`tools.links.without_readme_links`), and where README.md
  has it, the translation gets the same column linking to the student edition in its language
  (:func:`tools.links.with_readme_links`), so that ``make links`` keeps both in step.

``build`` refuses, listing the units, while an entry is missing, untranslated, fuzzy, or fails
:func:`tools.i18n.check_translation` or the glossary (:func:`tools.i18n.glossary_problems`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from babel.messages import Catalog

from . import i18n, links

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "README.md"
#: Each translation's file, by language.
TARGETS = {"zh_CN": "README.zh-CN.md"}
#: The first line of each README: the English one links to the translations, each translation back.
LANGUAGE_LINES = {
    links.ENGLISH: "**[简体中文](README.zh-CN.md)**",
    "zh_CN": "**[English](README.md)**",
}
#: README.md's level-2 headings and their translations, which the site builder relies on: a
#: translated README must have exactly these (tests/tools/test_readme_i18n.py holds it to them).
HEADINGS = {
    "zh_CN": {
        "Two commands": "两条命令",
        "The notebooks": "笔记本一览",
        "For students": "给学生",
        "For instructors": "给教师",
        "attnlib": "attnlib",
        "For maintainers": "给维护者",
        "Licences and how to cite": "许可与引用",
    }
}
INTRO = "intro"  # the msgctxt of the units before the first level-2 heading
HEADER = (
    "Translation of README.md, one entry per unit (tools/readme_i18n.py).\n"
    "Written by `python -m tools.readme_i18n po`; docs/translation.md says how to translate it.\n"
    "Licensed as README.md: LICENSE-content.md."
)


@dataclass(frozen=True)
class Unit:
    """One entry's worth of README.md: its English and its msgctxt."""

    msgid: str
    context: str
    kind: str


def target_path(lang: str, root: Path = ROOT) -> Path:
    """Where the README in ``lang`` is written (README.zh-CN.md for zh_CN)."""
    if lang not in TARGETS:
        raise ValueError(f"expected a language with a README, one of {sorted(TARGETS)}, got {lang!r}")
    return Path(root) / TARGETS[lang]


def catalogue_path(lang: str, locale_dir: Path = i18n.LOCALE_DIR) -> Path:
    """``<locale_dir>/<lang>/README.po``."""
    return Path(locale_dir) / lang / "README.po"


def english_body(readme: str) -> str:
    """README.md as its units are taken: without its language line (and the blank line after it)
    and without the notebook table's column of links."""
    first = LANGUAGE_LINES[links.ENGLISH]
    if readme.startswith(first + "\n"):
        readme = readme[len(first) + 1 :].lstrip("\n")
    return links.without_readme_links(readme)


def _sections(body: str) -> list[tuple[str, str]]:
    """``body`` cut before each level-2 heading: ``(section name, text)`` in order."""
    out: list[tuple[str, str]] = []
    name, start = INTRO, 0
    offset = 0
    for line in body.splitlines(keepends=True):
        if line.startswith("## "):
            out.append((name, body[start:offset]))
            name, start = line[3:].strip(), offset
        offset += len(line)
    out.append((name, body[start:]))
    return out


def parts_and_units(readme: str) -> tuple[list[list[str | i18n.Piece]], list[Unit]]:
    """The split sections of README.md (:func:`tools.i18n.split_markdown`) and their units in order."""
    parts, units = [], []
    for name, text in _sections(english_body(readme)):
        pieces = i18n.split_markdown(text)
        parts.append(pieces)
        seen: Counter[str] = Counter()
        for piece in pieces:
            if isinstance(piece, i18n.Piece):
                seen[piece.text] += 1
                n = seen[piece.text]
                units.append(Unit(piece.text, name if n == 1 else f"{name}#{n}", piece.kind))
    return parts, units


def units_of(readme: str) -> list[Unit]:
    """The units of README.md (its text), in order."""
    return parts_and_units(readme)[1]


def template(readme: str, lang: str) -> Catalog:
    """A catalogue of README's units with empty translations, in README's order."""
    catalog = i18n.new_catalogue(lang, "README.md", HEADER)
    for unit in units_of(readme):
        catalog.add(
            unit.msgid, "", locations=[("README.md", None)], auto_comments=[unit.kind], context=unit.context
        )
    return catalog


def update_catalogue(lang: str, source: Path = SOURCE, locale_dir: Path = i18n.LOCALE_DIR) -> Path:
    """Create or update the catalogue (as :func:`tools.i18n.update_catalogue` does a notebook's); its path."""
    path = catalogue_path(lang, locale_dir)
    i18n.merge_into(path, template(Path(source).read_text(encoding="utf-8"), lang))
    return path


def problems(readme: str, catalog: Catalog) -> list[str]:
    """What stops the build, one line per unit: no entry, untranslated, fuzzy, a translation that
    fails :func:`tools.i18n.check_translation` or the glossary; and entries for English that is gone."""
    terms = i18n.glossary_terms()
    found = []
    units = units_of(readme)
    for unit in units:
        message = catalog.get(unit.msgid, context=unit.context)
        shown = f"{unit.context}: {unit.msgid[:60]!r}"
        if message is None:
            found.append(f"no entry (run `python -m tools.readme_i18n po`): {shown}")
        elif message.fuzzy:
            found.append(f"fuzzy (the English changed): {shown}")
        elif not message.string:
            found.append(f"untranslated: {shown}")
        else:
            wrong = i18n.check_translation(unit.msgid, message.string)
            wrong += i18n.glossary_problems(unit.msgid, message.string, terms)
            found += [f"{p}: {shown}" for p in wrong]
    keys = {(u.msgid, u.context) for u in units}
    found += [
        f"entry for English that is gone (run `python -m tools.readme_i18n po`): {m.context}: {m.id[:60]!r}"
        for m in catalog
        if m.id and (m.id, m.context) not in keys
    ]
    return found


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens
    (``"For students"`` -> ``"for-students"``, ``"给学生"`` -> ``"给学生"``)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def with_anchors(text: str, lang: str) -> str:
    """``text`` with its links to README's own sections (``](#for-students)``) pointing at the
    headings of the README in ``lang``."""
    for english, heading in HEADINGS[lang].items():
        text = text.replace(f"](#{anchor(english)})", f"](#{anchor(heading)})")
    return text


def translated(readme: str, catalog: Catalog, lang: str) -> str:
    """README in ``lang`` from README.md's text and the catalogue (which must be complete:
    :func:`problems` first)."""
    parts, _ = parts_and_units(readme)
    out = []
    for pieces, (name, _text) in zip(parts, _sections(english_body(readme)), strict=True):
        seen: Counter[str] = Counter()
        texts = []
        for piece in pieces:
            if isinstance(piece, i18n.Piece):
                seen[piece.text] += 1
                context = name if seen[piece.text] == 1 else f"{name}#{seen[piece.text]}"
                texts.append(catalog.get(piece.text, context=context).string)
        out.append(i18n.join(pieces, texts))
    text = with_anchors(f"{LANGUAGE_LINES[lang]}\n\n{''.join(out)}", lang)
    repo = links.readme_repo(readme)
    if repo is not None:
        text = links.with_readme_links(text, repo, lang=lang, section=HEADINGS[lang][links.NOTEBOOK_TABLE])
    return text


def build(lang: str, root: Path = ROOT, locale_dir: Path = i18n.LOCALE_DIR) -> str:
    """The README in ``lang`` as :func:`write` writes it.

    Raises:
        tools.i18n.CatalogueError: the catalogue is missing or incomplete; its lines name the units.
    """
    readme = (Path(root) / "README.md").read_text(encoding="utf-8")
    path = catalogue_path(lang, locale_dir)
    if not path.exists():
        raise i18n.CatalogueError(
            f"no catalogue {path}: `python -m tools.readme_i18n po --lang {lang}` starts one"
        )
    catalog = i18n.read_catalogue(path)
    found = problems(readme, catalog)
    if found:
        raise i18n.CatalogueError(
            f"{len(found)} units of README.md cannot be translated:\n  " + "\n  ".join(found)
        )
    return translated(readme, catalog, lang)


def write(lang: str, root: Path = ROOT, locale_dir: Path = i18n.LOCALE_DIR) -> bool:
    """Write the README in ``lang``; True if its file changed."""
    text = build(lang, root, locale_dir)
    target = target_path(lang, root)
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.write_text(text, encoding="utf-8")
    return True


def write_all(root: Path = ROOT, locale_dir: Path = i18n.LOCALE_DIR) -> list[str]:
    """Write every translated README (``make links`` calls this after writing README.md's links);
    the names of the files that changed."""
    return [TARGETS[lang] for lang in TARGETS if write(lang, root, locale_dir)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.readme_i18n", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["po", "build", "check"])
    parser.add_argument("--lang", default=i18n.DEFAULT_LANG, help=f"default: {i18n.DEFAULT_LANG}")
    args = parser.parse_args(argv)
    target = target_path(args.lang)
    if args.command == "po":
        print(f"wrote {update_catalogue(args.lang)}")
        return 0
    try:
        text = build(args.lang)
    except i18n.CatalogueError as error:
        print(f"python -m tools.readme_i18n {args.command}: refused. {error}", file=sys.stderr)
        return 1
    if args.command == "check":
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(
                f"{target.name} is not what README.md and its catalogue give:"
                " run `python -m tools.readme_i18n build`"
            )
            return 1
        print(f"{target.name} is up to date")
        return 0
    changed = write(args.lang)
    print(f"{'wrote' if changed else 'up to date'} {target.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

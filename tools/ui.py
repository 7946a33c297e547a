"""The interface text of the site, the decks and the student edition, in other languages.

Every English string that the publishing tools write around the notebooks' own prose (the site's
navigation and search, a deck's banner, the student edition's prompts) is marked where it is
written, ``N_("Search the series")``, and looked up where it is used, ``text(english, lang)``.
Babel's extractor finds the marked strings in ``tools/*.py`` (a literal inside ``N_(...)``;
an f-string cannot be extracted: use ``N_("... {name} ...")`` and ``.format`` after the lookup),
and ``python -m tools.i18n po`` keeps their catalogue, ``locale/<lang>/site.po``, in step as it
keeps the notebooks' (new strings empty, changed ones fuzzy, removed ones obsolete).

``text(english, None)`` and ``text(english, "en")`` return the English; for another language the
translation, and a :class:`tools.i18n.CatalogueError` naming the string where the catalogue has
none (the build refuses rather than publish half-translated pages).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from babel.messages import Catalog

ROOT = Path(__file__).resolve().parents[1]
LOCALE_DIR = ROOT / "locale"
SOURCES = ROOT / "tools"
KEYWORDS = {"N_": None}
DOMAIN = "site"
HEADER = (
    "Interface text of the site, the decks and the student edition (tools/*.py, strings marked N_).\n"
    "Kept in step by `make po`; see docs/translation.md."
)


def N_(english: str) -> str:  # noqa: N802 (gettext's name for a marker that translates nothing)
    """Mark ``english`` for the catalogue; returns it unchanged (look it up later with :func:`text`)."""
    return english


def catalogue_path(lang: str, locale_dir: Path = LOCALE_DIR) -> Path:
    return Path(locale_dir) / lang / f"{DOMAIN}.po"


def marked(sources: Path = SOURCES) -> dict[str, list[tuple[str, int]]]:
    """Every marked string in ``sources`` (Babel's Python extractor), with where it is marked."""
    from babel.messages.extract import extract_from_dir  # Babel: only where a catalogue is made

    found: dict[str, list[tuple[str, int]]] = {}
    for filename, lineno, message, _comments, _context in extract_from_dir(
        str(sources),
        method_map=[("**.py", "python")],
        keywords=KEYWORDS,
        comment_tags=("TRANSLATORS:",),
    ):
        found.setdefault(message, []).append((f"tools/{filename}", lineno))
    return found


def template(lang: str, sources: Path = SOURCES) -> Catalog:
    from tools.i18n import new_catalogue

    catalog = new_catalogue(lang, "tools (site, decks, student edition)", HEADER)
    for message, where in sorted(marked(sources).items(), key=lambda item: item[1][0]):
        catalog.add(message, "", locations=[(path, None) for path, _ in where])
    return catalog


def update(lang: str, locale_dir: Path = LOCALE_DIR, sources: Path = SOURCES) -> Path:
    """Create or update ``locale/<lang>/site.po`` from the marked strings (as ``tools.i18n`` does a
    notebook's catalogue); its path."""
    from tools.i18n import Locked, merge_into

    path = catalogue_path(lang, locale_dir)
    with Locked(path):
        merge_into(path, template(lang, sources))
    _translations.cache_clear()
    return path


def add_translations(lang: str, translations: Mapping[str, str], locale_dir: Path = LOCALE_DIR) -> Path:
    """Write ``translations`` (English -> translation) into the catalogue, under a file lock so
    that two writers at once do not lose each other's entries; unknown English is an error."""
    from tools.i18n import add_translations_to

    path = catalogue_path(lang, locale_dir)
    add_translations_to(path, dict(translations), "mark it N_(...) and run make po")
    _translations.cache_clear()
    return path


@cache
def _translations(lang: str, locale_dir: Path = LOCALE_DIR) -> dict[str, str]:
    from tools.i18n import read_catalogue

    path = catalogue_path(lang, locale_dir)
    if not path.exists():
        return {}
    return {m.id: m.string for m in read_catalogue(path) if m.id and m.string and not m.fuzzy}


def text(english: str, lang: str | None, locale_dir: Path = LOCALE_DIR) -> str:
    """``english`` in ``lang`` (English itself for ``None`` or ``"en"``)."""
    if lang in (None, "", "en"):
        return english
    translated = _translations(lang, Path(locale_dir)).get(english)
    if translated is None:
        from tools.i18n import CatalogueError

        where = catalogue_path(lang, Path(locale_dir))
        raise CatalogueError(
            f"{where} has no translation of {english!r}: mark it N_(...), run make po and translate it"
        )
    return translated

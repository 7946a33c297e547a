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

import fcntl
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from babel.messages import Catalog
from babel.messages.extract import extract_from_dir

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
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    catalog = Catalog(
        locale=lang,
        project="tools (site, decks, student edition)",
        header_comment="\n".join(f"# {line}" for line in HEADER.splitlines()),
        creation_date=now,
        revision_date=now,
        fuzzy=False,
    )
    for message, where in sorted(marked(sources).items(), key=lambda item: item[1][0]):
        catalog.add(message, "", locations=[(path, None) for path, _ in where])
    return catalog


def update(lang: str, locale_dir: Path = LOCALE_DIR, sources: Path = SOURCES) -> Path:
    """Create or update ``locale/<lang>/site.po`` from the marked strings (as ``tools.i18n`` does a
    notebook's catalogue); its path."""
    from tools.i18n import read_catalogue, write_catalogue

    path = catalogue_path(lang, locale_dir)
    fresh = template(lang, sources)
    with _Locked(path):
        if not path.exists():
            write_catalogue(fresh, path)
            return path
        catalog = read_catalogue(path)
        catalog.update(fresh, update_creation_date=False)
        live = {m.id for m in catalog if m.id}
        for key, message in list(catalog.obsolete.items()):
            if not message.string or message.id in live:  # nothing to keep, or marked again
                del catalog.obsolete[key]
        write_catalogue(catalog, path)
    _translations.cache_clear()
    return path


def add_translations(lang: str, translations: Mapping[str, str], locale_dir: Path = LOCALE_DIR) -> Path:
    """Write ``translations`` (English -> translation) into the catalogue, under a file lock so
    that two writers at once do not lose each other's entries; unknown English is an error."""
    from tools.i18n import read_catalogue, write_catalogue

    path = catalogue_path(lang, locale_dir)
    with _Locked(path):
        catalog = read_catalogue(path)
        unknown = [english for english in translations if catalog.get(english) is None]
        if unknown:
            raise KeyError(f"{path.name} has no entry for {unknown!r}: mark it N_(...) and run make po")
        for english, translated in translations.items():
            message = catalog.get(english)
            message.string = translated
            message.flags.discard("fuzzy")
        write_catalogue(catalog, path)
    _translations.cache_clear()
    return path


class _Locked:
    """An exclusive lock on ``<catalogue>.lock`` for the duration of a ``with`` block."""

    def __init__(self, path: Path):
        self.lock = Path(path).with_suffix(".po.lock")

    def __enter__(self):
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.lock, "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()  # the file stays: removing it would let two writers lock two files


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

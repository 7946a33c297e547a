"""The catalogue of what attnlib says to a student, ``locale/<lang>/attnlib.po``, kept in step with
attnlib's sources, and compiled into ``attnlib/locale/<lang>/LC_MESSAGES/attnlib.mo``, the file the
package ships and reads with the standard library's ``gettext`` (so attnlib needs no Babel).

attnlib shows its check verdicts and hints, case names, explorer labels and taught errors through
``attnlib.i18n.tr`` (read that module first). This tool finds those strings with Babel's Python
extractor, by the calls that hold them: ``tr``, ``N_`` and ``fmt`` (their first argument), the
hint of ``Mistake`` and ``Symptom``, the name of ``Case``, the fix of ``as_numbers`` and
``not_a_distribution``, ``check_answer``'s hint and ``combined``'s right answer (implicitly
concatenated literals are joined, as Python joins them). A string that none of these holds (an
argument by keyword, a table entry) is marked ``N_("...")`` where it is written; one with variable
parts is a ``fmt("... {name} ...", name=...)`` template, never an f-string, so that no key holds a
number. Each entry's locations name the module it comes from (``attnlib/check/gpt.py``), so that
translators can split the work by module.

:func:`update` keeps the catalogue in step as ``tools.ui.update`` keeps site.po (new strings empty,
changed ones fuzzy, removed ones obsolete); :func:`add_translations` writes translations under a
file lock (several translators at once):

    python -c "from tools import lib_catalogue; lib_catalogue.update('zh_CN')"
    python -c "from tools import lib_catalogue; lib_catalogue.add_translations('zh_CN', {'Wrong': '错误'})"
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from babel.messages import Catalog
from babel.messages.extract import extract_from_dir

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "attnlib"
LOCALE_DIR = ROOT / "locale"  # the catalogues translators edit
COMPILED_DIR = SOURCES / "locale"  # what the wheel ships: <lang>/LC_MESSAGES/attnlib.mo
DOMAIN = "attnlib"
#: Babel keywords: the function, and which argument (from 1) is the English.
KEYWORDS = {
    "tr": None,
    "N_": None,
    "fmt": None,
    "Mistake": None,
    "Symptom": None,
    "Case": None,
    "hint_line": None,
    "not_a_distribution": None,
    "as_numbers": (2,),
    "check_answer": (4,),
    "combined": (3,),
}
HEADER = (
    "What attnlib shows a student (check verdicts and hints, case names, explorer labels, taught errors).\n"
    "Kept in step by tools/lib_catalogue.py; add translations with lib_catalogue.add_translations."
)


def catalogue_path(lang: str, locale_dir: Path = LOCALE_DIR) -> Path:
    """``<locale_dir>/<lang>/attnlib.po``."""
    return Path(locale_dir) / lang / f"{DOMAIN}.po"


def marked(sources: Path = SOURCES) -> dict[str, list[str]]:
    """Every string of ``sources`` that attnlib translates, with the modules it is written in
    (``attnlib/check/gpt.py``), found by Babel's Python extractor with :data:`KEYWORDS`."""
    found: dict[str, list[str]] = {}
    for filename, _lineno, message, _comments, _context in extract_from_dir(
        str(sources),
        method_map=[("**.py", "python")],
        keywords=KEYWORDS,
        comment_tags=("TRANSLATORS:",),
    ):
        if not isinstance(message, str) or not message:
            continue
        where = f"{Path(sources).name}/{filename}"
        modules = found.setdefault(message, [])
        if where not in modules:
            modules.append(where)
    return found


def template(lang: str, sources: Path = SOURCES) -> Catalog:
    """A fresh catalogue of ``lang`` with every marked string, untranslated, sorted by module."""
    from tools.i18n import new_catalogue

    catalog = new_catalogue(lang, "attnlib", HEADER)
    for message, where in sorted(marked(sources).items(), key=lambda item: (item[1][0], item[0])):
        catalog.add(message, "", locations=[(path, None) for path in where])
    return catalog


def compiled_path(lang: str, locale_dir: Path = LOCALE_DIR) -> Path:
    """Where the compiled catalogue goes: in the package for the repository's catalogues, beside the
    catalogue for any other folder (a test's)."""
    base = COMPILED_DIR if Path(locale_dir) == LOCALE_DIR else Path(locale_dir)
    return base / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def compile_catalogue(lang: str, locale_dir: Path = LOCALE_DIR) -> Path:
    """Write the compiled catalogue (GNU ``.mo``, Babel's ``write_mo``) of the translated, not fuzzy
    entries; its path. :func:`update` and :func:`add_translations` call it, so the two never differ
    (``tests/tools/test_lib_catalogue.py`` checks that they do not)."""
    from babel.messages.mofile import write_mo

    from tools.i18n import read_catalogue

    target = compiled_path(lang, locale_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as f:
        write_mo(f, read_catalogue(catalogue_path(lang, locale_dir)), use_fuzzy=False)
    return target


def update(lang: str, locale_dir: Path = LOCALE_DIR, sources: Path = SOURCES) -> Path:
    """Create or update ``locale/<lang>/attnlib.po`` from the sources, and compile it; its path.

    Translations are kept; an entry whose English changed is fuzzy (with its previous English);
    one whose English is gone becomes obsolete if it had a translation, and is dropped if not.
    """
    from tools.i18n import Locked, merge_into

    path = catalogue_path(lang, locale_dir)
    with Locked(path):
        merge_into(path, template(lang, sources))
        compile_catalogue(lang, locale_dir)
    return path


def add_translations(lang: str, translations: Mapping[str, str], locale_dir: Path = LOCALE_DIR) -> Path:
    """Write ``translations`` (English -> translation) into the catalogue under a file lock, so that
    translators writing at once keep each other's entries, and compile it; its path. English the
    catalogue does not hold is a KeyError, and a translation that fails
    ``tools.i18n.check_translation`` (a code span, formula or ``{placeholder}`` changed) a
    ValueError, both naming the strings; nothing is written then.
    """
    from tools.i18n import Locked, add_translations_to

    path = catalogue_path(lang, locale_dir)
    add_translations_to(
        path, dict(translations), "mark it where attnlib writes it and run tools.lib_catalogue.update"
    )
    with Locked(path):
        compile_catalogue(lang, locale_dir)
    return path

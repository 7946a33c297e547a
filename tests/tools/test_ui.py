"""tools/ui.py: the interface text of the site, the decks and the student edition, and its
catalogue locale/<lang>/site.po, which make test keeps in step with the marked strings."""

from __future__ import annotations

import pytest

from tools import i18n, ui

LANGS = sorted(p.parent.name for p in ui.LOCALE_DIR.glob(f"*/{ui.DOMAIN}.po"))


def _sources(tmp_path, text: str):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "page.py").write_text(text, encoding="utf-8")
    return src


def test_marked_strings_are_found_with_where_they_are_marked(tmp_path):
    src = _sources(
        tmp_path,
        'from tools.ui import N_\nA = N_("Search the series")\n'
        'B = N_("Page {n} of " "{total}")\nC = "not marked"\n',
    )
    found = ui.marked(src)
    assert set(found) == {"Search the series", "Page {n} of {total}"}  # literals joined as Python does
    assert found["Search the series"] == [("tools/page.py", 2)]


def test_update_adds_new_strings_keeps_translations_and_text_looks_them_up(tmp_path):
    locale = tmp_path / "locale"
    src = _sources(tmp_path, 'from tools.ui import N_\nA = N_("Search")\nB = N_("Next")\n')
    ui.update("zh_CN", locale, src)
    ui.add_translations("zh_CN", {"Search": "搜索"}, locale)
    assert ui.text("Search", "zh_CN", locale) == "搜索"
    assert ui.text("Search", "en", locale) == ui.text("Search", None, locale) == "Search"
    with pytest.raises(i18n.CatalogueError, match="no translation of 'Next'"):
        ui.text("Next", "zh_CN", locale)  # untranslated: the build refuses, it does not show English
    _sources(tmp_path, 'from tools.ui import N_\nA = N_("Search")\nC = N_("Previous")\n')
    ui.update("zh_CN", locale, src)
    catalog = i18n.read_catalogue(ui.catalogue_path("zh_CN", locale))
    assert {m.id: m.string for m in catalog if m.id} == {"Search": "搜索", "Previous": ""}
    with pytest.raises(KeyError, match="no entry for"):
        ui.add_translations("zh_CN", {"Unknown": "未知"}, locale)


@pytest.mark.parametrize("lang", LANGS)
def test_the_site_catalogue_is_complete_and_current(lang):
    """Every string the tools mark has a translation that keeps its placeholders, code and
    links, and the catalogue holds nothing else: an English interface change lands with its
    translation (run make po, then translate), as the notebooks' prose does."""
    path = ui.catalogue_path(lang)
    catalog = i18n.read_catalogue(path)
    entries = {m.id: m for m in catalog if m.id}
    marked = ui.marked()
    problems = [f"missing (run make po): {s!r}" for s in marked if s not in entries]
    problems += [f"no longer marked in tools/: {s!r}" for s in entries if s not in marked]
    problems += [f"obsolete entry: {m.id!r}" for m in catalog.obsolete.values()]
    for s, m in entries.items():
        if not m.string:
            problems.append(f"untranslated: {s!r}")
        elif m.fuzzy:
            problems.append(f"fuzzy (the English changed): {s!r}")
        else:
            problems += [f"{s!r}: {p}" for p in i18n.check_translation(s, m.string, placeholders=True)]
            problems += [f"{s!r}: {p}" for p in i18n.glossary_problems(s, m.string, i18n.glossary_terms())]
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)

"""The catalogue of attnlib's student-facing text (tools/lib_catalogue.py): extraction, the shipped
catalogue in step with the sources, translators' concurrent writes, and that nothing a check can
show is missed by the extraction."""

# ruff: noqa: RUF001 (the Chinese here has full-width punctuation)
from __future__ import annotations

import contextlib
import importlib
import io
import threading

import pytest

import attnlib
from attnlib import i18n
from attnlib.check import _core
from tools import lib_catalogue
from tools.i18n import check_translation, read_catalogue

LANG = "zh_CN"


@pytest.fixture(scope="module")
def marked() -> dict[str, list[str]]:
    return lib_catalogue.marked()


def _keys(text: str) -> set[str]:
    """The catalogue keys that showing ``text`` looks up (a :class:`attnlib.i18n.Text`: its template
    and its Text parts; one already shown: none)."""
    if isinstance(text, i18n.Text):
        if text.template is None:
            return set()
        if text.parts:
            return {text.template}.union(*(_keys(v) for v in text.parts.values() if isinstance(v, i18n.Text)))
    return {str(text)}


def test_babel_finds_the_marked_strings_joined_and_by_module(marked):
    assert marked["Wrong"] == ["attnlib/check/_core.py"]
    # implicitly concatenated literals are joined, as Python joins them
    assert "the check puts the library's answer out of reach while it runs your code; building blocks " \
        "from earlier notebooks stay allowed" in marked  # fmt: skip
    assert "case {i}/{n} ({name})" in marked  # a template, its numbers outside it
    assert "temperature" in marked and "attnlib/viz/gpt.py" in marked["temperature"]
    assert "{name} has {length} tokens, more than {what}={limit}" in marked  # a taught error
    assert all(where[0].startswith("attnlib/") and where[0].endswith(".py") for where in marked.values())


def test_the_shipped_catalogue_is_in_step_with_the_sources(marked):
    """make test fails when attnlib's text changed and the catalogue was not refreshed."""
    catalog = read_catalogue(lib_catalogue.catalogue_path(LANG))
    held = {m.id for m in catalog if m.id}
    assert sorted(set(marked) - held) == [], "run tools.lib_catalogue.update('zh_CN'): new English"
    assert sorted(held - set(marked)) == [], "run tools.lib_catalogue.update('zh_CN'): English gone"


def test_update_adds_new_english_marks_changed_fuzzy_and_keeps_removed_translations(tmp_path):
    src, locale = tmp_path / "attnlib", tmp_path / "locale"
    src.mkdir()
    module = src / "check.py"
    module.write_text('N_("first hint")\nMistake("second " "hint", None)\nN_("third hint")\n')
    path = lib_catalogue.update(LANG, locale, src)
    assert {m.id: m.string for m in read_catalogue(path) if m.id} == {
        "first hint": "",
        "second hint": "",
        "third hint": "",
    }
    lib_catalogue.add_translations(LANG, {"first hint": "第一个提示", "third hint": "第三个提示"}, locale)
    module.write_text('N_("first hint, changed")\nMistake("second hint", None)\nN_("a new hint")\n')
    lib_catalogue.update(LANG, locale, src)
    catalog = read_catalogue(path)
    changed = catalog.get("first hint, changed")
    assert changed.fuzzy and changed.string == "第一个提示"
    assert catalog.get("a new hint").string == "" and "third hint" in catalog.obsolete
    assert [loc for loc, _ in catalog.get("second hint").locations] == ["attnlib/check.py"]


def test_add_translations_refuses_unknown_english_and_broken_placeholders(tmp_path):
    src, locale = tmp_path / "attnlib", tmp_path / "locale"
    src.mkdir()
    (src / "m.py").write_text('tr("case {i}/{n} ({name})")\n')
    lib_catalogue.update(LANG, locale, src)
    with pytest.raises(KeyError, match="not marked anywhere"):
        lib_catalogue.add_translations(LANG, {"not marked anywhere": "x"}, locale)
    with pytest.raises(
        ValueError, match=r"placeholders: expected \['\{i\}', '\{name\}', '\{n\}'\], got \['\{i\}', '\{n\}'\]"
    ):
        lib_catalogue.add_translations(LANG, {"case {i}/{n} ({name})": "用例 {i}/{n}（{名字}）"}, locale)
    lib_catalogue.add_translations(LANG, {"case {i}/{n} ({name})": "用例 {i}/{n}（{name}）"}, locale)


def test_translators_writing_at_once_keep_each_others_entries(tmp_path):
    src, locale = tmp_path / "attnlib", tmp_path / "locale"
    src.mkdir()
    (src / "m.py").write_text("".join(f'N_("hint number {i}")\n' for i in range(12)))
    lib_catalogue.update(LANG, locale, src)
    errors = []

    def translate(i: int) -> None:
        try:
            lib_catalogue.add_translations(LANG, {f"hint number {i}": f"第 {i} 个提示"}, locale)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=translate, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    catalog = read_catalogue(lib_catalogue.catalogue_path(LANG, locale))
    assert {m.id: m.string for m in catalog if m.id} == {
        f"hint number {i}": f"第 {i} 个提示" for i in range(12)
    }


def test_check_translation_keeps_placeholders_only_when_asked():
    assert (
        check_translation("{title}: all {n} cases pass.", "{title}：全部 {n} 个用例通过。", placeholders=True)
        == []
    )
    problems = check_translation("{title}: all {n} cases pass.", "{title}：全部用例通过。", placeholders=True)
    assert problems == ["placeholders: expected ['{n}', '{title}'], got ['{title}']"]
    assert check_translation("a set {x} in prose", "集合", placeholders=False) == []


def _declared_hints(check):
    """The ``declared_hints`` of the ``_core`` that ``check`` itself runs on: another test of the
    session may have imported attnlib afresh (``_core.library_changes`` does), and hints declared
    in one copy of ``_core`` are not gathered by the other's."""
    for value in getattr(check, "__globals__", {}).values():
        if getattr(value, "__module__", None) == "attnlib.check._core" and hasattr(value, "__globals__"):
            return value.__globals__["declared_hints"]
    return _core.declared_hints


@pytest.fixture(scope="module")
def shown_in_chinese():
    """Every answer of every answer table (tests/check/answers), run through its check in Chinese as
    tests/check/test_harness.py runs it: the hints each check declared, and every string looked up."""
    harness = importlib.import_module("tests.check.test_harness")
    declared: set[str] = set()
    before = attnlib.language()
    attnlib.set_language(LANG)
    try:
        with i18n.recording() as looked_up:
            for kind in harness.KINDS:
                for param in harness._entries(kind):
                    module, name, _i, entry = param.values
                    answer = entry[0] if kind in ("WRONG", "OUT_OF_REACH", "TOLD", "CRASHES") else entry
                    check = getattr(importlib.import_module(f"attnlib.check.{module}"), name)
                    with contextlib.redirect_stdout(io.StringIO()), _declared_hints(check)() as hints:
                        check(*answer.args) if isinstance(answer, harness.Given) else check(answer)
                    declared |= hints
    finally:
        attnlib.set_language(before)
    return declared, looked_up


def test_everything_a_check_shows_is_a_key_of_the_extracted_catalogue(marked, shown_in_chinese):
    """Nothing a check can say is missed by the extraction: every hint it declares, every case name
    and template it shows, for every answer of every table, is a key of the catalogue."""
    declared, looked_up = shown_in_chinese
    assert len(declared) > 300 and len(looked_up) > 300  # the harness ran
    keys = set().union(*(_keys(hint) for hint in declared)) | looked_up
    missing = sorted(keys - set(marked))
    assert missing == [], (
        f"{len(missing)} strings attnlib shows are not extracted; mark them N_(...) or write them as "
        f"fmt(template, ...) (tools/lib_catalogue.py): {missing[:10]}"
    )


def test_every_attnlib_string_is_translated():
    """Every entry of attnlib/locale/zh_CN/attnlib.po is translated, not fuzzy, and keeps its code
    spans, formulas and {placeholders} (tools.i18n.check_translation)."""
    catalog = read_catalogue(lib_catalogue.catalogue_path(LANG))
    untranslated = [m.id for m in catalog if m.id and not m.string]
    fuzzy = [m.id for m in catalog if m.id and m.fuzzy]
    broken = {
        m.id: problems
        for m in catalog
        if m.id and m.string and (problems := check_translation(m.id, m.string, placeholders=True))
    }
    assert untranslated == [], f"{len(untranslated)} untranslated, e.g. {untranslated[:5]}"
    assert fuzzy == [], f"{len(fuzzy)} fuzzy, e.g. {fuzzy[:5]}"
    assert broken == {}, broken


def test_the_compiled_catalogue_is_the_catalogue(tmp_path):
    """attnlib reads the compiled catalogue, not the .po: compiling the .po again gives the same
    bytes, so no translation is in one and not the other (make po compiles it)."""
    import shutil

    from tools.i18n import read_catalogue

    shipped = lib_catalogue.compiled_path(LANG)
    copy = tmp_path / LANG / f"{lib_catalogue.DOMAIN}.po"
    copy.parent.mkdir()
    shutil.copy(lib_catalogue.catalogue_path(LANG), copy)
    again = lib_catalogue.compile_catalogue(LANG, tmp_path)
    assert again.read_bytes() == shipped.read_bytes(), f"{shipped} is stale: run make po"
    translated = {m.id: m.string for m in read_catalogue(copy) if m.id and m.string and not m.fuzzy}
    attnlib.i18n.translations.cache_clear()
    assert attnlib.i18n.translations(LANG) == translated

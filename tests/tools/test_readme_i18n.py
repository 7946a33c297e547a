"""README.zh-CN.md is written from README.md and locale/zh_CN/README.po, and stays in step."""

from __future__ import annotations

import re
import shutil

import pytest

from tests import ROOT
from tools import i18n, readme_i18n
from tools.links import Repo, with_readme_links
from tools.site import readme_sections, readme_summaries

ZH = "zh_CN"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _headings(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]


def test_the_chinese_readme_is_what_the_command_writes():
    """A change to README.md without its translation fails here: run `python -m tools.readme_i18n po`,
    translate locale/zh_CN/README.po, then `python -m tools.readme_i18n build`."""
    assert (ROOT / "README.zh-CN.md").read_text(encoding="utf-8") == readme_i18n.build(ZH)
    assert readme_i18n.main(["check"]) == 0


def test_the_catalogue_is_complete_checked_and_follows_the_glossary():
    catalog = i18n.read_catalogue(readme_i18n.catalogue_path(ZH))
    assert readme_i18n.problems(README, catalog) == []
    units = readme_i18n.units_of(README)
    assert len(units) >= 40 and not catalog.obsolete
    terms = i18n.glossary_terms()
    for unit in units:
        message = catalog.get(unit.msgid, context=unit.context)
        assert message.string and not message.fuzzy, unit.msgid[:60]
        assert i18n.check_translation(unit.msgid, message.string) == [], unit.msgid[:60]
        assert i18n.glossary_problems(unit.msgid, message.string, terms) == [], unit.msgid[:60]


def test_the_headings_are_the_ones_the_site_builder_relies_on():
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    headings = readme_i18n.HEADINGS[ZH]
    assert _headings(README) == list(headings)
    assert (
        _headings(zh)
        == list(headings.values())
        == [
            "两条命令",
            "笔记本一览",
            "给学生",
            "给教师",
            "attnlib",
            "给维护者",
            "许可与引用",
        ]
    )
    english = readme_summaries(readme_sections(README)["The notebooks"])
    chinese = readme_summaries(readme_sections(zh)["笔记本一览"])
    assert list(chinese) == list(english) and len(chinese) == 14  # | 03 | `03_masking` | ... |
    assert all(re.search(r"[\u4e00-\u9fff]", line) for line in chinese.values())


def test_each_readme_links_to_the_other_from_its_first_line():
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert README.splitlines()[0] == readme_i18n.LANGUAGE_LINES["en"] == "**[简体中文](README.zh-CN.md)**"
    assert zh.splitlines()[0] == readme_i18n.LANGUAGE_LINES[ZH] == "**[English](README.md)**"
    assert not any("README.zh-CN.md)**" in u.msgid for u in readme_i18n.units_of(README))
    # a link to one of README's own sections follows the heading's translation
    assert "](#给学生)" in zh and "](#for-students)" not in zh
    assert readme_i18n.anchor("For students") == "for-students" and readme_i18n.anchor("给学生") == "给学生"
    assert readme_i18n.anchor("Licences and how to cite") == "licences-and-how-to-cite"


def _copy(tmp_path, readme: str):
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    shutil.copytree(ROOT / "locale", tmp_path / "locale")
    return tmp_path, tmp_path / "locale"


def test_an_english_change_without_its_translation_is_refused(tmp_path):
    changed = README.replace("Fourteen JupyterLab notebooks", "Fifteen JupyterLab notebooks")
    root, locale = _copy(tmp_path, changed)
    with pytest.raises(i18n.CatalogueError, match=r"no entry.*Fifteen JupyterLab"):
        readme_i18n.build(ZH, root, locale)
    readme_i18n.update_catalogue(ZH, root / "README.md", locale)  # `po`: the old translation, fuzzy
    with pytest.raises(i18n.CatalogueError, match=r"fuzzy.*Fifteen JupyterLab"):
        readme_i18n.build(ZH, root, locale)
    catalog = i18n.read_catalogue(readme_i18n.catalogue_path(ZH, locale))
    message = catalog.get(readme_i18n.units_of(changed)[1].msgid, context="intro")
    assert message.fuzzy and message.string.startswith("十四个")


def test_a_translation_that_breaks_a_code_span_or_the_glossary_is_refused(tmp_path):
    root, locale = _copy(tmp_path, README)
    path = readme_i18n.catalogue_path(ZH, locale)
    catalog = i18n.read_catalogue(path)
    unit = next(u for u in readme_i18n.units_of(README) if u.msgid.startswith("| 03 |"))
    message = catalog.get(unit.msgid, context=unit.context)
    message.string = message.string.replace("`03_masking`", "03_masking").replace("因果掩码", "前瞻掩码")
    i18n.write_catalogue(catalog, path)
    with pytest.raises(i18n.CatalogueError) as error:
        readme_i18n.build(ZH, root, locale)
    assert "code spans" in str(error.value) and "前瞻掩码" in str(error.value)


def test_the_links_column_of_readme_is_not_a_unit_and_becomes_chinese_links(tmp_path):
    repo = Repo("someone", "attention-series")
    linked = with_readme_links(README, repo)
    assert readme_i18n.units_of(linked) == readme_i18n.units_of(README)
    root, locale = _copy(tmp_path, linked)
    zh = readme_i18n.build(ZH, root, locale)
    table = readme_sections(zh)["笔记本一览"]
    assert table.count("/blob/student-edition/student-zh/") == 14 and "/student/" not in table
    assert "| # | 笔记本 | 你将学到什么 | 免安装运行 |" in table
    assert readme_i18n.write_all(root, locale) == ["README.zh-CN.md"]
    assert readme_i18n.write_all(root, locale) == []  # a second run changes nothing
    assert (root / "README.zh-CN.md").read_text(encoding="utf-8") == zh


def test_units_are_keyed_by_section_so_an_insertion_leaves_the_others_alone():
    units = readme_i18n.units_of(README)
    assert {u.context.split("#")[0] for u in units} == {"intro", *readme_i18n.HEADINGS[ZH]}
    moved = README.replace("## Two commands\n", "## Two commands\n\nA new paragraph here.\n\n", 1)
    after = {(u.msgid, u.context) for u in readme_i18n.units_of(moved)}
    assert after - {(u.msgid, u.context) for u in units} == {("A new paragraph here.", "Two commands")}
    with pytest.raises(ValueError, match="zh_TW"):
        readme_i18n.target_path("zh_TW")

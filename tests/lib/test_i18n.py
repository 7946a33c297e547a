"""attnlib's feedback language (attnlib/i18n.py): the setting, the English left as it was, a
translated verdict, and the strict switch for tests. The catalogue itself is tested in
tests/tools/test_lib_catalogue.py."""

# ruff: noqa: RUF001 (the Chinese expected here has full-width punctuation)
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import attnlib
from attnlib import i18n
from attnlib._validate import require_length
from attnlib.check._core import Case, Mistake, check_answer, run_check


@pytest.fixture(autouse=True)
def english_after():
    """Every test leaves the language as it found it (English)."""
    before = attnlib.language()
    yield
    attnlib.set_language(before)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}
    )


@pytest.mark.parametrize(
    ("given", "meant"), [("en", "en"), ("zh_CN", "zh_CN"), ("zh", "zh_CN"), ("zh-CN", "zh_CN")]
)
def test_set_language_takes_the_languages_and_their_aliases(given, meant):
    attnlib.set_language(given)
    assert attnlib.language() == meant


@pytest.mark.parametrize("bad", ["fr", "", "chinese", None, 3])
def test_a_language_attnlib_does_not_speak_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"expected a language among 'en', 'zh_CN'.*got") as info:
        attnlib.set_language(bad)
    assert repr(bad) in str(info.value)
    assert attnlib.language() == "en"


def test_the_environment_variable_chooses_the_first_language():
    code = "import attnlib; print(attnlib.language())"
    assert _run(code, ATTNLIB_LANG="zh-CN").stdout.strip() == "zh_CN"
    assert _run(code, ATTNLIB_LANG="").stdout.strip() == "en"
    refused = _run(code, ATTNLIB_LANG="klingon")
    assert refused.returncode != 0 and "got 'klingon'" in refused.stderr


def test_english_needs_no_catalogue_and_no_babel():
    code = (
        "import sys, attnlib\n"
        "from attnlib.check._core import check_answer\n"
        "print(check_answer('T', 4, 3, 'count again').message)\n"
        "assert not [m for m in sys.modules if m.startswith('babel')], 'babel imported in English'\n"
    )
    result = _run(code, ATTNLIB_LANG="en")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Wrong: T: you predicted 4; that is not it.\n   hint: count again\n"


def test_english_verdicts_are_the_english_templates_filled_in():
    cases = [Case("B=1", (torch.ones(2),)), Case("B=2", (torch.zeros(3),))]
    wrong = run_check("Ex", lambda x: x * 2, lambda x: x + 1, cases, [Mistake("doubled", lambda x: x * 2)])
    assert wrong.message == (
        "Wrong: Ex, case 1/2 (B=1):\n   first difference at index (0,): expected 2.0000, got 2.0000\n"
        "   hint: doubled"
    ) or wrong.message.startswith("Wrong: Ex, case 2/2 (B=2):")
    assert run_check("Ex", lambda x: x + 1, lambda x: x + 1, cases).message == "Passed: Ex: all 2 cases pass."


def test_a_translated_verdict_shows_its_status_word_and_template_in_chinese():
    attnlib.set_language("zh_CN")
    verdict = check_answer("练习", 3, 3)
    assert verdict.message == "通过：练习：正确，答案是 3。"
    assert "<strong>通过：</strong>" in verdict._repr_html_()
    assert 'aria-label="检查通过：练习：正确' in verdict._repr_html_()  # a full-width colon, no space
    attnlib.set_language("en")
    assert check_answer("Ex", 3, 3).message == "Passed: Ex: right, it is 3."


def test_the_language_is_read_when_a_verdict_is_made_not_at_import():
    verdict_en = check_answer("Ex", ..., 3)
    attnlib.set_language("zh")
    verdict_zh = check_answer("Ex", ..., 3)
    assert verdict_en.message == "Not yet: Ex: replace `...` with your prediction."
    assert verdict_zh.message == "尚未完成：Ex：把 `...` 换成你的预测。"


def test_a_missing_translation_shows_the_english_and_strict_mode_names_it():
    attnlib.set_language("zh_CN")
    assert i18n.tr("no catalogue holds this sentence") == "no catalogue holds this sentence"
    with i18n.strict(), pytest.raises(KeyError, match="no catalogue holds this sentence"):
        i18n.tr("no catalogue holds this sentence")
    assert i18n.tr("no catalogue holds this sentence") == "no catalogue holds this sentence"


def test_strict_mode_from_the_environment():
    code = "import attnlib.i18n as i; i.tr('not in the catalogue at all')"
    result = _run(code, ATTNLIB_LANG="zh_CN", ATTNLIB_I18N_STRICT="1")
    assert result.returncode != 0 and "not in the catalogue at all" in result.stderr
    assert _run(code, ATTNLIB_LANG="zh_CN").returncode == 0


def test_fmt_is_the_english_string_and_is_translated_part_by_part():
    text = i18n.fmt(
        "{not_bool}: {fix}",
        not_bool=i18n.fmt("the mask must be boolean (dtype torch.bool), not 0/1 numbers"),
        fix="x",
    )
    assert text == "the mask must be boolean (dtype torch.bool), not 0/1 numbers: x"
    assert isinstance(text, str) and hash(text) == hash(str(text))
    attnlib.set_language("zh_CN")
    assert i18n.tr(text) == "掩码必须是布尔掩码（dtype 为 torch.bool），不能是 0/1 数值：x"
    assert i18n.tr(i18n.shown("已经是中文")) == "已经是中文"


def test_recording_sees_every_string_looked_up_outside_english():
    with i18n.recording() as seen:
        i18n.tr("Wrong")
        attnlib.set_language("zh_CN")
        i18n.tr("Wrong")
        i18n.tr(i18n.fmt("hint: {hint}", hint=i18n.fmt("Passed")))
    assert seen == {"Wrong", "hint: {hint}", "Passed"}


def test_a_taught_error_keeps_its_english_and_uses_the_catalogue_in_chinese():
    with pytest.raises(ValueError, match=r"^x has 7 tokens, more than context_length=6$"):
        require_length("x", 7, 6)
    attnlib.set_language("zh_CN")
    with i18n.recording() as seen, pytest.raises(ValueError, match="7"):
        require_length("x", 7, 6)
    assert seen == {"{name} has {length} tokens, more than {what}={limit}"}


def test_explorer_labels_are_translated_when_the_explorer_is_built():
    widgets = pytest.importorskip("ipywidgets")
    from attnlib.viz.explorers import _label

    attnlib.set_language("zh_CN")
    slider = widgets.IntSlider(description="a label no catalogue holds")
    with i18n.recording() as seen:
        _label(slider)
    assert seen == {"a label no catalogue holds"} and slider.description == "a label no catalogue holds"
    i18n.translations.cache_clear()
    try:
        i18n.translations("zh_CN")["temperature"] = "温度"  # as if translated
        slider = widgets.FloatSlider(description="temperature")
        _label(slider)
        assert slider.description == "温度"
    finally:
        i18n.translations.cache_clear()


# ----------------------------------------------------------------------------- exercise titles


def _titles() -> dict[str, str]:
    """Every exercise title a check shows (``"Exercise N.M — ..."``) -> its Chinese, from the catalogue."""
    from tools import lib_catalogue

    marked = lib_catalogue.marked()  # Babel's extraction over attnlib, once
    return {
        english: chinese
        for english, chinese in i18n.translations.__wrapped__("zh_CN").items()
        if english.startswith("Exercise ") and english in marked
    }


def test_every_check_title_is_marked_for_the_catalogue():
    """A title written without N_ would stay English in a Chinese verdict: every "Exercise N.M — ..."
    literal of attnlib/check is the argument of N_."""
    import ast
    import re
    from pathlib import Path

    unmarked = []
    for path in sorted((Path(attnlib.__file__).parent / "check").glob("[a-z]*.py")):
        tree = ast.parse(path.read_text())
        marked = {
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "N_" and node.args
        }
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        unmarked += [
            f"{path.name}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.match(r"Exercise \d+\.\d+ — ", node.value)
            and id(node) not in marked | docstrings
        ]
    assert unmarked == [], f"titles not marked N_(...): {unmarked}"


def test_every_title_is_translated_as_the_chinese_notebooks_head_an_exercise():
    import re

    titles = _titles()
    assert len(titles) >= 50, f"expected a translated title per exercise, got {len(titles)}"
    for english, chinese in titles.items():
        number = re.match(r"Exercise (\d+\.\d+) — ", english).group(1)
        assert re.match(rf"练习 {re.escape(number)}——\S", chinese), f"{english!r} -> {chinese!r}"


def test_a_chinese_verdict_names_the_exercise_in_chinese_and_the_english_is_unchanged():
    from attnlib import check
    from tests.check.answers.dot_product_attention import softmax_ok

    wrong, right = (lambda x: x), softmax_ok
    english = check.softmax(wrong)
    assert english.message.startswith("Wrong: Exercise 1.1 — softmax, case 1/")
    assert check.softmax(right).message.startswith("Passed: Exercise 1.1 — softmax: all ")
    attnlib.set_language("zh_CN")
    for verdict, word in ((check.softmax(wrong), "错误："), (check.softmax(right), "通过：")):
        assert verdict.message.startswith(word + "练习 1.1——softmax"), verdict.message
        assert "Exercise" not in verdict.message and "Exercise" not in verdict._repr_html_()
        assert "练习 1.1——softmax" in verdict._repr_html_()
    not_yet = check.top_token(...)
    assert not_yet.message.startswith("尚未完成：练习 1.3——"), not_yet.message
    attnlib.set_language("en")
    assert check.softmax(wrong).message == english.message


def test_a_module_exercise_and_a_part_of_a_result_name_the_exercise_in_chinese():
    from attnlib import check

    not_a_class = check.multihead_module(3)
    assert not_a_class.message.startswith(
        "Wrong: Exercise 5.5 — a multi-head attention module: expected a class"
    )

    def mean_off(weights, p):  # the mean wrong by a factor (1-p), the variance right
        return (1 - p) * weights.sum(-1), p / (1 - p) * (weights**2).sum(-1)

    part = check.dropout_row_sum_stats(mean_off)
    assert part.message.startswith(
        "Wrong: Exercise 4.2 — the spread of a row sum, the mean (first result), case 1/"
    )
    attnlib.set_language("zh_CN")
    not_a_class = check.multihead_module(3)
    assert not_a_class.message.startswith("错误：练习 5.5——多头注意力模块：应为一个类"), not_a_class.message
    part = check.dropout_row_sum_stats(mean_off)
    assert part.message.startswith("错误：练习 4.2——行和的离散程度，均值（第一个结果），用例 1/"), (
        part.message
    )
    assert "Exercise" not in part.message


# ----------------------------------------------------------------------------- the taught errors


def test_the_boolean_mask_error_of_notebook_03_in_both_languages():
    from attnlib.masks import require_bool_mask

    english = (
        "expected a boolean mask (True = may attend), got dtype torch.float32; for a 0/1 mask that marks "
        "positions to keep use mask.bool(); for one that marks masked-out positions (True/1 = hide) use "
        "attnlib.from_masked_out(mask)"
    )
    with pytest.raises(TypeError) as info:
        require_bool_mask(torch.ones(2, 2))
    assert str(info.value) == english
    attnlib.set_language("zh_CN")
    with pytest.raises(TypeError) as info:
        require_bool_mask(torch.ones(2, 2))
    assert str(info.value).startswith("应为布尔掩码（True = 允许关注），得到的 dtype 是 torch.float32；")
    assert "mask.bool()" in str(info.value) and "attnlib.from_masked_out(mask)" in str(info.value)


def test_the_local_window_error_of_notebook_09_in_both_languages():
    local = attnlib.LocalAttention(4, half_window=3, mode="m")
    hidden, keys = torch.zeros(1, 1, 4), torch.zeros(1, 5, 4)
    with pytest.raises(ValueError) as info:
        local(hidden, keys)
    assert str(info.value) == (
        "local window 2D+1=7 (D=3) is larger than the source length Ts=5; choose D <= 2 or global attention"
    )
    attnlib.set_language("zh_CN")
    with pytest.raises(ValueError) as info:
        local(hidden, keys)
    assert str(info.value) == "局部窗口 2D+1=7（D=3）大于源序列长度 Ts=5；请选择 D <= 2，或使用全局注意力"


def test_an_explorers_option_labels_are_translated_and_its_values_are_not():
    pytest.importorskip("ipywidgets")
    from tests.viz.test_explorers import EXPLORERS

    def head_control(lang: str):
        attnlib.set_language(lang)
        row = EXPLORERS["cross_attention_explorer"]().children[0]
        return next(c for c in row.children if hasattr(c, "options"))

    english, chinese = head_control("en"), head_control("zh_CN")
    assert list(english._options_labels)[:2] == ["mean", "0"] and english.description == "head"
    assert list(chinese._options_labels)[:2] == ["平均", "0"] and chinese.description == "头"
    assert list(chinese._options_values) == list(english._options_values)
    assert chinese.value == english.value

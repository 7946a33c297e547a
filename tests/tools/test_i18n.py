"""The translation catalogues (tools/i18n.py): units, pass-through checks, po, build, and the sync
test that keeps every catalogue under locale/ in step with the English notebooks."""

# ruff: noqa: RUF001  (Chinese text is written with full-width punctuation: ，：；)

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests import ROOT
from tools import i18n
from tools.i18n import (
    CatalogueError,
    Piece,
    audit,
    build,
    catalogue_path,
    check_translation,
    join,
    read_catalogue,
    split_markdown,
    units_of,
    update_catalogue,
    write_catalogue,
)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

INTRO = """# Toy attention

Scores $s = q \\cdot k$ go through `softmax`,
see [the paper](https://arxiv.org/abs/1706.03762).

- first item
- second item, which goes on
  over two lines"""
TABLE = """| symbol | meaning |
|---|---|
| $H$ | number of heads |
| `x` | $y$ |"""
CODE_AND_MATH = """Run this:

```python
print("not a unit")
```

$$
z = \\sum_i \\alpha_i x_i
$$
"""
CAPTION = "Heatmap of the weights, queries as rows and keys as columns."
CODE = "import torch\nprint(torch.ones(2))"

# A complete toy catalogue: English -> Chinese, with every formula, code span and link target kept.
CHINESE = {
    "Toy attention": "玩具注意力",
    "Scores $s = q \\cdot k$ go through `softmax`,\nsee [the paper](https://arxiv.org/abs/1706.03762).": (
        "分数 $s = q \\cdot k$ 经过 `softmax`，\n见[论文](https://arxiv.org/abs/1706.03762)。"
    ),
    "first item": "第一项",
    "second item, which goes on\nover two lines": "第二项，\n跨两行",
    "| symbol | meaning |": "| 符号 | 含义 |",
    "| $H$ | number of heads |": "| $H$ | 头数 |",
    "Run this:": "运行：",
    CAPTION: "权重热图，行为查询，列为键。",
}


def make_notebook(folder: Path, intro: str = INTRO, name: str = "03_toy.ipynb") -> Path:
    cells = [
        new_markdown_cell(intro, id="intro", metadata={"slideshow": {"slide_type": "slide"}}),
        new_code_cell(
            CODE,
            id="code-1",
            execution_count=1,
            metadata={"caption": CAPTION, "tags": ["nbval-ignore-output"]},
            outputs=[new_output("stream", text="tensor([1., 1.])\n")],
        ),
        new_markdown_cell(TABLE, id="table", metadata={"tags": ["reasoning"]}),
        new_markdown_cell(CODE_AND_MATH, id="code-and-math"),
    ]
    path = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(
        new_notebook(
            cells=cells,
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        ),
        path,
    )
    return path


def translate_all(path: Path, table: dict[str, str] = CHINESE) -> None:
    catalog = read_catalogue(path)
    for message in catalog:
        if message.id:
            message.string = table[message.id]
    write_catalogue(catalog, path)


def entries(path: Path) -> dict[tuple[str, str], object]:
    return {(m.context, m.id): m for m in read_catalogue(path) if m.id}


# --- units ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_split_then_join_reproduces_every_notebooks_markdown(path):
    nb = nbformat.read(path, as_version=4)
    markdown = [cell for cell in nb.cells if cell.cell_type == "markdown"]
    assert markdown
    for cell in markdown:
        parts = split_markdown(cell.source)
        assert join(parts) == cell.source, f"cell {cell.id}"
        # and every unit really is replaced: a marker in each makes a different cell
        pieces = [p for p in parts if isinstance(p, Piece)]
        if pieces:
            assert join(parts, ["@@"] * len(pieces)) != cell.source
    assert len(NOTEBOOKS) == 14


def test_units_are_headings_paragraphs_items_and_rows_and_the_rest_passes_through():
    source = INTRO + "\n\n" + TABLE + "\n\n" + CODE_AND_MATH
    parts = split_markdown(source)
    pieces = [(p.kind, p.text) for p in parts if isinstance(p, Piece)]
    assert pieces == [
        ("heading", "Toy attention"),
        (
            "paragraph",
            "Scores $s = q \\cdot k$ go through `softmax`,\nsee [the paper](https://arxiv.org/abs/1706.03762).",
        ),
        ("list item", "first item"),
        ("list item", "second item, which goes on\nover two lines"),
        ("table row", "| symbol | meaning |"),
        ("table row", "| $H$ | number of heads |"),
        ("paragraph", "Run this:"),
    ]
    passed = "".join(p for p in parts if isinstance(p, str))
    assert "# " in passed and "\n- " in passed  # the markers are not part of the units
    assert "|---|---|" in passed and "| `x` | $y$ |" in passed  # the rule, and a row with no words
    assert '```python\nprint("not a unit")\n```' in passed
    assert "$$\nz = \\sum_i \\alpha_i x_i\n$$" in passed
    item = next(p for p in parts if isinstance(p, Piece) and p.text.startswith("second"))
    assert item.indent == "  "
    assert item.render("甲\n乙") == "甲\n  乙"  # a continuation line keeps the item's indentation
    with pytest.raises(ValueError, match="expected 7 translations, one per unit, got 1"):
        join(parts, ["甲"])


def test_the_same_sentence_twice_in_a_cell_is_two_entries_and_a_caption_is_one():
    cells = [
        new_markdown_cell("| a | b |\n|---|---|\n| same | row |\n| same | row |", id="t"),
        new_markdown_cell("| same | row |", id="u"),
        new_code_cell("x = 1", id="c", metadata={"caption": "A figure of x."}),
        new_code_cell("y = 2", id="d"),
    ]
    units = units_of(new_notebook(cells=cells))
    assert [u.context for u in units] == ["t", "t", "t#2", "u", "c#alt"]
    assert units[-1].kind == "alt text" and units[-1].msgid == "A figure of x."


def test_repeated_or_missing_cell_ids_are_refused():
    # plain dicts: nbformat's own constructors would repair the ids
    with pytest.raises(ValueError, match=r"unique cell ids, got \['a'\]"):
        units_of({"cells": [new_markdown_cell("One", id="a"), new_markdown_cell("Two", id="a")]})
    cell = new_markdown_cell("One")
    del cell["id"]
    with pytest.raises(ValueError, match="expected every cell to have an id"):
        units_of({"cells": [cell]})


# --- pass-through checks -------------------------------------------------------------------------

ENGLISH = (
    "The score $s_i = q \\cdot k_i$ comes from `attention_scores(q, k)`; see [ch. 3](https://x.org/a(b))."
)


def test_a_faithful_translation_passes():
    chinese = "分数 $s_i = q \\cdot k_i$ 来自 `attention_scores(q, k)`；见[第 3 章](https://x.org/a(b))。"
    assert check_translation(ENGLISH, chinese) == []


def test_a_dropped_formula_is_caught():
    problems = check_translation(
        ENGLISH, "分数来自 `attention_scores(q, k)`；见[第 3 章](https://x.org/a(b))。"
    )
    assert problems == ["formulas: expected ['$s_i = q \\\\cdot k_i$'], got []"]


def test_a_changed_code_span_is_caught():
    problems = check_translation(
        ENGLISH, "分数 $s_i = q \\cdot k_i$ 来自 `注意力分数(q, k)`；见[第 3 章](https://x.org/a(b))。"
    )
    assert problems == ["code spans: expected ['`attention_scores(q, k)`'], got ['`注意力分数(q, k)`']"]


def test_a_changed_link_target_is_caught():
    problems = check_translation(
        ENGLISH, "分数 $s_i = q \\cdot k_i$ 来自 `attention_scores(q, k)`；见[第 3 章](https://x.org/zh)。"
    )
    assert problems == ["link targets: expected ['https://x.org/a(b)'], got ['https://x.org/zh']"]


def test_structure_breaking_translations_are_caught():
    assert check_translation("<details><summary>Show</summary>", "<details>显示") == [
        "HTML tags: expected ['<details>', '<summary>', '</summary>'], got ['<details>']"
    ]
    assert check_translation("$$x$$ and $y$", "$$x$$ 和 $$y$$")[0].startswith(
        "display formulas: expected ['$$x$$']"
    )
    assert check_translation("| a | b |", "| 甲 乙 |") == ["table row: expected 3 '|', got 2"]
    assert check_translation("| $|x|$ | b |", "| $|x|$ | 乙 |") == []  # a pipe inside maths is no cell
    assert check_translation("One line", "一\n行") == ["expected one line, got 2"]
    assert check_translation("Two\nlines", "两\n\n行") == [
        "expected no blank line (it would end the paragraph), got one"
    ]
    assert check_translation("Text", " 文本") == ["expected no white space where the English starts, got ' '"]


# --- po ------------------------------------------------------------------------------------------


def test_po_creates_a_catalogue_with_one_empty_entry_per_unit(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path / "locale")
    assert path == tmp_path / "locale" / "zh_CN" / "notebooks" / "03_toy.po"
    found = entries(path)
    assert sorted(found) == sorted(
        (u.context, u.msgid) for u in units_of(nbformat.read(notebook, as_version=4))
    )
    assert len(found) == len(CHINESE) and all(not m.string for m in found.values())
    text = path.read_text(encoding="utf-8")
    assert "#. cell intro, list item\n" in text and '#: 03_toy.ipynb\nmsgctxt "code-1#alt"' in text
    # no re-wrapping: a long line stays one line of the file, the English's line breaks stay
    assert f'msgid "{CAPTION}"' in text
    assert 'msgid ""\n"second item, which goes on\\n"\n"over two lines"\n' in text


def test_po_twice_changes_nothing(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path)
    translate_all(path)
    first = path.read_bytes()
    update_catalogue(notebook, "zh_CN", tmp_path)
    assert path.read_bytes() == first


def test_po_on_a_changed_paragraph_marks_exactly_that_entry_fuzzy(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path)
    translate_all(path)
    old = "second item, which goes on\nover two lines"
    new = "second item, which goes on\nover three lines"
    make_notebook(tmp_path / "nb", INTRO.replace("over two lines", "over three lines"))
    update_catalogue(notebook, "zh_CN", tmp_path)
    after = entries(path)
    fuzzy = [m for m in after.values() if m.fuzzy]
    assert [(m.context, m.id) for m in fuzzy] == [("intro", new)]
    assert fuzzy[0].string == CHINESE[old] and fuzzy[0].previous_id == [old]
    assert all(m.string == CHINESE[m.id] for m in after.values() if not m.fuzzy)
    assert len(after) == len(CHINESE) and not read_catalogue(path).obsolete
    # the previous English survives another po run, while the entry stays fuzzy
    update_catalogue(notebook, "zh_CN", tmp_path)
    assert entries(path)[("intro", new)].previous_id == [old]
    assert '#| msgid ""\n#| "second item, which goes on\\n"\n#| "over two lines"\n' in path.read_text("utf-8")


def test_a_removed_unit_becomes_obsolete_if_it_was_translated(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path)
    translate_all(path)
    make_notebook(tmp_path / "nb", INTRO.replace("\n- first item", ""))
    update_catalogue(notebook, "zh_CN", tmp_path)
    catalog = read_catalogue(path)
    assert [(m.context, m.id, m.string) for m in catalog.obsolete.values()] == [
        ("intro", "first item", "第一项")
    ]
    assert ("intro", "first item") not in entries(path)
    assert '\n#~ msgctxt "intro"\n#~ msgid "first item"\n' in path.read_text("utf-8")
    assert audit(notebook, "zh_CN", tmp_path).obsolete == ["intro: 'first item'"]


def test_a_removed_untranslated_unit_leaves_nothing_behind(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path)
    make_notebook(tmp_path / "nb", INTRO.replace("\n- first item", ""))
    update_catalogue(notebook, "zh_CN", tmp_path)
    assert not read_catalogue(path).obsolete and len(entries(path)) == len(CHINESE) - 1


def test_po_without_notebooks_updates_only_the_catalogues_that_exist(tmp_path, capsys):
    folder = tmp_path / "nb"
    first, second = make_notebook(folder, name="01_a.ipynb"), make_notebook(folder, name="02_b.ipynb")
    locale = tmp_path / "locale"
    assert i18n.main(["po", "--locale-dir", str(locale), str(first)]) == 0
    path = catalogue_path(first, "zh_CN", locale)
    translate_all(path)
    make_notebook(folder, INTRO.replace("first item", "first entry"), name="01_a.ipynb")
    assert i18n.main(["po", "--locale-dir", str(locale), str(folder)]) == 0
    assert ("intro", "first entry") in entries(path)
    assert not catalogue_path(second, "zh_CN", locale).exists()
    assert i18n.main(["status", "--locale-dir", str(locale), str(folder)]) == 0
    table = capsys.readouterr().out
    assert "| 01_a | 8 | 7 | 1 | 0 | 87.5 |" in table
    assert "| 02_b | 8 | no catalogue | | | 0.0 |" in table


# --- build ---------------------------------------------------------------------------------------


def test_build_with_a_complete_catalogue_translates_the_prose_and_keeps_the_code(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    translate_all(update_catalogue(notebook, "zh_CN", tmp_path / "locale"))
    with pytest.raises(CatalogueError, match="no code cell has the set-up line"):
        build([notebook], tmp_path / "zh", "zh_CN", tmp_path / "locale")  # the language is set there
    [written] = build([notebook], tmp_path / "zh", "zh_CN", tmp_path / "locale", feedback=False)
    english, chinese = (json.loads(p.read_text(encoding="utf-8")) for p in (notebook, written))
    assert english["metadata"] == chinese["metadata"]
    assert [c["id"] for c in english["cells"]] == [c["id"] for c in chinese["cells"]]
    for en, zh in zip(english["cells"], chinese["cells"], strict=True):
        assert en["cell_type"] == zh["cell_type"]
        if en["cell_type"] == "code":
            assert json.dumps(zh["source"]) == json.dumps(en["source"])
            assert json.dumps(zh["outputs"]) == json.dumps(en["outputs"])
            assert zh["execution_count"] == en["execution_count"]
            assert {**zh["metadata"], "caption": CAPTION} == en["metadata"]
            assert zh["metadata"]["caption"] == CHINESE[CAPTION]
        else:
            assert zh["metadata"] == en["metadata"]  # cell tags and slide types included
    sources = ["".join(c["source"]) for c in chinese["cells"]]
    assert sources[0] == (  # a line break between two Chinese characters would show as a space: joined
        "# 玩具注意力\n\n分数 $s = q \\cdot k$ 经过 `softmax`，见[论文](https://arxiv.org/abs/1706.03762)。"
        "\n\n- 第一项\n- 第二项，跨两行"
    )
    assert sources[2] == "| 符号 | 含义 |\n|---|---|\n| $H$ | 头数 |\n| `x` | $y$ |"
    assert sources[3] == CODE_AND_MATH.replace("Run this:", "运行：")


@pytest.mark.parametrize(
    ("spoil", "expected"),
    [
        ("missing", r"03_toy.po: missing \(run `make po`\): cell intro \(list item\) 'first item'"),
        ("untranslated", r"03_toy.po: untranslated: cell intro \(list item\) 'first item'"),
        ("fuzzy", r"03_toy.po: fuzzy: cell intro \(list item\) 'first item'"),
        ("broken", r"03_toy.po: formulas: expected \['\$H\$'\], got \[\]: cell table \(table row\)"),
    ],
)
def test_build_refuses_an_incomplete_catalogue_naming_the_unit(tmp_path, spoil, expected):
    notebook = make_notebook(tmp_path / "nb")
    path = update_catalogue(notebook, "zh_CN", tmp_path)
    translate_all(path)
    catalog = read_catalogue(path)
    if spoil == "missing":
        catalog.delete("first item", context="intro")
    elif spoil == "untranslated":
        catalog.get("first item", context="intro").string = ""
    elif spoil == "fuzzy":
        catalog.get("first item", context="intro").flags.add("fuzzy")
    else:
        catalog.get("| $H$ | number of heads |", context="table").string = "| H | 头数 |"
    write_catalogue(catalog, path)
    with pytest.raises(CatalogueError, match=expected):
        build([notebook], tmp_path / "zh", "zh_CN", tmp_path)
    assert not (tmp_path / "zh").exists()


def test_build_refuses_a_notebook_without_a_catalogue_and_never_writes_into_notebooks(tmp_path, capsys):
    notebook = make_notebook(tmp_path / "nb")
    with pytest.raises(CatalogueError, match=r"03_toy\.ipynb: no catalogue"):
        build([notebook], tmp_path / "zh", "zh_CN", tmp_path)
    with pytest.raises(ValueError, match="other than the English notebooks' own"):
        build(NOTEBOOKS[:1], ROOT / "notebooks", "zh_CN", tmp_path)
    with pytest.raises(ValueError, match="other than the English notebooks' own"):
        build([notebook], tmp_path / "nb", "zh_CN", tmp_path)
    assert (
        i18n.main(["build", "--locale-dir", str(tmp_path), "--out", str(tmp_path / "zh"), str(notebook)]) == 1
    )
    assert "refused. 1 units cannot be translated" in capsys.readouterr().err


# --- the catalogues in the repository ------------------------------------------------------------


def test_the_sync_check_catches_a_catalogue_out_of_step(tmp_path):
    notebook = make_notebook(tmp_path / "nb")
    translate_all(update_catalogue(notebook, "zh_CN", tmp_path))
    assert audit(notebook, "zh_CN", tmp_path).out_of_step() == []
    make_notebook(
        tmp_path / "nb", INTRO.replace("first item", "first entry").replace("\n- second item", "\n- 2nd")
    )
    stale = audit(notebook, "zh_CN", tmp_path).out_of_step()  # the English changed, po has not run
    assert any("no entry (run `make po`): cell intro (list item) 'first entry'" in line for line in stale)
    assert any(
        "entry for English that is gone (run `make po`): intro: 'first item'" in line for line in stale
    )
    update_catalogue(notebook, "zh_CN", tmp_path)
    fuzzy = audit(notebook, "zh_CN", tmp_path).out_of_step()
    assert [line.split(": ", 1)[1] for line in fuzzy] == [
        "fuzzy (the English changed): cell intro (list item) 'first entry'",
        "fuzzy (the English changed): cell intro (list item) '2nd, which goes on over two lines'",
    ]


TERMS = i18n.glossary_terms()


def test_the_glossary_flags_a_forbidden_form_only_where_the_english_has_the_term():
    """docs/glossary.md's rule 7: a form after `not:` is flagged where the English of the unit
    has the term (any case, -ise/-ize, plural), and nowhere else, and never inside code."""
    assert len(TERMS) > 50
    (problem,) = i18n.glossary_problems("The attention scores", "注意力得分", TERMS)
    assert "attention score" in problem and "注意力分数" in problem and "注意力得分" in problem
    assert i18n.glossary_problems("The attention scores", "注意力分数", TERMS) == []
    assert i18n.glossary_problems("the scores", "注意力得分", TERMS) == []  # no term in the English
    assert i18n.glossary_problems("attention scores", "`注意力得分`", TERMS) == []  # code passes


def test_every_catalogue_is_complete_and_current():
    """Every catalogue under locale/ has an entry for each unit of its notebook's English, none
    fuzzy, none left from English that changed or went, and every translation keeps its formulas,
    code spans, link targets and HTML tags. Every notebook has a catalogue for each language
    under locale/, and every entry is translated: an English prose change lands with its
    translation, or `make test` fails (`make po` marks what changed for the translator). No
    translation uses a form docs/glossary.md forbids for a term its English has."""
    catalogues = sorted((ROOT / "locale").glob("*/notebooks/*.po"))
    problems, coverage = [], []
    for path in catalogues:
        lang, notebook = path.parts[-3], ROOT / "notebooks" / f"{path.stem}.ipynb"
        if not notebook.exists():
            problems.append(f"{path.relative_to(ROOT)}: no notebook {notebook.relative_to(ROOT)}")
            continue
        a = audit(notebook, lang, ROOT / "locale")
        problems += a.out_of_step()
        problems += [f"{path.relative_to(ROOT)}: untranslated: {i18n._describe(u)}" for u in a.untranslated]
        problems += [
            f"{path.relative_to(ROOT)}: cell {m.context}: {problem}"
            for m in i18n.read_catalogue(path)
            if m.id and m.string
            for problem in i18n.glossary_problems(m.id, m.string, TERMS)
        ]
        coverage.append(f"{path.relative_to(ROOT)}: {len(a.translated)}/{len(a.units)} units translated")
    covered = {(p.parts[-3], p.stem) for p in catalogues}
    langs = sorted({lang for lang, _ in covered})
    without = {lang: [nb.stem for nb in NOTEBOOKS if (lang, nb.stem) not in covered] for lang in langs}
    print("\n".join(coverage) or "no catalogue under locale/ yet")
    problems += [f"{lang}: no catalogue for {names}" for lang, names in without.items() if names]
    assert not problems, "catalogues out of step with the English:\n  " + "\n  ".join(problems)


def test_a_numbered_line_inside_a_paragraph_does_not_start_a_list_item():
    """CommonMark: only "1." or "1)" interrupts a paragraph; a wrapped sentence whose next line
    happens to begin "16) = ..." is one paragraph, as the notebook renders it. After a list item
    any number starts the next item."""
    paragraph = "three layers, 8 x (96 x 16 +\n16) = 37,248 parameters.\n"
    assert [p.kind for p in i18n.split_markdown(paragraph) if isinstance(p, i18n.Piece)] == ["paragraph"]
    items = "1. one\n2. two\n16) sixteen\n"
    assert [p.kind for p in i18n.split_markdown(items) if isinstance(p, i18n.Piece)] == ["list item"] * 3
    interrupting = "a sentence\n1. a list\n"
    assert [p.kind for p in i18n.split_markdown(interrupting) if isinstance(p, i18n.Piece)] == [
        "paragraph",
        "list item",
    ]


def test_a_translation_whose_bold_does_not_render_is_caught():
    """CommonMark closes ``**`` only where it is "right-flanking": after full-width punctuation
    and before a Chinese character it is not, and the reader sees the asterisks."""
    assert check_translation("**Why.** Because", "**原因**：因为") == []
    (problem,) = check_translation("**Why.** Because", "**原因。**因为")
    assert "bold" in problem and "outside the markers" in problem
    assert check_translation("`2 ** 3` is 8", "`2 ** 3` 等于 8") == []  # code is not Markdown
    (problem,) = check_translation("*Optional.* Read on", "*可选。*读下去")  # italics alike
    assert "italics" in problem
    assert check_translation("*Optional.* Read on", "*可选*。读下去") == []

"""The student edition strips exactly the solutions and never overwrites a student's work."""

from __future__ import annotations

import ast
import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests import ROOT
from tools.notes import LABELS, OPENS
from tools.student import REASONING_PROMPT, REASONING_START, build, stub_source

SOLUTION = '''import torch

def my_causal_mask(size: int) -> torch.Tensor:
    """(T, T) bool, True = may attend."""
    # the lower triangle, diagonal included
    return torch.ones(size, size, dtype=torch.bool).tril()'''


def make_notebook(folder: Path, name: str = "03_demo.ipynb") -> Path:
    cells = [
        new_markdown_cell("# Demo"),
        new_code_cell("import attnlib\nfrom attnlib import check", execution_count=1),
        new_code_cell(SOLUTION, execution_count=2, metadata={"tags": ["solution"]}),
        new_code_cell(
            "check.causal_mask(my_causal_mask)",
            execution_count=3,
            outputs=[new_output("execute_result", {"text/plain": "pass"}, execution_count=3)],
        ),
        new_code_cell("answer = 6 * 5 // 2", execution_count=4, metadata={"tags": ["solution"]}),
        new_code_cell("print(1 + 1)", execution_count=5, outputs=[new_output("stream", text="2\n")]),
    ]
    path = folder / name
    nbformat.write(
        new_notebook(
            cells=cells,
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        ),
        path,
    )
    return path


def test_stub_keeps_signature_and_docstring_and_drops_the_body():
    stub = stub_source(SOLUTION)
    assert "def my_causal_mask(size: int) -> torch.Tensor:" in stub
    assert '"""(T, T) bool, True = may attend."""' in stub
    assert "tril" not in stub and "lower triangle" not in stub
    assert "raise NotImplementedError" in stub
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError):
        namespace["my_causal_mask"](3)


def test_predictions_become_ellipsis():
    assert stub_source("answer = 6 * 5 // 2") == "answer = ...  # your prediction"


def test_only_solutions_change(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    report = build(tmp_path / "src", tmp_path / "student")
    assert report["written"] == ["03_demo.ipynb"]
    original = json.loads((tmp_path / "src" / "03_demo.ipynb").read_text())["cells"]
    student = json.loads((tmp_path / "student" / "03_demo.ipynb").read_text())["cells"]
    assert len(student) == len(original)
    for before, after in zip(original, student, strict=True):
        if "solution" in before["metadata"].get("tags", []):
            assert after["source"] != before["source"] and after["outputs"] == []
            assert after["metadata"]["tags"] == ["exercise"]
        elif "check." in "".join(before["source"]):
            assert after["source"] == before["source"] and after["outputs"] == []
        else:
            assert after == before


def test_a_stubbed_exercise_says_not_yet(tmp_path):
    from attnlib import check

    namespace: dict = {}
    exec(stub_source(SOLUTION), namespace)
    verdict = check.run_check("demo", namespace["my_causal_mask"], lambda t: t, [check.Case("T=2", (2,))])
    assert verdict.status == "todo" and repr(verdict).startswith("Not yet: demo: replace")


def test_never_overwrites_an_edited_notebook(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "student")
    target = tmp_path / "student" / "03_demo.ipynb"
    assert build(tmp_path / "src", tmp_path / "student")["unchanged"] == ["03_demo.ipynb"]

    edited = target.read_text().replace("Exercise: replace this line", "my own attempt")
    target.write_text(edited)
    out = subprocess.run(
        [sys.executable, "-m", "tools.student", str(tmp_path / "src"), str(tmp_path / "student")],
        cwd=ROOT,  # as `make student` runs it
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "you have changed it" in out and "03_demo.ipynb" in out
    assert target.read_text() == edited

    target.unlink()  # deleting it asks for a fresh copy
    assert build(tmp_path / "src", tmp_path / "student")["written"] == ["03_demo.ipynb"]


def test_a_file_not_written_by_the_tool_is_kept(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "03_demo.ipynb").write_text("{}")
    assert build(tmp_path / "src", tmp_path / "student")["kept"] == ["03_demo.ipynb"]
    assert (tmp_path / "student" / "03_demo.ipynb").read_text() == "{}"


def _text(cell: dict) -> str:
    """A cell's source and the text of its outputs."""
    parts = ["".join(cell.get("source", ""))]
    for output in cell.get("outputs", []):
        parts.append("".join(output.get("text", "")))
        parts += ["".join(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def _kind(cell: dict) -> str:
    source = "".join(cell["source"]).lstrip()
    if cell["metadata"].get("slideshow", {}).get("slide_type") == "notes":
        return "notes"
    if "solution" in cell["metadata"].get("tags", []):
        return "solution"
    if "reasoning" in cell["metadata"].get("tags", []):
        return "reasoning"
    # the English headings, and the Chinese edition's ("### 练习 1.1——...", "## 练习")
    if cell["cell_type"] == "markdown" and source.startswith(("### Exercise", "### 练习")):
        return "statement"
    if cell["cell_type"] == "markdown" and re.match(r"## (Exercises|练习)\s", source + "\n"):
        return "intro"
    if cell["cell_type"] == "markdown" and source.startswith("## "):
        return "heading"
    if cell["cell_type"] == "code" and re.search(r"\bcheck\.\w+\(", source):
        return "check"
    return "other"


def _answers(cells: list[dict]) -> tuple[set[str], str]:
    """What gives an exercise away, found in the source notebook without tools.student, and
    the public text it is told apart from.

    Public: every cell before the Exercises heading but the speaker notes, the Exercises
    intro, each exercise's statement, setup before the first statement, check cells' sources
    and the References. Answers: the lines of every solution that its stub drops, the values
    of the predictions (``name = value``, also written with thousands separators), and the
    lines and numbers of speaker notes and of anything after an exercise's check; each only
    where the public text does not hold it anyway.
    """
    public, secret, values = [], [], set()
    exercises = False
    after_check = False  # past an exercise's check, before the next heading
    for cell in cells:
        kind = _kind(cell)
        source = "".join(cell["source"])
        exercises = exercises or kind == "intro"
        after_check = (after_check or kind == "check") and kind not in ("statement", "heading")
        if kind == "solution":
            stub = {line.strip() for line in stub_source(source).splitlines()}
            secret += [line for line in source.splitlines() if line.strip() not in stub]
            for node in ast.parse(source).body:
                if isinstance(node, ast.Assign):
                    value = eval(
                        compile(ast.Expression(node.value), "<answer>", "eval")
                    )  # literals, arithmetic
                    values.add(repr(value))
                    if isinstance(value, int) and abs(value) >= 1000:
                        values.add(f"{value:,}")
        elif kind == "notes" or kind == "reasoning" or (after_check and kind == "other"):
            text = _text(cell)
            secret += text.splitlines()
            values.update(re.findall(r"\d[\d,.]*\d", text))
        elif kind == "check":
            public.append(source)
        elif not exercises or kind in ("intro", "statement", "heading", "other"):
            public.append(_text(cell))
    public_text = "\n".join(public)
    lines = {line.strip() for line in secret if len(line.strip()) >= 8}
    found = {line for line in lines if line not in public_text}
    found |= {v for v in values if len(v) >= 3 and v not in public_text}
    return found, public_text


@pytest.fixture(scope="module")
def series_edition(tmp_path_factory):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks:
        pytest.skip("no notebooks yet")
    target = tmp_path_factory.mktemp("student")
    report = build(ROOT / "notebooks", target)
    assert len(report["written"]) == len(notebooks)
    return [
        (json.loads(p.read_text())["cells"], json.loads((target / p.name).read_text())["cells"], p.name)
        for p in notebooks
    ]


def _leaks(original: list[dict], student: list[dict]) -> tuple[list[str], str, int]:
    """The answers of ``original`` that its student edition ``student`` still shows, the
    edition's text, and how many answers were looked for; no speaker notes may be left."""
    answers, _ = _answers(original)
    text = "\n".join(_text(c) for c in student)
    assert not any(c["metadata"].get("slideshow", {}).get("slide_type") == "notes" for c in student)
    return sorted(a for a in answers if a in text), text, len(answers)


def test_no_answer_reaches_the_student_edition(series_edition):
    checked = 0
    for original, student, name in series_edition:
        leaked, _, n = _leaks(original, student)
        assert leaked == [], f"{name}: the student edition gives away {leaked[:5]}"
        checked += n
    assert checked >= 50 * len(series_edition) // 2  # the scan has something to look for


def test_the_scan_finds_what_a_plain_copy_would_give_away(series_edition):
    original = next(e[0] for e in series_edition if e[2].startswith("05"))
    answers, _ = _answers(original)
    plain = "\n".join(_text(c) for c in original)
    assert answers and all(a in plain for a in answers)
    assert "53,760" in answers  # exercise 5.4's answer, quoted in the speaker notes


def test_everything_else_is_the_same_cells(series_edition):
    for original, student, name in series_edition:
        by_id = {c["id"]: c for c in student}
        assert len(by_id) == len(student)
        solutions = [c for c in original if _kind(c) == "solution"]
        assert len(solutions) >= 2, f"{name}: expected at least 2 exercises"
        exercises = False
        last_check_seen = False
        for cell in original:
            kind = _kind(cell)
            exercises = exercises or kind == "intro"
            last_check_seen = (last_check_seen or kind == "check") and kind not in ("statement", "heading")
            after = by_id.get(cell["id"])
            if after is None:  # dropped: speaker notes, or what follows an exercise's check
                assert kind == "notes" or (exercises and last_check_seen and kind == "other"), (
                    name,
                    cell["id"],
                )
            elif kind == "solution":
                assert after["metadata"]["tags"] == ["exercise"] and after["outputs"] == []
                assert after["source"] == stub_source("".join(cell["source"]))
            elif kind == "check":
                assert after["source"] == cell["source"] and after["outputs"] == []
            elif kind == "reasoning":  # the model reasoning gives way to the prompt
                assert "".join(cell["source"]).startswith(REASONING_START), (name, cell["id"])
                assert after["source"] == REASONING_PROMPT and after["metadata"] == cell["metadata"]
            elif kind == "intro":
                text = "".join(after["source"])
                assert "tagged `exercise`" in text and "solution" not in text, name
            else:  # runs as before: the very same cell, outputs included
                assert after == cell, (name, cell["id"])
        stubs = [c for c in student if "exercise" in c["metadata"].get("tags", [])]
        assert len(stubs) == len(solutions)


@pytest.mark.publish
def test_a_student_notebook_runs_top_to_bottom(series_edition, tmp_path):
    """The student edition of notebook 01 runs: every check says "not yet" instead of failing."""
    from tools.kernels import notebook_client

    nb = nbformat.read(next((ROOT / "notebooks").glob("01_*.ipynb")), as_version=4)
    from tools.student import student_notebook

    nb = nbformat.from_dict(student_notebook(nb))
    notebook_client(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
    ).execute()
    checks = [c for c in nb.cells if _kind(c) == "check"]
    assert checks and all(re.search(r"^Not yet: ", _text(c), re.M) for c in checks)  # the word starts it


def test_make_slides_builds_a_deck(tmp_path):
    # One notebook (NB=...) keeps this test short; tests/tools/test_browser.py builds and opens all.
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks or shutil.which("make") is None:
        pytest.skip("no notebooks yet")
    subprocess.run(
        ["make", "-s", "slides", f"NB={notebooks[0]}", f"SLIDES_DIR={tmp_path}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    decks = sorted(p.name for p in tmp_path.glob("*.slides.html"))
    assert decks == [notebooks[0].stem + ".slides.html"]
    html = (tmp_path / decks[0]).read_text()
    assert "reveal" in html.lower() and 'class="slides"' in html


def _deck_text(html: str) -> str:
    """The text a deck shows or holds (speaker notes included), without its markup."""
    from html import unescape

    body = html[html.index('<div class="slides">') :]
    return unescape(re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S)))


def _class_deck_secrets(cells: list[dict]) -> set[str]:
    """What a class deck must not show: the answer scan of :func:`_answers` (the lesson's
    speaker notes aside, which the deck keeps for the presenter) and the solved checks' output."""
    start = next((i for i, c in enumerate(cells) if _kind(c) == "intro"), len(cells))
    kept = [c for i, c in enumerate(cells) if not (_kind(c) == "notes" and i < start)]
    answers, public = _answers(kept)
    lesson_notes = "\n".join(_text(c) for i, c in enumerate(cells) if _kind(c) == "notes" and i < start)
    answers = {a for a in answers if a not in lesson_notes}  # the notes' label, say
    for cell in cells:
        if _kind(cell) == "check":
            answers |= {
                line.strip()
                for line in _text(cell).splitlines()[1:]
                if len(line.strip()) >= 8 and line.strip() not in public
            }
    return answers


@pytest.fixture(scope="module")
def class_decks(tmp_path_factory):
    from tools.slides import build_decks

    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks:
        pytest.skip("no notebooks yet")
    decks = build_decks(ROOT / "notebooks", tmp_path_factory.mktemp("slides"))
    return [
        (json.loads(p.read_text())["cells"], _deck_text(d.read_text()), p.name)
        for p, d in zip(notebooks, decks, strict=True)
    ]


def test_no_solution_reaches_a_class_deck(class_decks):
    """The decks for class (make slides) show each exercise's text and stub, as the student
    edition does: no solution line, prediction value, solved check output, note on the answers."""
    checked = 0
    for cells, text, name in class_decks:
        secrets = _class_deck_secrets(cells)
        leaked = sorted(s for s in secrets if s in text)
        assert leaked == [], f"{name}: the class deck gives away {leaked[:5]}"
        stubs = [stub_source("".join(c["source"])) for c in cells if _kind(c) == "solution"]
        assert all(line.strip() in text for stub in stubs for line in stub.splitlines()), name
        assert "Instructor deck" not in text
        checked += len(secrets)
    assert checked >= 50 * len(class_decks) // 2  # the scan has something to look for


def test_the_instructor_deck_has_the_solutions(tmp_path):
    from tools.slides import SOLUTIONS_BANNER, build_decks

    path = next((ROOT / "notebooks").glob("05_*.ipynb"))
    (deck,) = build_decks(path, tmp_path, solutions=True)
    text = _deck_text(deck.read_text())
    cells = json.loads(path.read_text())["cells"]
    solutions = [
        line.strip() for c in cells if _kind(c) == "solution" for line in "".join(c["source"]).splitlines()
    ]
    assert solutions and all(line in text for line in solutions)
    assert "53,760" in text  # exercise 5.4's answer, in the speaker notes
    assert text.index(SOLUTIONS_BANNER) < text.index("Multi-head")  # on the title slide
    assert deck.parent.name != "slides"


# --- the Chinese student edition (make student STUDENT_LANG=zh_CN) --------------------------------

ZH = "zh_CN"
SET_LANGUAGE = f'attnlib.set_language("{ZH}")'
ZH_REASONING_START = "**原因**："  # noqa: RUF001 (as the catalogues translate "**Why.** ")


@pytest.fixture(scope="module")
def zh_edition(tmp_path_factory, series_edition):
    """Per notebook: the Chinese notebook (tools.i18n's build, as make zh writes it), its student
    edition, the English student edition, and the name."""
    from tools import i18n

    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    zh_dir = tmp_path_factory.mktemp("zh")
    i18n.build(notebooks, zh_dir, ZH)
    target = tmp_path_factory.mktemp("student-zh")
    report = build(zh_dir, target, ZH)
    assert len(report["written"]) == len(notebooks) == 14
    english = {name: student for _, student, name in series_edition}
    return [
        (
            json.loads((zh_dir / p.name).read_text())["cells"],
            json.loads((target / p.name).read_text())["cells"],
            english[p.name],
            p.name,
        )
        for p in notebooks
    ]


def test_no_answer_reaches_the_chinese_student_edition(zh_edition):
    checked = 0
    for original, student, _, name in zh_edition:
        leaked, text, n = _leaks(original, student)
        assert leaked == [], f"{name}: the Chinese student edition gives away {leaked[:5]}"
        assert LABELS[ZH] not in text and OPENS[ZH] not in text, name  # the notes' label and wrapper
        checked += n
    assert checked >= 50 * len(zh_edition) // 2  # the scan has something to look for


def test_the_chinese_scan_finds_what_a_plain_copy_would_give_away(zh_edition):
    original = next(e[0] for e in zh_edition if e[3].startswith("05"))
    answers, _ = _answers(original)
    plain = "\n".join(_text(c) for c in original)
    assert answers and all(a in plain for a in answers)
    assert "53,760" in answers  # exercise 5.4's answer, quoted in the (Chinese) speaker notes
    assert any("教师备注" in a for a in answers)  # the scan reads the notes as Chinese text


def test_the_chinese_edition_keeps_every_other_cell_of_the_chinese_notebook(zh_edition):
    from tools import ui
    from tools.student import REASONING_PROMPT

    prompt = ui.text(REASONING_PROMPT, ZH)
    assert prompt != REASONING_PROMPT and prompt.startswith("**为什么**")
    reasons = 0
    for original, student, english, name in zh_edition:
        by_id = {c["id"]: c for c in student}
        assert [c["id"] for c in student] == [c["id"] for c in english], f"{name}: other cells dropped"
        exercises = last_check_seen = False
        for cell in original:
            kind = _kind(cell)
            exercises = exercises or kind == "intro"
            last_check_seen = (last_check_seen or kind == "check") and kind not in ("statement", "heading")
            after = by_id.get(cell["id"])
            if after is None:
                assert kind == "notes" or (exercises and last_check_seen and kind == "other"), (
                    name,
                    cell["id"],
                )
            elif kind == "solution":
                assert after["metadata"]["tags"] == ["exercise"] and after["outputs"] == []
                assert after["source"] == stub_source("".join(cell["source"]))
            elif kind == "check":
                assert after["source"] == cell["source"] and after["outputs"] == []
            elif kind == "reasoning":
                assert "".join(cell["source"]).startswith(ZH_REASONING_START), (name, cell["id"])
                assert after["source"] == prompt and after["metadata"] == cell["metadata"]
                reasons += 1
            elif kind == "intro":
                text = "".join(after["source"])
                assert "`exercise`" in text and "solution" not in text, (name, text)
                assert text.startswith("## 练习\n"), name
            else:
                assert after == cell, (name, cell["id"])
    assert reasons >= 10


def test_the_chinese_reasoning_prompt_stands_where_the_english_one_does(zh_edition):
    from tools import ui
    from tools.student import REASONING_PROMPT

    prompt = ui.text(REASONING_PROMPT, ZH)
    for _, student, english, name in zh_edition:
        in_english = [c["id"] for c in english if "".join(c["source"]) == REASONING_PROMPT]
        in_chinese = [c["id"] for c in student if "".join(c["source"]) == prompt]
        assert in_chinese == in_english, name


def test_the_chinese_edition_s_code_is_the_english_edition_s(zh_edition):
    """Code cells, stubs and outputs included, are byte for byte the English student edition's,
    except the one line that sets the feedback language in the set-up cell."""
    for _, student, english, name in zh_edition:
        english_by_id = {c["id"]: c for c in english}
        code = [c for c in student if c["cell_type"] == "code"]
        setups = [c for c in code if SET_LANGUAGE in "".join(c["source"]).split("\n")]
        assert len(setups) == 1, f"{name}: one set-up cell sets the language"
        for cell in code:
            twin = copy.deepcopy(cell)
            if cell is setups[0]:
                lines = "".join(cell["source"]).split("\n")
                lines.remove(SET_LANGUAGE)
                twin["source"] = "\n".join(lines)
                assert "".join(english_by_id[cell["id"]]["source"]) == twin["source"], name
            twin["metadata"].pop("caption", None)  # translated alt text; the code is what must agree
            theirs = copy.deepcopy(english_by_id[cell["id"]])
            theirs["metadata"].pop("caption", None)
            theirs["source"] = "".join(theirs["source"])
            twin["source"] = "".join(twin["source"])
            assert twin == theirs, (name, cell["id"])


def test_the_chinese_edition_refuses_english_notebooks(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "tools.student", "notebooks", str(tmp_path / "s"), "--lang", ZH],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "expected a notebook in zh_CN" in out.stderr and "make zh" in out.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.publish
def test_a_chinese_student_notebook_runs_top_to_bottom_and_every_check_says_not_yet(zh_edition, tmp_path):
    """The Chinese student edition of notebook 01 runs; each check's verdict has status "todo"
    (read from the verdict objects, whatever words the feedback language gives them)."""
    from nbformat.v4 import new_code_cell

    from tools import i18n
    from tools.kernels import notebook_client
    from tools.student import student_notebook

    source = next((ROOT / "notebooks").glob("01_*.ipynb"))
    i18n.build([source], tmp_path, ZH)
    nb = nbformat.from_dict(student_notebook(nbformat.read(tmp_path / source.name, as_version=4)))
    nb.cells.append(
        new_code_cell(
            "import json\n"
            'print(json.dumps({n: getattr(v, "status", None) for n, v in Out.items()}))\n'
            "print(attnlib.language())"
        )
    )
    notebook_client(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
    ).execute()
    statuses_text, language = _text(nb.cells[-1]).strip().splitlines()[-2:]
    statuses = json.loads(statuses_text)
    checks = [c for c in nb.cells if _kind(c) == "check"]
    assert checks and language == ZH
    assert [statuses.get(str(c.execution_count)) for c in checks] == ["todo"] * len(checks)


def test_the_headings_and_the_intro_are_read_in_both_languages():
    from tools.student import EXERCISE_HEADING, EXERCISES_HEADING, exercise_intro, language

    assert EXERCISES_HEADING.match("## Exercises\n\nWrite ...") and EXERCISES_HEADING.match(
        "## 练习\n\n把答案"
    )
    assert EXERCISES_HEADING.match("## 练习")
    assert not EXERCISES_HEADING.match("### 练习 1.1——预测") and not EXERCISES_HEADING.match("## 练习题目")
    assert EXERCISE_HEADING.match("### 练习 1.1——预测") and EXERCISE_HEADING.match(
        "### Exercise 1.1 — predict"
    )
    assert not EXERCISE_HEADING.match("### 练习的答案")
    zh = "## 练习\n\n把答案写在标签为 `solution` 的单元格中，然后运行它下面的检查。"  # noqa: RUF001
    assert exercise_intro(zh, "exercise", "zh_CN") == zh.replace("`solution`", "`exercise`")
    assert exercise_intro(zh, "exercise") == zh  # the English rules leave Chinese alone
    english = "## Exercises\n\nEach exercise has a cell for your answer, tagged `solution`, and a check."
    assert "tagged `exercise`," in exercise_intro(english, "exercise")
    assert language({"metadata": {}}) == "en"
    assert language({"metadata": {"attnlib": {"language": "zh_CN"}}}) == "zh_CN"


def test_the_english_edition_needs_only_the_standard_library(tmp_path):
    """`python -S` (no site-packages: no Babel, no nbformat) builds it, as the workflow runs it."""
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    subprocess.run(
        [sys.executable, "-S", "-m", "tools.student", str(tmp_path / "src"), str(tmp_path / "out")],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    assert json.loads((tmp_path / "out" / "03_demo.ipynb").read_text())["cells"][2]["metadata"]["tags"] == [
        "exercise"
    ]


def test_a_folder_without_notebooks_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="expected notebooks"):
        build(tmp_path, tmp_path / "out")

"""Speaker notes are labelled and collapsed for students, and still reach every deck."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests import ROOT
from tools import notes

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NOTES = {"slideshow": {"slide_type": "notes"}}


def old_style_notebook() -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_markdown_cell("# 99 · Demo", metadata={"slideshow": {"slide_type": "slide"}}),
            new_markdown_cell("Speaker notes (about 20 minutes). Start with a question.", metadata=NOTES),
            new_code_cell("x = 1"),
            new_markdown_cell("Ask the class: why?", metadata=copy.deepcopy(NOTES)),
            new_markdown_cell(
                "## Exercises\n\nWrite your answer in the first code cell of each exercise, then run it."
            ),
        ]
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_every_notebook_follows_the_notes_convention(path):
    """A notebook that fails here: run ``python -m tools.notes notebooks/<it>.ipynb``."""
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert notes.problems(nb) == []


def test_apply_labels_collapses_and_is_idempotent():
    nb = old_style_notebook()
    assert notes.problems(nb)  # an old-style notebook is caught
    assert notes.apply(nb) is True
    assert notes.problems(nb) == []
    first, second = nb.cells[1], nb.cells[3]
    assert first.source.startswith(
        f"{notes.LABEL}\n\n{notes.OPEN}\n\n{notes.PRESENTING}\n\nAbout 20 minutes. Start"
    )
    assert second.source == f"{notes.LABEL}\n\n{notes.OPEN}\n\nAsk the class: why?\n\n{notes.CLOSE}"
    assert all(c.metadata["jupyter"]["source_hidden"] is True for c in (first, second))
    assert first.metadata["slideshow"]["slide_type"] == "notes"  # what RISE and the decks read
    assert "the cell tagged `solution`, then run it" in nb.cells[4].source
    before = nbformat.writes(nb)
    assert notes.apply(nb) is False
    assert nbformat.writes(nb) == before


def test_code_cells_as_notes_are_refused():
    nb = new_notebook(cells=[new_code_cell("print('psst')", metadata=NOTES)])
    with pytest.raises(ValueError, match="markdown"):
        notes.apply(nb)


def test_the_command_rewrites_only_what_is_needed(tmp_path, capsys):
    path = tmp_path / "99_demo.ipynb"
    nbformat.write(old_style_notebook(), path)
    assert notes.main([str(tmp_path)]) == 0
    assert "updated" in capsys.readouterr().out
    text = path.read_text()
    assert notes.main([str(path)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert path.read_text() == text


def _demo_deck(tmp_path) -> str:
    """The HTML of the deck of :func:`old_style_notebook` after the notes builder ran on it."""
    from tools.slides import build_decks

    nb = old_style_notebook()
    notes.apply(nb)
    nbformat.write(nb, tmp_path / "99_demo.ipynb")
    (deck,) = build_decks(tmp_path / "99_demo.ipynb", tmp_path / "slides")
    return deck.read_text()


def test_collapsed_notes_still_reach_the_slide_deck(tmp_path):
    html = _demo_deck(tmp_path)
    assert html.count('<aside class="notes">') == 2
    assert "Start with a question" in html and "Ask the class" in html
    assert "<details>" not in html  # the speaker view shows the notes whole


def test_an_old_presenting_paragraph_is_replaced_not_added_to():
    nb = old_style_notebook()
    old = notes.PRESENTING.replace("; the notes stay closed", "")  # the wording before this one
    nb.cells[1].source = f"{old}\n\n{notes.PRESENTING}\n\n{nb.cells[1].source}"
    assert notes.apply(nb) is True
    first = nb.cells[1].source
    assert first.count("Presenting live with RISE") == 1 and notes.PRESENTING in first
    assert "Start with a question" in first
    before = nbformat.writes(nb)
    assert notes.apply(nb) is False and nbformat.writes(nb) == before


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_rebuilding_the_notes_changes_nothing_and_says_rise_once(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    text = "\n".join(c.source for c in nb.cells if notes.is_notes(c))
    assert text.count("Presenting live with RISE") == 1 and text.count(notes.PRESENTING) == 1
    before = nbformat.writes(nb)
    assert notes.apply(nb) is False and notes.apply(nb) is False
    assert nbformat.writes(nb) == before


def test_the_decks_leave_out_how_to_present_with_rise(tmp_path):
    html = _demo_deck(tmp_path)
    assert "Start with a question" in html  # the notes themselves stay
    assert "RISE" not in html and "Alt+R" not in html


# --- the Chinese edition ---------------------------------------------------------------------------

ZH = "zh_CN"


@pytest.fixture(scope="module")
def zh_notebooks(tmp_path_factory):
    """The Chinese notebooks as make zh writes them (tools.i18n's build)."""
    from tools import i18n

    out = tmp_path_factory.mktemp("zh")
    return [nbformat.read(p, as_version=4) for p in i18n.build(NOTEBOOKS, out, ZH)]


def test_the_chinese_forms_are_the_catalogues_translations():
    """LABELS, OPENS and PRESENTINGS hold what every notebook catalogue makes of the English."""
    from tools import i18n

    for path in NOTEBOOKS:
        catalog = i18n.read_catalogue(i18n.catalogue_path(path, ZH))
        for forms in (notes.LABELS, notes.OPENS, notes.PRESENTINGS):
            found = {m.string for m in catalog if m.id == forms["en"]}
            assert found == {forms[ZH]}, f"{path.name}: {forms['en'][:40]!r} is translated as {found}"


def test_the_chinese_notebooks_follow_the_notes_convention_in_chinese(zh_notebooks):
    for nb in zh_notebooks:
        assert nb.metadata["attnlib"]["language"] == ZH
        assert notes.problems(nb) == []
        first = next(c for c in nb.cells if notes.is_notes(c))
        body = notes.without_presenting(notes.unwrap(first.source))
        assert body.startswith(notes.LABELS[ZH]) and "<details>" not in body and "RISE" not in body
        assert notes.unwrap(first.source).rstrip().endswith(body.rstrip()[-20:])


def test_a_chinese_notebook_with_the_english_label_is_caught(zh_notebooks):
    nb = copy.deepcopy(zh_notebooks[0])
    cell = next(c for c in nb.cells if notes.is_notes(c))
    cell.source = cell.source.replace(notes.LABELS[ZH], notes.LABEL, 1)
    assert any(notes.LABELS[ZH] in problem for problem in notes.problems(nb))
    second = [c for c in nb.cells if notes.is_notes(c)][1]
    second.source = second.source.replace(notes.OPENS[ZH], notes.OPEN)
    assert any(notes.OPENS[ZH] in problem for problem in notes.problems(nb))


def test_tools_notes_edits_only_the_english(zh_notebooks):
    nb = copy.deepcopy(zh_notebooks[0])
    with pytest.raises(ValueError, match="expected an English notebook"):
        notes.apply(nb)
    nb.metadata["attnlib"]["language"] = "fr"
    with pytest.raises(ValueError, match="'fr'"):
        notes.problems(nb)

"""The pure parts of the slide and site builders (tools.publish, tools.site, tools.slides)."""

from __future__ import annotations

import base64
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests import ROOT
from tools.publish import (
    INTERACTIVE_NOTE,
    STILL_NOTE,
    markdown_to_html,
    static_outputs,
    tex_to_mathml,
    widget_still,
)
from tools.site import (
    SiteSourceError,
    build_site,
    readme_sections,
    readme_summaries,
    site_notebook,
    site_sections,
    summary_of,
)

VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

README = """# The series

What it is, for whom.

![A heatmap of the weights.](docs/images/figure.png)

## Two commands

Run `make lab`; students start from the [student edition](#for-students), and
[docs/teaching.md](docs/teaching.md) plans a term ([the book](https://example.org/book)).

## The notebooks

| # | notebook | what you learn |
|---|---|---|
| 01 | `01_first` | the first thing |
| 02 | `02_second` | the second thing, with `code` |

## For students

Not on the site.
"""
REFERENCES = """# References

- A. Author (2020). A paper. arXiv:0000.00000
"""


def write_sources(root, readme: str = README) -> None:
    """What the site reads besides the notebooks: README.md, docs/references.md, README's figure."""
    (root / "docs" / "images").mkdir(parents=True)
    (root / "README.md").write_text(readme)
    (root / "docs" / "references.md").write_text(REFERENCES)
    (root / "docs" / "images" / "figure.png").write_bytes(base64.b64decode(PNG))


def widget_state() -> dict:
    return {
        "root": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_box", "IPY_MODEL_out"]}},
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_slider"]}},
        "slider": {"model_name": "IntSliderModel", "state": {"value": 3}},
        "out": {
            "model_name": "OutputModel",
            "state": {
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": "log\n"},
                    {"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {}},
                ]
            },
        },
        "other": {"model_name": "OutputModel", "state": {"outputs": [{"output_type": "display_data"}]}},
    }


def explorer_notebook(with_state: bool = True) -> dict:
    view = new_output("execute_result", {VIEW: {"model_id": "root"}, "text/plain": "VBox(children=...)"})
    nb = new_notebook(
        cells=[
            new_markdown_cell("# 03 · Demo\n### a subtitle that says what the chapter does\n\nIntro."),
            new_markdown_cell(
                "Speaker notes. Ask the class.", metadata={"slideshow": {"slide_type": "notes"}}
            ),
            new_code_cell(
                "train()",
                outputs=[
                    new_output("stream", name="stderr", text="epoch 1: 100%|#####| 10/10\n"),
                    new_output("stream", name="stdout", text="loss 0.1\n"),
                ],
            ),
            new_code_cell(
                "explore()", outputs=[view], metadata={"caption": "Bars of the weights of one query."}
            ),
            new_code_cell(
                "draw()",
                outputs=[new_output("display_data", {"image/png": PNG, "text/plain": "<Figure>"})],
                metadata={"caption": 'A heatmap of "scores" & weights.'},
            ),
            new_code_cell("answer = 42", metadata={"tags": ["solution"]}, outputs=[]),
        ]
    )
    if with_state:
        nb.metadata["widgets"] = {STATE: {"state": widget_state(), "version_major": 2, "version_minor": 0}}
    return nb


def test_widget_still_walks_the_view_and_keeps_only_displays():
    still = widget_still(widget_state(), "root")
    assert still == [{"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {}}]
    assert widget_still(widget_state(), "missing") == []


def test_static_outputs_replace_explorers_and_drop_progress_bars():
    nb = static_outputs(explorer_notebook())
    assert "widgets" not in nb["metadata"]
    train, explore = nb["cells"][2]["outputs"], nb["cells"][3]["outputs"]
    assert [o.get("name") for o in train] == ["stdout"]
    assert explore[0]["data"] == {"image/png": PNG}
    assert STILL_NOTE in explore[1]["data"]["text/plain"]
    assert all(VIEW not in o.get("data", {}) for o in explore)
    assert static_outputs(explorer_notebook(), training_logs=False)["cells"][2]["outputs"] == []
    bare = static_outputs(explorer_notebook(with_state=False))["cells"][3]["outputs"]
    assert len(bare) == 1 and INTERACTIVE_NOTE in bare[0]["data"]["text/plain"]


def test_maths_becomes_mathml_and_aligned_becomes_a_table():
    html = markdown_to_html(r"Weights $\alpha_i$ and $$\sqrt{d_k}$$")
    assert html.count("<math") == 2 and "$" not in html
    aligned = tex_to_mathml(r"\begin{aligned} a &= b \\ c &= d \end{aligned}", display=True)
    assert "<mtable" in aligned and "<mi>&</mi>" not in aligned


def test_readme_gives_sections_and_one_line_per_chapter():
    sections = site_sections(README)
    assert sections[""].startswith("What it is, for whom.")
    assert sections["Two commands"].startswith("Run `make lab`")
    assert "For students" not in sections and "Not on the site." in readme_sections(README)["For students"]
    assert readme_summaries(sections["The notebooks"]) == {
        "01_first": "the first thing",
        "02_second": "the second thing, with `code`",
    }


def test_new_chapters_get_their_subtitle_as_summary():
    assert summary_of(explorer_notebook()) == "a subtitle that says what the chapter does"
    nb = new_notebook(cells=[new_markdown_cell("# Title"), new_markdown_cell("First sentence. Second one.")])
    assert summary_of(nb) == "First sentence."


def test_site_notebook_is_the_student_edition_without_notes():
    nb = site_notebook(explorer_notebook())
    sources = [c["source"] for c in nb["cells"]]
    assert not any("Speaker notes" in s for s in sources)
    assert "answer = ...  # your prediction" in sources
    assert "42" not in "".join(sources)


def test_the_site_picks_up_every_notebook_and_links_them(tmp_path):
    src = tmp_path / "notebooks"
    src.mkdir()
    for stem in ("01_first", "02_second", "15_new"):
        nb = explorer_notebook()
        nb.cells[0].source = f"# {stem}\n### about {stem}"
        nbformat.write(nb, src / f"{stem}.ipynb")
    write_sources(tmp_path)
    pages = build_site(src, tmp_path / "site", None, tmp_path / "README.md")
    assert [p.name for p in pages] == [
        "index.html",
        "references.html",
        "search.html",
        "01_first.html",
        "02_second.html",
        "15_new.html",
    ]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "the first thing" in home and "about 15_new" in home and "make lab" in home
    assert 'href="slides/15_new.slides.html"' in home and (tmp_path / "site/notebooks/15_new.ipynb").exists()
    middle = (tmp_path / "site" / "02_second.html").read_text()
    assert 'rel="prev" href="01_first.html"' in middle and 'rel="next" href="15_new.html"' in middle
    assert "Ask the class" not in middle and "VBox(" not in middle and "100%|" not in middle
    assert "<script src" not in middle and not re.search(
        r"""(src|href)=["']?https?:|url\(["']?https?:""", middle
    )
    for page in pages:  # the licences are on every page (LICENSE, LICENSE-content.md)
        assert "(CC BY 4.0" in page.read_text() and "MIT licence" in page.read_text()


def _one_chapter_site(tmp_path) -> str:
    """Build the site of one notebook (:func:`explorer_notebook`) in tmp_path; its page's HTML."""
    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path)
    build_site(src, tmp_path / "site", None, tmp_path / "README.md")
    return (tmp_path / "site" / "01_first.html").read_text()


def test_a_figure_s_caption_is_its_alt_text_and_a_still_says_it_is_one(tmp_path):
    page = _one_chapter_site(tmp_path)
    alts = re.findall(r'<img [^>]*alt="([^"]*)"', page)
    assert "A heatmap of &quot;scores&quot; &amp; weights." in alts
    assert "A still of the explorer&#x27;s default view: bars of the weights of one query." in alts
    assert "figure drawn by the code above" not in page


def test_every_figure_and_explorer_in_the_notebooks_has_a_caption():
    """A caption (cell metadata "caption") says what the figure shows and what to see in it: the
    site and the decks use it as the image's alt text, for readers who cannot see the figure."""

    missing = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            kinds = {k for o in cell.get("outputs", []) for k in o.get("data", {})}
            if cell.cell_type != "code" or not kinds & {"image/png", VIEW}:
                continue
            caption = cell.metadata.get("caption", "")
            if len(caption) < 40 or not caption.endswith(".") or "figure drawn" in caption:
                missing.append(f"{path.name} cell {i}: {caption[:50]!r}")
    assert not missing, "figure cells without a caption of a sentence or more:\n" + "\n".join(missing)


def test_the_search_index_holds_every_section_of_prose_and_no_code(tmp_path):
    from tools.search import page_sections

    html = (
        '<div class="jp-InputArea"><pre>secret_code = 1</pre></div>'
        '<div class="jp-RenderedHTMLCommon jp-MarkdownOutput"><h2 id="One-two">One two'
        '<a class="anchor-link" href="#One-two">¶</a></h2><p>First <em>words</em> here.</p></div>'
        '<div class="jp-MarkdownOutput"><h3 id="Three">Three</h3><p>More.</p><img src="x"></div>'
    )
    sections = page_sections(html, "01_a.html", "01 · A")
    assert sections == [
        {
            "page": "01_a.html",
            "title": "01 · A",
            "heading": "One two",
            "anchor": "One-two",
            "text": "First words here.",
        },
        {"page": "01_a.html", "title": "01 · A", "heading": "Three", "anchor": "Three", "text": "More."},
    ]


def test_progress_bars_on_stdout_are_left_out_and_epoch_lines_kept():
    from tools.publish import static_outputs

    bar = "\r 37%|###7      | 211/564 [00:02<00:02, 121.04it/s]"
    cell = {
        "cell_type": "code",
        "source": "train(model, data)",
        "metadata": {},
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "\r  0%|          | 0/564 [00:00<?, ?it/s]"},
            {"output_type": "stream", "name": "stdout", "text": "epoch  1/3  loss 0.9613\n" + bar},
        ],
    }
    nb = {"cells": [cell], "metadata": {}}
    site = static_outputs(nb)["cells"][0]["outputs"]
    assert [o["text"] for o in site] == ["epoch  1/3  loss 0.9613\n"]  # the site keeps the log, not the bar
    assert static_outputs(nb, training_logs=False)["cells"][0]["outputs"] == []  # the decks keep neither


def test_with_the_repository_address_every_chapter_links_to_colab_and_binder(tmp_path):
    from tools.links import Repo

    repo = Repo("someone", "attention-series")
    src = tmp_path / "notebooks"
    src.mkdir()
    for stem in ("01_first", "02_second"):
        nb = explorer_notebook()
        nb.cells[0].source = f"# {stem}\n### about {stem}\n\n{repo.links(f'notebooks/{stem}.ipynb')}"
        nbformat.write(nb, src / f"{stem}.ipynb")
    write_sources(tmp_path)
    build_site(src, tmp_path / "site", None, tmp_path / "README.md", repo)
    home = (tmp_path / "site" / "index.html").read_text()
    for stem in ("01_first", "02_second"):
        colab = f"https://colab.research.google.com/github/someone/attention-series/blob/student-edition/student/{stem}.ipynb"
        binder = f"https://mybinder.org/v2/gh/someone/attention-series/student-edition?labpath=student%2F{stem}.ipynb"
        page = (tmp_path / "site" / f"{stem}.html").read_text()
        for html in (home, page):
            assert f'href="{colab}"' in html and f'href="{binder}"' in html
        assert page.count("colab.research.google.com") == 1, "the notebook's own links line is not repeated"
        report = f"https://github.com/someone/attention-series/issues/new?title={stem}"
        assert f'<a href="{report}' in page and "Report a problem on this page" in page
        assert "<script src" not in page and not re.search(r"""src=["']?https?:|url\(["']?https?:""", page)


def test_a_deck_leaves_out_set_up_lines_and_library_frames_and_can_show_outputs_apart():
    from tools.links import bootstrap
    from tools.slides import OUTPUT_APART, deck_cells

    frames = [
        "\x1b[0;31m----\x1b[0m",
        "Traceback (most recent call last)",
        "\x1b[0;32mCell In[3], line 2\x1b[0m\n  f(x)",
        "File site-packages/torch/x.py:9\n  raise",
        "\x1b[0;31mValueError\x1b[0m: bad",
    ]
    error = new_output("error", ename="ValueError", evalue="bad", traceback=frames)
    figure = new_output("display_data", {"image/png": PNG, "text/plain": "<Figure>"})
    cells = [
        new_code_cell(bootstrap(None) + "\nimport torch"),
        new_code_cell("f(x)", outputs=[error]),
        new_code_cell("draw()", outputs=[figure], metadata={"tags": [OUTPUT_APART]}),
        new_code_cell("import math"),
    ]
    first, raised, code, outputs, last = deck_cells(cells)
    assert first["source"] == "import torch" and last["source"] == "import math"
    assert raised["outputs"][0]["traceback"] == [error["traceback"][2], error["traceback"][-1]]
    assert code["outputs"] == [] and outputs["outputs"] == [figure]
    assert outputs["metadata"]["slideshow"]["slide_type"] == "subslide"
    assert outputs["metadata"]["transient"]["remove_source"] is True
    assert cells[2]["outputs"] == [figure]  # the notebook itself is left as it is


def test_the_downloaded_notebook_is_the_student_edition(tmp_path):
    """A page's "Run it" link downloads the file `make student` writes, not the instructor's copy
    with its solutions and speaker notes."""
    from tools.student import build

    page = _one_chapter_site(tmp_path)
    assert re.search(r'Run it: <a href="notebooks/01_first.ipynb" download>.*the student edition', page)
    downloaded = tmp_path / "site" / "notebooks" / "01_first.ipynb"
    text = downloaded.read_text()
    assert "Speaker notes" not in text and "answer = 42" not in text and '"solution"' not in text
    assert "answer = ...  # your prediction" in text
    build(tmp_path / "notebooks", tmp_path / "student")
    assert downloaded.read_bytes() == (tmp_path / "student" / "01_first.ipynb").read_bytes()


def test_a_wide_table_scrolls_in_a_named_focusable_box_with_a_cue():
    from tools.site import scrolling_tables

    html = scrolling_tables(
        "<p>x</p><table><thead><tr><th></th><th>the <em>paper</em></th><th>why &amp; how</th></tr>"
        "</thead><tbody><tr><td>a</td><td>b</td><td>c</td></tr></tbody></table>"
    )
    assert html.count('<div class="table-scroll" role="region" tabindex="0"') == 1
    assert 'aria-label="Table: the paper, why &amp; how (scrolls sideways)"' in html
    assert '<p class="scroll-cue">Scroll sideways' in html and html.endswith("</table></div></div>")


def test_the_site_takes_the_repository_address_as_make_links_does(tmp_path, monkeypatch):
    """`make site REPO=OWNER/NAME` passes --repo to tools.site, which wins over GITHUB_REPOSITORY
    (and git's remote), as in `make links`; a mistyped address stops the build."""
    import subprocess

    from tools.site import main

    root = ROOT
    dry = subprocess.run(
        ["make", "-n", "site", "REPO=someone/attention-series"], cwd=root, capture_output=True, text=True
    ).stdout
    site_line = next(line for line in dry.splitlines() if "-m tools.site" in line)
    assert site_line.endswith("--repo someone/attention-series")

    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path)
    monkeypatch.setenv("GITHUB_REPOSITORY", "other/fork")
    argv = [str(src), str(tmp_path / "site"), str(tmp_path / "none")]
    assert main([*argv, "--repo", "someone/attention-series"]) == 0
    page = (tmp_path / "site" / "01_first.html").read_text()
    assert "github/someone/attention-series/blob/" in page and "other/fork" not in page
    assert main(argv) == 0
    assert "github/other/fork/blob/" in (tmp_path / "site" / "01_first.html").read_text()
    with pytest.raises(SystemExit):
        main([*argv, "--repo", "not an address"])


def test_the_real_readme_and_references_hold_what_the_site_shows():
    from tools.site import references_markdown

    sections = site_sections((ROOT / "README.md").read_text(encoding="utf-8"))
    stems = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert set(readme_summaries(sections["The notebooks"])) == stems, "one table row per notebook"
    references = references_markdown(ROOT)
    assert "Attention Is All You Need" in references and not references.startswith("# ")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace("\n## Two commands\n", "\n## Getting started\n"), '"## Two commands"'),
        (lambda t: re.sub(r"\n## The notebooks\n.*?(?=\n## )", "\n", t, flags=re.S), '"## The notebooks"'),
        (lambda t: re.sub(r"^\| (\d+) \| `", r"| \1 | ", t, flags=re.M), "no table row of the form"),
        (lambda t: re.sub(r"\A(# [^\n]*\n).*?(?=\n## )", r"\1", t, flags=re.S), "between its title"),
    ],
    ids=["renamed", "removed", "row format", "no opening"],
)
def test_a_renamed_or_missing_readme_section_stops_the_build_naming_it(tmp_path, capsys, edit, expected):
    """A copy of the real README with one section the site needs renamed or removed: the build
    stops before writing anything, and the error names the heading it looked for."""
    from tools.site import main

    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path, edit((ROOT / "README.md").read_text(encoding="utf-8")))
    with pytest.raises(SiteSourceError, match=re.escape(expected)):
        build_site(src, tmp_path / "site", None, tmp_path / "README.md")
    assert not (tmp_path / "site").exists()
    assert main([str(src), str(tmp_path / "site"), str(tmp_path / "none")]) == 1
    assert expected in capsys.readouterr().err


def test_references_come_from_docs_references_md_and_a_missing_file_stops_the_build(tmp_path):
    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path)
    build_site(src, tmp_path / "site", None, tmp_path / "README.md")
    page = (tmp_path / "site" / "references.html").read_text()
    assert "arXiv:0000.00000" in page and page.count("<h1>") == 1
    (tmp_path / "docs" / "references.md").unlink()
    with pytest.raises(SiteSourceError, match=re.escape("docs/references.md")):
        build_site(src, tmp_path / "site2", None, tmp_path / "README.md")


@pytest.mark.parametrize("with_address", [False, True])
def test_readme_s_figure_is_copied_and_its_links_into_the_repository_leave_the_site(tmp_path, with_address):
    """README's figure reaches the home page as a file of the site; its links to a section of
    README or to docs/ lead to GitHub where the address is known, else become plain text: the
    site has no such pages, and a relative link would be broken there."""
    from tools.links import Repo

    repo = Repo("someone", "attention-series") if with_address else None
    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path)
    build_site(src, tmp_path / "site", None, tmp_path / "README.md", repo)
    home = (tmp_path / "site" / "index.html").read_text()
    assert 'src="images/figure.png" alt="A heatmap of the weights."' in home
    assert (tmp_path / "site" / "images" / "figure.png").read_bytes() == base64.b64decode(PNG)
    assert 'href="https://example.org/book"' in home and "Not on the site." not in home
    blob = "https://github.com/someone/attention-series/blob/main/"
    if with_address:
        assert f'href="{blob}README.md#for-students">student edition</a>' in home
        assert f'href="{blob}docs/teaching.md">docs/teaching.md</a>' in home
    else:
        assert "from the student edition, and\ndocs/teaching.md plans" in home
    hrefs = re.findall(r'href="([^"]+)"', home)
    assert not [h for h in hrefs if not re.match(r"https?:|#|[\w.-]+\.html|slides/|notebooks/|data:", h)]

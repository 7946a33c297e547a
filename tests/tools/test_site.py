"""The pure parts of the slide and site builders (tools.publish, tools.site, tools.slides)."""

# ruff: noqa: RUF001  (Chinese text is written with full-width punctuation: ，：；（）)

from __future__ import annotations

import base64
import re
from pathlib import Path

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
        (
            lambda t: re.sub(r"^(# [^\n]*\n).*?(?=\n## )", r"\1", t, count=1, flags=re.S | re.M),
            "between its title",
        ),
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


# --- the Chinese site and decks (issue 32) -------------------------------------------------------

README_ZH = """**[English](README.md)**

# 注意力系列

它是什么，为谁而写。

## 两条命令

运行 `make lab`。

## 笔记本一览

| # | 笔记本 | 你将学到 |
|---|---|---|
| 01 | `01_first` | 第一件事：掩码 |
| 02 | `02_second` | 第二件事：多头注意力 |

## 给学生

不在站点上。
"""
CJK = re.compile(r"[\u4e00-\u9fff]")


def zh_notebook(stem: str, prose: str) -> dict:
    """A translated notebook as ``tools.i18n build`` writes it: the English code cells and
    outputs, Chinese prose, and its language in ``metadata.attnlib``."""
    nb = explorer_notebook()
    nb.cells[0].source = f"# {stem[:2]} · 第{stem[1]}章\n### 关于第{stem[1]}章\n\n## 第一节\n\n{prose}"
    nb.cells[1].source = "教师备注。问问全班。"
    nb.cells[3].metadata["caption"] = "一个查询的权重条形图。"
    nb.cells[4].metadata["caption"] = "分数与权重的热力图。"
    nb.metadata["attnlib"] = {"language": "zh_CN"}
    return nb


def build_both(tmp_path, prose: dict[str, str] | None = None, repo=None) -> list:
    """The English site of two notebooks and its Chinese copy, from hand-made translations."""
    from tools.site import build_editions

    prose = prose or {
        "01_first": "因果掩码把未来的位置挡住。",
        "02_second": "多头注意力把模型宽度分给几个头。",
    }
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "zh").mkdir()
    for stem, text in prose.items():
        nb = explorer_notebook()
        nb.cells[0].source = f"# {stem}\n### about {stem}"
        nbformat.write(nb, tmp_path / "notebooks" / f"{stem}.ipynb")
        nbformat.write(nbformat.from_dict(zh_notebook(stem, text)), tmp_path / "zh" / f"{stem}.ipynb")
    write_sources(tmp_path)
    (tmp_path / "README.zh-CN.md").write_text(README_ZH)
    return build_editions(
        tmp_path / "notebooks",
        tmp_path / "site",
        None,
        tmp_path / "README.md",
        repo,
        ["zh_CN"],
        {"zh_CN": tmp_path / "zh"},
    )


def _visible_text(html: str) -> str:
    """The text a reader sees on a page: no scripts, styles, code or tags."""
    from html import unescape

    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    html = re.sub(r'<div class="jp-InputArea\b.*?</pre>', " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_every_zh_page_has_its_language_a_switch_to_its_counterpart_and_alternate_links(tmp_path):
    pages = build_both(tmp_path)
    site = tmp_path / "site"
    zh = [p for p in pages if p.parent == site / "zh"]
    english = [p for p in pages if p.parent == site]
    assert (
        [p.name for p in zh]
        == [p.name for p in english]
        == [
            "index.html",
            "references.html",
            "search.html",
            "01_first.html",
            "02_second.html",
        ]
    )
    for page, other, lang, other_lang, name in [
        *((p, site / p.name, "zh-CN", "en", "English") for p in zh),
        *((p, site / "zh" / p.name, "en", "zh-CN", "简体中文") for p in english),
    ]:
        html = page.read_text()
        assert f'<html lang="{lang}">' in html, page
        switch = re.search(
            r'<nav class="lang-switch" aria-label="[^"]+">'
            r'<a href="([^"]+)" hreflang="([^"]+)" lang="([^"]+)"',
            html,
        )
        assert switch, f"{page} has no language switch"
        href, hreflang, attr = switch.groups()
        assert (page.parent / href).resolve() == other.resolve() and other.exists(), (page, href)
        assert hreflang == attr == other_lang and f">{name}</a>" in html
        alternates = dict(
            (m[0], (page.parent / m[1]).resolve())
            for m in re.findall(r'<link rel="alternate" hreflang="([^"]+)" href="([^"]+)">', html)
        )
        assert alternates == {lang: page.resolve(), other_lang: other.resolve()}, page
    home = (site / "zh" / "index.html").read_text()
    assert 'href="../slides/zh/01_first.slides.html"' in home  # the zh pages link to the zh decks
    assert 'href="../slides/zh/02_second.slides.html"' in (site / "zh" / "02_second.html").read_text()
    assert "<title>01 · 第1章</title>" in (site / "zh" / "01_first.html").read_text()


def test_the_zh_index_lists_each_chapter_with_its_chinese_line_and_no_english_interface(tmp_path):
    """The zh index takes the chapters' lines from README.zh-CN.md, and no page of the zh site
    shows an English string that the tools mark for translation."""
    from tools import ui

    pages = build_both(tmp_path)
    home = (tmp_path / "site" / "zh" / "index.html").read_text()
    rows = re.findall(r'<li><a href="(\d\d_\w+)\.html">([^<]+)</a> — (.*?)</li>', home)
    assert [(stem, title) for stem, title, _ in rows] == [
        ("01_first", "01 · 第1章"),
        ("02_second", "02 · 第2章"),
    ]
    assert "第一件事：掩码" in rows[0][2] and "第二件事：多头注意力" in rows[1][2]
    assert "它是什么，为谁而写。" in home and "English](README.md)" not in home
    ours = ("tools/site.py", "tools/search.py", "tools/publish.py", "tools/slides.py")
    marked = [m for m, where in ui.marked().items() if any(w[0] in ours for w in where)]
    fragments = {
        part.strip(" .:·,()")
        for english in marked
        if ui.text(english, "zh_CN") != english
        for part in re.split(r"\{\w+\}|<[^>]+>", english)
        if len(part.strip(" .:·,()")) >= 6
    }
    assert len(fragments) > 25
    for page in pages:
        if "zh" not in page.parent.name:
            continue
        text = _visible_text(page.read_text())
        left = sorted(f for f in fragments if f in text)
        assert not left, f"{page.name} shows untranslated interface text: {left}"


def test_a_catalogue_missing_one_interface_string_stops_the_build_naming_it(tmp_path, monkeypatch):
    from tools import ui
    from tools.i18n import CatalogueError

    full = dict(ui._translations("zh_CN"))
    assert full.get("Run it on your machine"), "the catalogue translates it"
    monkeypatch.setattr(
        ui,
        "_translations",
        lambda lang, locale_dir=None: {k: v for k, v in full.items() if k != "Run it on your machine"},
    )
    with pytest.raises(CatalogueError, match=re.escape("'Run it on your machine'")):
        build_both(tmp_path)


def test_a_zh_readme_needs_its_chinese_headings_and_says_which_is_missing():
    from tools.site import site_sections

    sections = site_sections(README_ZH, "zh_CN")
    assert sections["Two commands"].startswith("运行 `make lab`") and "给学生" not in sections
    assert readme_summaries(sections["The notebooks"])["02_second"] == "第二件事：多头注意力"
    with pytest.raises(SiteSourceError, match=re.escape('README.zh-CN.md has no section "## 两条命令"')):
        site_sections(README_ZH.replace("## 两条命令", "## 两个命令"), "zh_CN")
    with pytest.raises(SiteSourceError, match=re.escape('README.md has no section "## Two commands"')):
        site_sections(README_ZH)  # the English headings are not the Chinese README's
    with pytest.raises(ValueError, match="expected a language among"):
        site_sections(README_ZH, "fr")
    assert readme_sections("**[简体中文](README.zh-CN.md)**\n\n# T\n\nIntro.\n\n## A\n\nx")[""] == "Intro."


def test_a_missing_zh_readme_stops_the_build_before_it_writes(tmp_path):
    from tools.site import build_editions

    src = tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(explorer_notebook(), src / "01_first.ipynb")
    write_sources(tmp_path)
    with pytest.raises(SiteSourceError, match=re.escape("README.zh-CN.md is missing")):
        build_editions(src, tmp_path / "site", None, tmp_path / "README.md", None, ["zh_CN"])
    assert not (tmp_path / "site").exists()
    with pytest.raises(ValueError, match=r"expected languages among \['zh_CN'\], got \['fr'\]"):
        build_editions(src, tmp_path / "site", None, tmp_path / "README.md", None, ["fr"])


def _node() -> str | None:
    """A Node.js to run the search page's script with: Playwright's own (a dependency of the
    browser test), else one on PATH."""
    import shutil as sh

    try:
        from playwright._impl._driver import compute_driver_executable

        node = compute_driver_executable()[0]
        if Path(node).exists():
            return str(node)
    except ImportError:
        pass
    return sh.which("node")


def search_with_node(entries: list[dict], query: str) -> list[str]:
    """``page#anchor`` of each hit of :data:`tools.search.MATCH`'s ``searchHits``, best first."""
    import json
    import subprocess

    from tools.search import MATCH

    node = _node()
    if node is None:
        pytest.skip("no Node.js (Playwright's driver or node on PATH) to run the search script")
    program = (
        MATCH
        + f"\nconst hits = searchHits({json.dumps(entries)}, {json.dumps(query)});"
        + "\nconsole.log(JSON.stringify(hits.map(h => h.e.page + '#' + h.e.anchor)));"
    )
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_search_finds_chinese_words_without_spaces_and_english_as_before():
    def entry(page: str, anchor: str, heading: str, text: str) -> dict:
        return {"page": page, "title": page, "heading": heading, "anchor": anchor, "text": text}

    entries = [
        entry("03_masking.html", "a", "因果掩码", "每个查询只能查看它之前的键：掩码把其余位置挡住。"),
        entry(
            "05_mha.html", "b", "多头注意力", "多头注意力把模型宽度分给几个头，每个头做一次缩放点积注意力。"
        ),
        entry("01_dot.html", "c", "点积", "注意力权重由 softmax 得到。"),
        entry("13_eff.html", "d", "Online softmax", "The online softmax keeps a running max and sum."),
        entry("13_eff.html", "e", "Tiles", "Tiled attention with online softmax, memory linear in T."),
    ]
    assert search_with_node(entries, "掩码") == ["03_masking.html#a"]
    assert search_with_node(entries, "多头注意力")[0] == "05_mha.html#b"
    assert search_with_node(entries, "注意力") == ["05_mha.html#b", "01_dot.html#c"]
    # A run of characters that no section holds whole matches by its character pairs, ranked
    # after whole matches: 掩码 and 查询 both lie in 03's section, apart.
    assert search_with_node(entries, "查询掩码") == ["03_masking.html#a"]
    assert search_with_node(entries, "掩码头") == []
    assert search_with_node(entries, "online softmax") == ["13_eff.html#d", "13_eff.html#e"]
    assert search_with_node(entries, "ONLINE memory") == ["13_eff.html#e"]
    assert search_with_node(entries, "softmax 权重") == ["01_dot.html#c"]


def test_the_zh_search_page_searches_the_zh_index_in_chinese(tmp_path):
    import json

    build_both(tmp_path)
    zh = tmp_path / "site" / "zh"
    page = (zh / "search.html").read_text()
    assert '<script src="search-index.js"></script>' in page and "<h1>搜索</h1>" in page
    said = json.loads(re.search(r"window\.SEARCH_TEXT = (\{.*?\});", page)[1])
    assert said["empty"] == "请输入一个或多个词。" and "{count}" in said["found"]
    index = json.loads(
        (zh / "search-index.js").read_text().removeprefix("window.SEARCH_INDEX = ").rstrip(";\n")
    )
    assert {e["page"] for e in index} == {"01_first.html", "02_second.html"}
    assert search_with_node(index, "掩码")[0].startswith("01_first.html#")
    assert search_with_node(index, "多头注意力")[0].startswith("02_second.html#")
    english = (tmp_path / "site" / "search.html").read_text()
    assert "Type one or more words." in english and "<h1>Search</h1>" in english


def test_the_zh_decks_are_in_chinese_and_the_instructor_banner_too(tmp_path):
    from tools.slides import build_decks

    nbformat.write(nbformat.from_dict(zh_notebook("01_first", "因果掩码。")), tmp_path / "01_first.ipynb")
    (deck,) = build_decks(tmp_path / "01_first.ipynb", tmp_path / "zh", lang="zh_CN")
    html = deck.read_text()
    shown = re.sub(r"<[^>]+>", "", html)
    assert '<html lang="zh-CN">' in html and "<title>01 · 第1章（幻灯片）</title>" in html
    assert "交互探索器默认视图的静态图：一个查询的权重条形图。" in html and "A still of" not in html
    assert "answer = ...  # your prediction" in shown and "answer = 42" not in shown
    (solved,) = build_decks(tmp_path / "01_first.ipynb", tmp_path / "solutions", solutions=True, lang="zh_CN")
    html = solved.read_text()
    assert '<p class="solutions-banner">教师版幻灯片：含参考答案</p>' in html
    assert "answer = 42" in re.sub(r"<[^>]+>", "", html)
    assert "<title>01 · 第1章 · 含参考答案的教师版（幻灯片）</title>" in html
    english = build_decks(tmp_path / "01_first.ipynb", tmp_path / "en", solutions=True)[0].read_text()
    assert '<html lang="en">' in english and "Instructor deck: contains solutions" in english


def test_the_real_zh_edition_lists_all_chapters_with_chinese_lines(tmp_path):
    """README.zh-CN.md and the catalogues give the zh index every chapter, each title and line in
    Chinese (the notebooks translated as `make zh` does)."""
    from tools.i18n import build
    from tools.site import README_FILES, chapters, home_page, site_sections

    readme = ROOT / README_FILES["zh_CN"]
    if not readme.exists():
        pytest.skip("README.zh-CN.md is not written yet")
    english = sorted((ROOT / "notebooks").glob("*.ipynb"))
    sections = site_sections(readme.read_text(encoding="utf-8"), "zh_CN")
    summaries = readme_summaries(sections["The notebooks"])
    assert set(summaries) == {p.stem for p in english}, "one table row per notebook"
    items = chapters(build(english, tmp_path, "zh_CN"), summaries)
    assert len(items) == len(english) == 14
    kept = {"Transformer"}  # a title that the glossary keeps in English
    for ch in items:
        assert CJK.search(ch.summary), ch
        assert CJK.search(ch.title) or ch.title.split(" · ", 1)[1] in kept, ch
    home = home_page(sections, items)
    assert all(f'<a href="{ch.page}">' in home for ch in items)


def test_a_line_break_between_chinese_characters_is_no_space_and_english_is_untouched():
    from tools.publish import join_cjk_lines

    source = (
        "注意力让每个查询，\n查看每个键。\n\n## 标题\n正文\n\n- 项目，\n  继续\n\n"
        "```\n代码\n代码\n```\n中文 `code`\n中文"
    )
    joined = join_cjk_lines(source)
    assert "注意力让每个查询，查看每个键。" in joined and "- 项目，继续" in joined
    assert "## 标题\n正文" in joined and "```\n代码\n代码\n```" in joined and "`code`\n中文" in joined
    assert "<p>注意力让每个查询，查看每个键。</p>" in markdown_to_html(source)
    english = "A line\nand the next.\n\n## Head\ntext"
    assert join_cjk_lines(english) == english


def test_the_zh_pages_open_the_chinese_student_edition_in_colab_and_binder(tmp_path):
    from tools.links import Repo

    build_both(tmp_path, repo=Repo("someone", "attention-series"))
    zh = (tmp_path / "site" / "zh" / "01_first.html").read_text()
    en = (tmp_path / "site" / "01_first.html").read_text()
    assert (
        "blob/student-edition/student-zh/01_first.ipynb" in zh and "labpath=student-zh%2F01_first.ipynb" in zh
    )
    assert "/student/01_first.ipynb" in en and "student-zh" not in en
    assert "报告本页的问题" in zh and "Report a problem on this page" not in zh
    body = re.search(r'issues/new\?title=[^"]*body=([^"&]*)', zh)[1]
    assert "%E9%A1%B5%E9%9D%A2" in body  # 页面: the body is in Chinese too


def test_the_slides_command_builds_the_zh_decks_from_translated_notebooks(tmp_path, capsys):
    from tools.publish import html_lang
    from tools.slides import build_translated, main

    (tmp_path / "en").mkdir()
    (tmp_path / "zh").mkdir()
    nbformat.write(explorer_notebook(), tmp_path / "en" / "01_first.ipynb")
    nbformat.write(
        nbformat.from_dict(zh_notebook("01_first", "因果掩码。")), tmp_path / "zh" / "01_first.ipynb"
    )
    argv = ["--lang", "zh_CN", "--from", str(tmp_path / "zh"), str(tmp_path / "en"), str(tmp_path / "out")]
    assert main(argv) == 0
    deck = (tmp_path / "out" / "01_first.slides.html").read_text()
    assert '<html lang="zh-CN">' in deck and (tmp_path / "out" / "reveal.js" / "dist" / "reveal.js").exists()
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"expected a language among \['zh_CN'\], got 'fr'"):
        build_translated(tmp_path / "en", tmp_path / "fr", "fr")
    with pytest.raises(ValueError, match="expected a language among"):
        html_lang("fr")
    assert html_lang(None) == "en" and html_lang("zh_CN") == "zh-CN"

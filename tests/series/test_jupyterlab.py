"""The notebooks as a student and a presenter meet them: JupyterLab in a real browser (headless
Chromium), in a narrow window (1024 x 768, the file browser open).

One JupyterLab server on a temporary folder, one generated notebook with four explorers and a
speaker-notes cell. After Run -> Run All Cells:
- every explorer's slider keeps a usable track and no control label is cut ("temperat...");
- the speaker notes stay closed behind "Show the notes" (Run All un-hides every Markdown cell),
  also in the saved file.
Skips where no Chromium is installed (.ci/run installs it), like tests/tools/test_browser.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools import notes

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NARROW = {"width": 1024, "height": 768}
MIN_TRACK_PX = 100

pytestmark = [
    pytest.mark.publish,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]

CELLS = [
    "import torch\nfrom attnlib import viz\ntokens = 'your journey starts with one step'.split()",
    "viz.temperature_explorer(torch.randn(6, 4), torch.randn(6, 4), tokens)",
    "viz.receptive_field_explorer()",
    "viz.dropout_explorer(torch.softmax(torch.randn(6, 6), -1), tokens)",
    "viz.positional_encoding_explorer()",
]
CONTROLS = r"""() => [...document.querySelectorAll(
    '.jp-OutputArea .widget-slider, .jp-OutputArea .widget-checkbox')].map(w => {
    const label = w.querySelector('.widget-label');
    const track = w.querySelector('.slider-container');
    return {label: label ? label.textContent : '', cut: !!label && label.scrollWidth > label.clientWidth + 1,
            track: track ? track.getBoundingClientRect().width : null};
  })"""


def _notebook(path: Path) -> None:
    nb = new_notebook(
        cells=[new_markdown_cell("# Explorers in a narrow window")]
        + [new_code_cell(src) for src in CELLS]
        + [
            new_markdown_cell(
                "Ask the room: which slider matters most?", metadata={"slideshow": {"slide_type": "notes"}}
            )
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    notes.apply(nb)
    nbformat.write(nb, path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    _notebook(root / "explorers.ipynb")
    port, token = _free_port(), "attnlib-test"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root"]  # fmt: skip
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start within a minute")
        yield url, token, root
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_run_all_in_a_narrow_window_keeps_controls_usable_and_notes_closed(lab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    url, token, root = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport=NARROW)
        page.goto(f"{url}/lab/workspaces/test/tree/explorers.ipynb?token={token}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=120_000)
        page.wait_for_selector(".jp-DirListing", timeout=60_000)  # the file browser is open
        select = page.locator(".jp-Dialog button", has_text="Select")  # a fresh server asks once
        try:
            select.wait_for(timeout=15_000)
            select.click()
        except PlaywrightTimeout:
            pass
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-OutputArea .widget-slider').length >= 8", timeout=120_000
        )
        time.sleep(1)  # the last explorer's first figure
        controls = page.evaluate(CONTROLS)
        if os.environ.get("ATTN_SCREENSHOTS"):  # to look at the explorers as a student sees them
            shots = Path(os.environ["ATTN_SCREENSHOTS"])
            shots.mkdir(parents=True, exist_ok=True)
            for k, area in enumerate(page.locator(".jp-OutputArea:has(.widget-slider)").all()):
                area.scroll_into_view_if_needed()
                area.screenshot(path=shots / f"jupyterlab-explorer-{k}.png")
        closed = page.evaluate(
            "() => [...document.querySelectorAll('.jp-MarkdownCell details')].map(d => !d.open)"
        )
        page.keyboard.press("Control+s")
        time.sleep(2)
        browser.close()
    assert controls, "no explorer controls were drawn"
    cut = [c["label"] for c in controls if c["cut"]]
    short = [
        (c["label"], round(c["track"]))
        for c in controls
        if c["track"] is not None and c["track"] < MIN_TRACK_PX
    ]
    assert not cut, f"labels cut in a 1024-px window: {cut}"
    assert not short, f"slider tracks under {MIN_TRACK_PX} px in a 1024-px window: {short}"
    assert closed == [True], "after Run All the speaker notes must stay closed"
    saved = json.loads((root / "explorers.ipynb").read_text())
    (note,) = ["".join(c["source"]) for c in saved["cells"] if c["metadata"].get("slideshow")]
    # JupyterLab clears "source hidden" when it runs the cell; the closed wrapper is what stays
    assert note.startswith(f"{notes.LABEL}\n\n{notes.OPEN}\n") and note.rstrip().endswith(notes.CLOSE)

"""Every deck and every page of the site, opened in a real browser (headless Chromium).

Builds the decks and the site from the stored notebooks into a temporary folder, opens each
file with Debian's ``chromium`` driven by Playwright, and fails on: a console error, a request
to the network (anything but ``file:`` and ``data:``), a broken internal link or resource, an
image that does not load, maths left as raw TeX, any WCAG 2.0/2.1 level A or AA violation that
axe-core finds (every site page, and every slide of every deck, in reveal.js's scroll view with
all fragments shown; colour contrast, though, only on a deck's first screen), and, in the decks,
a slide whose content does not fit the 1280x720 viewport, one that fits only zoomed out below
0.8, or a code line clipped at the right. Every site page is also opened on a 390-px phone:
nothing may push the page sideways, the chapter list starts closed, wide maths scrolls, and a
tapped figure opens at full size. Skips, saying why, where no Chromium is installed (``.ci/run``
installs it, so CI always runs this test).

``ATTN_SCREENSHOTS=folder`` also saves a screenshot of every site page and deck title slide.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 720}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Text outside code, maths and scripts that still looks like TeX: $...$, \( \), \[ \], \begin.
UNRENDERED_MATHS = r"""() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll("pre, code, script, style, math, aside.notes").forEach(e => e.remove());
  const text = body.textContent;
  const hits = text.match(/\$[^$\s][^$]*\$|\\\(|\\\[|\\begin\{/g) || [];
  for (const e of document.querySelectorAll("math mi, math mo, math mtext"))
    if (/^(&|\\[a-zA-Z]+)$/.test(e.textContent.trim())) hits.push("TeX inside MathML: " + e.textContent);
  return hits.concat([...document.querySelectorAll(".tex-error")].map(e => "unconverted: " + e.textContent));
}"""
BROKEN_IMAGES = (
    "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))"
)
# Whether the slide number lies over one of reveal.js's arrows.
NUMBER_ON_A_CONTROL = r"""() => {
  const n = document.querySelector(".slide-number");
  if (!n) return false;
  const a = n.getBoundingClientRect();
  return [...document.querySelectorAll(".controls button")].some(b => {
    const r = b.getBoundingClientRect();
    return r.width > 0 && !(r.right <= a.left || r.left >= a.right || r.bottom <= a.top || r.top >= a.bottom);
  });
}"""
ELEMENT_IDS = "() => [...document.querySelectorAll('[id]')].map(e => e.id)"
LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
# Walk every slide; report the ones whose content leaves the viewport or clips a code line.
WALK_SLIDES = r"""() => {
  Reveal.configure({transition: "none", backgroundTransition: "none"});
  const W = window.innerWidth, H = window.innerHeight, bad = [];
  const slides = Reveal.getSlides();
  slides.forEach((slide, i) => {
    const ix = Reveal.getIndices(slide);
    Reveal.slide(ix.h, ix.v, 1000);
    Reveal.layout();
    let top = Infinity, bottom = -Infinity, left = Infinity, right = -Infinity;
    for (const el of [slide, ...slide.querySelectorAll("*")]) {
      if (el.closest("aside.notes")) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom);
      left = Math.min(left, r.left); right = Math.max(right, r.right);
    }
    const title = (slide.querySelector("h1, h2, h3") || {textContent: ""}).textContent.trim().slice(0, 50);
    if (top < -1 || left < -1 || bottom > H + 1 || right > W + 1)
      bad.push(`slide ${i + 1} (${title}): content box ${Math.round(left)},${Math.round(top)} to ` +
               `${Math.round(right)},${Math.round(bottom)} leaves the ${W}x${H} viewport`);
    slide.querySelectorAll("pre").forEach(pre => {
      if (pre.scrollWidth > pre.clientWidth + 1)
        bad.push(`slide ${i + 1} (${title}): a code line is clipped: ${pre.textContent.slice(0, 40)}`);
    });
  });
  // fit.js zooms a slide out until it fits; below 0.8 its text is too small for the back row.
  const small = [];
  slides.forEach((slide, i) => {
    const zoom = parseFloat(slide.style.zoom || "1");
    if (zoom >= 0.8) return;
    const title = (slide.querySelector("h1, h2, h3") || {textContent: ""}).textContent.trim().slice(0, 50);
    const cell = (slide.querySelector("[id^='cell-id=']") || {id: "cell-id=?"}).id.slice(8);
    const where = title ? `${title}, cell ${cell}` : `cell ${cell}`;
    small.push(`slide ${i + 1} (${where}): zoomed out to ${zoom} to fit, below 0.8`);
  });
  return {count: slides.length, bad: bad, small: small};
}"""


WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SHOW_FRAGMENTS = ".reveal .fragment { opacity: 1 !important; visibility: visible !important; }"
# axe.run does most of its work before it returns its promise: start it from a timer, so that
# the call that starts it returns at once; window.axeRun holds the promise of its result.
START_AXE = """options => {
  window.axeRun = new Promise(go => setTimeout(go)).then(() => axe.run(document, options));
}"""
UNHIDE_SLIDES = """() => document.querySelectorAll(".reveal .slides section[aria-hidden]")
  .forEach(s => s.removeAttribute("aria-hidden"))"""


def _chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run does this in CI)"
    try:
        import axe_playwright_python  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright or axe-playwright-python package is not installed (make venv)"
    return None


pytestmark = pytest.mark.skipif(_chromium_missing() is not None, reason=str(_chromium_missing()))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Decks and site, built from the stored notebooks as `make site` builds them."""
    from tools.site import build_site
    from tools.slides import build_decks

    out = tmp_path_factory.mktemp("publish")
    decks = build_decks(ROOT / "notebooks", out / "slides")
    pages = build_site(ROOT / "notebooks", out / "site", out / "slides", ROOT / "README.md")
    return out, decks, pages


def _check(page, path: Path, problems: list[str], shots: Path | None) -> tuple[dict | None, list[str]]:
    """Open one file; append what is wrong with it to ``problems``, and start axe-core on it.

    Returns what the slide walk found (None for a site page) and the list that collects the
    page's console errors; :func:`_finish` waits for axe and reports both."""
    seen: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed to load {r.url[:100]}"))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    name = path.name
    ids = set(page.evaluate(ELEMENT_IDS))  # one round trip, not one per link
    for url in page.evaluate(LINKS):
        parts = urlsplit(url)
        if parts.scheme == "file":
            target = Path(unquote(parts.path))
            if not target.exists():
                problems.append(f"{name}: broken link to {target.name}")
            elif (
                parts.fragment
                and target == path
                and not parts.fragment.startswith("/")
                and parts.fragment not in ids
                and unquote(parts.fragment) not in ids
            ):
                problems.append(f"{name}: link to a missing anchor #{parts.fragment}")
        seen.append(url)
    problems += [f"{name}: image does not load: {src}" for src in page.evaluate(BROKEN_IMAGES)]
    problems += [f"{name}: maths left unrendered: {hit[:60]!r}" for hit in page.evaluate(UNRENDERED_MATHS)]
    slides = None
    if name.endswith(".slides.html"):
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        slides = page.evaluate(WALK_SLIDES)
        problems += [f"{name}: {bad}" for bad in slides["bad"] + slides["small"]]
        if page.evaluate(NUMBER_ON_A_CONTROL):
            problems.append(f"{name}: the slide number overlaps a navigation control")
        page.evaluate("() => Reveal.slide(0, 0)")
    if shots is not None:
        page.screenshot(path=str(shots / f"{path.stem}.png"), full_page=slides is None)
    if slides is not None:  # every slide at once, fragments shown: reveal.js's scroll view
        page.goto(path.as_uri() + "?view=scroll")
        page.wait_for_function("() => window.Reveal && Reveal.isReady() && Reveal.isScrollView()")
        page.add_style_tag(content=SHOW_FRAGMENTS)
        # reveal.js leaves many slides aria-hidden even in the scroll view, and axe-core leaves
        # out what is hidden from screen readers (an image without alt text, say): unhide them.
        # axe's colour-contrast rule still sees only the first screen: the scroll view scrolls
        # inside <body>, whose overflow axe takes for clipping.
        page.evaluate(UNHIDE_SLIDES)
    _start_axe(page)
    return slides, errors


def _finish(page, path: Path, errors: list[str], problems: list[str]) -> None:
    """Wait for the axe-core run that :func:`_check` started, and report it and the console errors."""
    problems += [f"{path.name}: {v}" for v in _accessibility_violations(page)]
    problems += [f"{path.name}: console error: {e[:200]}" for e in errors]
    page.close()


PHONE = {"width": 390, "height": 844}
# On a phone: what pushes the page sideways (code blocks, maths and tables scroll inside
# themselves), whether the chapter list is closed, and display maths too wide to scroll.
PHONE_LAYOUT = r"""() => ({
  pageWidth: document.documentElement.scrollWidth,
  sideways: [...document.querySelectorAll("main *")]
    .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest("pre, math, table"))
    .slice(0, 3).map(e => e.tagName.toLowerCase() + ": " + e.textContent.slice(0, 40)),
  menuOpen: [...document.querySelectorAll("details.menu")].some(d => d.open),
  mathCut: [...document.querySelectorAll('math[display="block"]')]
    .filter(m => m.scrollWidth > m.clientWidth + 1
                 && !["auto", "scroll"].includes(getComputedStyle(m).overflowX)).length,
})"""


def _check_phone(page, path: Path, problems: list[str]) -> None:
    """One site page on a 390-px phone: nothing pushes the page sideways, the chapter list waits
    behind its button, wide maths scrolls, and a tap shows a figure at full size."""
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    name = f"{path.name} (phone)"
    layout = page.evaluate(PHONE_LAYOUT)
    if layout["pageWidth"] > PHONE["width"] + 1:
        problems.append(f"{name}: the page is {layout['pageWidth']} px wide: {layout['sideways']}")
    if layout["menuOpen"]:
        problems.append(f"{name}: the chapter list is open and fills the first screen")
    if layout["mathCut"]:
        problems.append(f"{name}: {layout['mathCut']} display equations are cut and do not scroll")
    figure = page.query_selector("button.figure-zoom")
    if figure is not None:
        figure.click()
        width, natural = figure.evaluate(
            "b => [b.querySelector('img').getBoundingClientRect().width, b.querySelector('img').naturalWidth]"
        )
        if abs(width - natural) > 1:
            problems.append(f"{name}: a tapped figure shows {width:.0f} px of its {natural} px")


def _check_search(page, home: Path, problems: list[str]) -> None:
    """The search box of the chapter list, used once: a query finds its section, offline."""
    page.goto(home.as_uri())
    page.fill("form.search input", "online softmax")
    page.press("form.search input", "Enter")
    page.wait_for_load_state("load")
    found = page.eval_on_selector_all("#search-results a", "as => as.map(a => a.getAttribute('href'))")
    if not found or not found[0].startswith("13_efficient_attention.html#"):
        problems.append(f"search for 'online softmax': {page.inner_text('#search-status')} {found[:3]}")
        return
    page.click("#search-results a >> nth=0")
    page.wait_for_load_state("load")
    if not page.evaluate("() => !!document.getElementById(decodeURIComponent(location.hash.slice(1)))"):
        problems.append(f"search result {found[0]} leads to no section")


def _start_axe(page) -> None:
    """Start axe-core's WCAG 2.0 and 2.1, level A and AA, rules on the open page, and return at
    once: the browser runs each page in its own process, so the next page's checks (and its own
    axe run) go on beside this one."""
    from axe_playwright_python.base import AXE_SCRIPT

    # preload=False: axe would fetch every stylesheet again with XMLHttpRequest, which file: pages
    # may not do (a console error each); the rules use the styles the page has computed.
    # resultTypes: axe still runs every rule on every node, but describes (selector, HTML) only
    # one node of each rule that passed, not the thousands of a long page: only violations count.
    options = {
        "runOnly": {"type": "tag", "values": WCAG_AA},
        "preload": False,
        "resultTypes": ["violations"],
    }
    page.evaluate(AXE_SCRIPT)
    page.evaluate(START_AXE, options)


def _accessibility_violations(page) -> list[str]:
    """axe-core's violations on the page where :func:`_start_axe` ran it, one line each."""
    violations = page.evaluate("() => window.axeRun.then(result => result.violations)")
    return [
        f"WCAG {v['id']} ({v['help']}) at {', '.join(str(n['target']) for n in v['nodes'][:3])}"
        + (f" and {len(v['nodes']) - 3} more" if len(v["nodes"]) > 3 else "")
        for v in violations
    ]


def test_every_deck_and_site_page_in_chromium(built):
    from playwright.sync_api import sync_playwright

    _, decks, pages = built
    shots = Path(os.environ["ATTN_SCREENSHOTS"]) if os.environ.get("ATTN_SCREENSHOTS") else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    network: list[str] = []
    slide_count = small = 0
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=ARGS, headless=True, viewport=VIEWPORT
            )

            def only_local(route):
                if route.request.url.startswith(("file:", "data:", "blob:", "about:")):
                    route.continue_()
                else:
                    network.append(route.request.url)
                    route.abort()

            browser.route("**/*", only_local)
            # axe-core takes most of the time: each page's run goes on while the next page is
            # checked (two pages at most), and the last one while the phone and search checks run.
            running: deque[tuple] = deque()
            for path in [*decks, *pages]:
                page = browser.new_page()
                slides, errors = _check(page, path, problems, shots)
                slide_count += slides["count"] if slides else 0
                small += len(slides["small"]) if slides else 0
                running.append((page, path, errors))
                if len(running) > 1:
                    _finish(*running.popleft(), problems)
            for path in pages:
                page = browser.new_page()
                page.set_viewport_size(PHONE)
                _check_phone(page, path, problems)
                page.close()
            page = browser.new_page()
            _check_search(page, pages[0], problems)
            page.close()
            while running:
                _finish(*running.popleft(), problems)
            browser.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    problems += [f"request to the network: {url}" for url in network]
    print(
        f"checked {len(decks)} decks ({slide_count} slides, {small} zoomed below 0.8) and {len(pages)} pages"
    )
    assert len(decks) == len(list((ROOT / "notebooks").glob("*.ipynb"))) and slide_count > 0
    assert not problems, "\n".join(problems)

"""Every deck and every page of the site, opened in a real browser (headless Chromium).

Builds the decks and the site from the stored notebooks into a temporary folder, opens each
file with Debian's ``chromium`` driven by Playwright, and fails on: a console error, a request
to the network (anything but ``file:`` and ``data:``), a broken internal link or resource, an
image that does not load, maths left as raw TeX, any WCAG 2.0/2.1 level A or AA violation that
axe-core finds (every site page, and every slide of every deck, in reveal.js's scroll view with
all fragments shown; colour contrast, though, only on a deck's first screen, and on a site
page's code on one span of each style, which stands for all of them), and, in the decks, a
slide whose content does not fit the 1280x720 viewport, one that fits only zoomed out below
0.8, a code line clipped at the right, code under 20 px on screen, a navigation control or the
slide number over text, or a slide that pressing the right arrow from the first
slide never reaches (the walk checks each slide as it comes). Every site page is also opened
on a 390-px phone: nothing may push the page sideways, the chapter list starts closed, wide
maths scrolls, and a tapped figure opens at full size. Skips, saying why, where no Chromium is
installed (``.ci/run`` installs it, so CI always runs this test).

The Chinese site (``zh/``) and decks (``slides/zh/``) are checked the same way by the
``[zh_CN]`` case of the test, built from the catalogues as ``make site`` builds them (or, with
``ATTN_ZH_NOTEBOOKS=folder``, from the translated notebooks already there, e.g. ``build/zh``);
the phone checks look for the Chinese cues (:data:`CUES`), and the search box is tried with a
Chinese query.

``ATTN_SCREENSHOTS=folder`` also saves a screenshot of every site page and deck title slide;
``ATTN_BROWSER_TIMES=1`` prints how long each part of the test took; ``ATTN_BROWSER_ONLY=03_,index``
walks only the decks and pages whose file names start so (a quick run; the full test walks all).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests import ROOT

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
TIMES: defaultdict[str, float] = defaultdict(float)  # part of the test -> seconds, for ATTN_BROWSER_TIMES


@contextmanager
def _timed(part: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        TIMES[part] += time.perf_counter() - start


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
# The slide on screen, checked once: content that leaves the viewport, a code line clipped at
# the right, a zoom below 0.8 (fit.js zooms out only what it cannot cut), a navigation control
# or the slide number over any text, the smallest code on screen (computed font size times
# reveal.js's scale and the slide's zoom) and the slide's zoom, printed per deck with its lowest, so a
# deck near the limit shows before a font difference tips it over. Also where the deck is, to walk
# it with the keyboard.
MIN_CODE_PX = 20  # on a 1280x720 screen, for the back row
CHECK_SLIDE = r"""() => {
  const MIN_CODE_PX = MIN_CODE;
  const slide = Reveal.getCurrentSlide(), ix = Reveal.getIndices();
  const state = {at: `${ix.h}/${ix.v || 0}`, fragment: ix.f ?? -1,
                 end: Reveal.isLastSlide() && !Reveal.availableFragments().next,
                 bad: [], small: [], code: null, zoom: null};
  if (slide.dataset.checked) return state;
  slide.dataset.checked = "1";
  const W = window.innerWidth, H = window.innerHeight, n = Reveal.getSlidePastCount() + 1;
  const title = (slide.querySelector("h1, h2, h3") || {textContent: ""}).textContent.trim().slice(0, 50);
  const cell = (slide.querySelector("[id^='cell-id=']") || {id: "cell-id=?"}).id.slice(8);
  const where = `slide ${n} (${title ? title + ", " : ""}cell ${cell})`;
  let top = Infinity, bottom = -Infinity, left = Infinity, right = -Infinity;
  for (const el of [slide, ...slide.querySelectorAll("*")]) {
    if (el.closest("aside.notes")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom);
    left = Math.min(left, r.left); right = Math.max(right, r.right);
  }
  if (top < -1 || left < -1 || bottom > H + 1 || right > W + 1)
    state.bad.push(`${where}: content box ${Math.round(left)},${Math.round(top)} to ` +
                   `${Math.round(right)},${Math.round(bottom)} leaves the ${W}x${H} viewport`);
  const zoom = parseFloat(slide.style.zoom || "1");
  state.zoom = [zoom, where];
  if (zoom < 0.8) state.small.push(`${where}: zoomed out to ${zoom} to fit, below 0.8`);
  slide.querySelectorAll("pre").forEach(pre => {
    if (pre.scrollWidth > pre.clientWidth + 1)
      state.bad.push(`${where}: a code line is clipped: ${pre.textContent.slice(0, 40)}`);
    if (!pre.textContent.trim()) return;
    const px = parseFloat(getComputedStyle(pre).fontSize) * Reveal.getScale() * zoom;
    state.code = Math.min(state.code ?? Infinity, px);
    if (px < MIN_CODE_PX)
      state.bad.push(`${where}: code at ${px.toFixed(1)} px on screen, below ${MIN_CODE_PX}`);
  });
  const controls = [...document.querySelectorAll(".reveal .controls button, .reveal .slide-number")]
    .filter(c => c.checkVisibility({visibilityProperty: true}))
    .map(c => [c, c.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && r.height > 0);
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.data.trim() || t.parentElement.closest("aside.notes")) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    for (const r of range.getClientRects()) {
      const hit = controls.find(([, c]) =>
        !(c.right <= r.left || c.left >= r.right || c.bottom <= r.top || c.top >= r.bottom));
      if (hit) {
        state.bad.push(`${where}: ${hit[0].className || "a control"} lies over the text ` +
                       JSON.stringify(t.data.trim().slice(0, 40)));
        break;
      }
    }
  }
  return state;
}""".replace("MIN_CODE;", f"{MIN_CODE_PX};")
DECK_WALKS: dict[str, dict] = {}  # deck -> what the walk with the right arrow found: printed at the end


# The rest of the walk, inside the page: each step sends reveal.js's keyboard handler the event a
# right-arrow key sends (keydown, key "ArrowRight", keyCode 39) and checks what it shows. One call
# for the whole deck instead of two round trips per slide (806 slides: 50 s of the test's 130 s
# when each press and check was its own call; the first press, below, is a real key).
WALK_ON = r"""([state, total, seen]) => {
  const check = CHECK;
  const found = [...state.bad, ...state.small], small = [...state.small];
  const code = [state.code], zoom = [state.zoom], problems = [];
  let presses = 1;
  while (!state.end && presses < 4 * total) {
    document.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", code: "ArrowRight",
                                                         keyCode: 39, which: 39, bubbles: true}));
    presses += 1;
    const next = check(), same = next.at === state.at;
    if ((same && next.fragment <= state.fragment) || (!same && seen.includes(next.at))) {
      problems.push(`the right arrow on slide ${seen.length} went to ${next.at}, seen before`);
      break;
    }
    if (!same) seen.push(next.at);
    found.push(...next.bad, ...next.small);
    small.push(...next.small);
    code.push(next.code);
    zoom.push(next.zoom);
    state = next;
  }
  return {seen: seen.length, presses, found, small, code, zoom, problems};
}""".replace("CHECK;", CHECK_SLIDE + ";")


def _walk_with_the_keyboard(page, name: str, problems: list[str]) -> dict:
    """Press the right arrow from the first slide to the end, as a presenter does, checking each
    slide as it comes (:data:`CHECK_SLIDE`): every press shows a slide not seen yet or the next
    fragment of this one, and the walk reaches every slide of the deck. The first press is a real
    key (Playwright's keyboard); the rest go to reveal.js's keyboard handler from inside the page
    (:data:`WALK_ON`)."""
    total = page.evaluate(
        "() => { Reveal.configure({transition: 'none', backgroundTransition: 'none'});"
        " Reveal.slide(0, 0, -1); return Reveal.getTotalSlides(); }"
    )
    first = page.evaluate(CHECK_SLIDE)
    walk = {"seen": 1, "presses": 0, "found": first["bad"] + first["small"], "small": list(first["small"])}
    walk.update(code=[first["code"]], zoom=[first["zoom"]], problems=[])
    if not first["end"]:
        page.keyboard.press("ArrowRight")
        second = page.evaluate(CHECK_SLIDE)
        if second["at"] == first["at"] and second["fragment"] <= first["fragment"]:
            problems.append(f"{name}: the right-arrow key does not move on from the first slide")
            walk["presses"] = 1
        else:
            seen = [first["at"]] + ([second["at"]] if second["at"] != first["at"] else [])
            rest = page.evaluate(WALK_ON, [second, total, seen])
            for key in ("found", "small", "code", "zoom"):
                walk[key] += rest[key]
            walk.update(seen=rest["seen"], presses=rest["presses"], problems=rest["problems"])
    problems += [f"{name}: {problem}" for problem in walk["problems"]]
    problems += [f"{name}: {bad}" for bad in walk["found"]]
    if walk["seen"] != total:
        problems.append(f"{name}: pressing the right arrow reaches {walk['seen']} of its {total} slides")
    sizes = [c for c in walk["code"] if c is not None]
    DECK_WALKS[name] = {
        "slides": total,
        "reached": walk["seen"],
        "presses": walk["presses"],
        "code": min(sizes, default=0),
        "zoom": min((z for z in walk["zoom"] if z is not None), default=(1.0, "no slide")),
    }
    return {"count": total, "small": walk["small"]}


WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SHOW_FRAGMENTS = ".reveal .fragment { opacity: 1 !important; visibility: visible !important; }"
# axe.run does most of its work before it returns its promise: start it from a timer, so that
# the call that starts it returns at once; window.axeRun holds the promise of its result.
START_AXE = """options => {
  window.axeRun = new Promise(go => setTimeout(go)).then(() => axe.run(document, options));
}"""
UNHIDE_SLIDES = """() => document.querySelectorAll(".reveal .slides section[aria-hidden]")
  .forEach(s => s.removeAttribute("aria-hidden"))"""
# axe's colour-contrast rule takes most of a site page's time: a long chapter has thousands of
# syntax-highlighted code spans, and axe works out the contrast of each one. The contrast of a
# span's text is a function of its style alone: its computed colour, font size and weight, text
# shadow and stroke, and the backgrounds, opacities, filters and blend modes of it and of every
# ancestor (what axe composes). Spans inside <pre> that agree on all of these (the key below)
# pass or fail together, so axe checks one span of each style, the one with the longest visible
# text (axe reports a failing one-character text as "needs review", not as a violation), and
# only the colour-contrast rule skips the others; every other rule, and all text outside <pre>,
# is checked in full. Geometry aside (a span that something else overlaps, which axe only
# flags for review), this finds every colour-contrast violation the full run finds.
SAME_STYLE_CODE = r"""() => {
  const seen = new Map();  // element -> its part of the key, computed once per ancestor
  const part = e => {
    if (!seen.has(e)) {
      const s = getComputedStyle(e);
      seen.set(e, [s.backgroundColor, s.backgroundImage, s.backgroundClip, s.opacity, s.filter,
                   s.mixBlendMode].join("|") + (e.parentElement ? "/" + part(e.parentElement) : ""));
    }
    return seen.get(e);
  };
  const key = e => {
    const s = getComputedStyle(e);
    return [s.color, s.fontSize, s.fontWeight, s.textShadow, s.webkitTextStrokeWidth,
            s.webkitTextStrokeColor, s.webkitTextFillColor, s.visibility, part(e)].join(";");
  };
  const text = e => [...e.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
    .map(n => n.data).join("").trim();
  const shown = e => e.checkVisibility({visibilityProperty: true, opacityProperty: true})
    && [...e.getClientRects()].some(r => r.width > 0 && r.height > 0);
  const styles = new Map();  // key -> [the span axe checks, its text length]
  const spans = [...document.querySelectorAll("pre span")];
  for (const e of spans) {
    const k = key(e), length = shown(e) ? text(e).length : 0;
    if (!styles.has(k) || length > styles.get(k)[1]) styles.set(k, [e, length]);
  }
  const checked = new Set([...styles.values()].map(([e]) => e));
  for (const e of spans) if (!checked.has(e)) e.setAttribute("data-contrast-as-styled", "");
  axe.configure({rules: [{id: "color-contrast", selector: "*:not([data-contrast-as-styled])"}]});
  return {spans: spans.length, styles: styles.size};
}"""


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
    """Decks and site in English and Chinese, built from the stored notebooks as `make slides`
    and `make site` build them: ``{lang: (decks, pages)}``."""
    from tools.site import EDITION_FOLDERS, build_editions
    from tools.slides import build_decks, build_translated

    out = tmp_path_factory.mktemp("publish")
    zh = os.environ.get("ATTN_ZH_NOTEBOOKS")
    translated = Path(zh) if zh else None
    with _timed("build"):
        decks = build_decks(ROOT / "notebooks", out / "slides")
        zh_decks = build_translated(ROOT / "notebooks", out / "slides" / "zh", "zh_CN", translated=translated)
        pages = build_editions(
            ROOT / "notebooks",
            out / "site",
            out / "slides",
            ROOT / "README.md",
            langs=["zh_CN"],
            translated={"zh_CN": translated} if translated else None,
        )
    zh_site = out / "site" / EDITION_FOLDERS["zh_CN"]
    return {
        "en": (decks, [p for p in pages if p.parent != zh_site]),
        "zh_CN": (zh_decks, [p for p in pages if p.parent == zh_site]),
    }


def _only(paths: list[Path]) -> list[Path]:
    """``paths`` whose names start with one of ``ATTN_BROWSER_ONLY``'s prefixes (all without it)."""
    only = [p for p in os.environ.get("ATTN_BROWSER_ONLY", "").split(",") if p]
    return [p for p in paths if not only or p.name.startswith(tuple(only))]


def test_the_phone_cues_are_the_site_s_own_words():
    """:data:`CUES` matches what the pages say in each language (tools.publish's template text,
    tools.site's table cue), so a translation that changes them fails here, not in the walk."""
    from tools.publish import TEMPLATE_TEXT
    from tools.ui import text

    for lang, cues in CUES.items():
        assert re.search(cues["enlarge"], text(TEMPLATE_TEXT["zoom_cue"], lang), re.I), lang
        assert re.search(cues["close"], text(TEMPLATE_TEXT["zoom_close"], lang), re.I), lang
        assert re.search(cues["scroll"], text("Scroll sideways for more columns →", lang), re.I), lang


def _check(page, path: Path, problems: list[str], shots: Path | None) -> tuple[dict | None, list[str]]:
    """Open one file; append what is wrong with it to ``problems``, and start axe-core on it.

    Returns what the slide walk found (None for a site page) and the list that collects the
    page's console errors; :func:`_finish` waits for axe and reports both."""
    seen: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed to load {r.url[:100]}"))
    with _timed("load"):
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
        with _timed("deck walk"):
            page.wait_for_selector("body[data-deck-ready]")  # fit.js has cut and laid out every slide
            slides = _walk_with_the_keyboard(page, name, problems)
        if page.evaluate(NUMBER_ON_A_CONTROL):
            problems.append(f"{name}: the slide number overlaps a navigation control")
        page.evaluate("() => Reveal.slide(0, 0)")
    if shots is not None:
        page.screenshot(path=str(shots / f"{path.stem}.png"), full_page=slides is None)
    if slides is not None:  # every slide at once, fragments shown: reveal.js's scroll view
        with _timed("deck scroll view"):
            page.goto(path.as_uri() + "?view=scroll")
            page.wait_for_function("() => document.body.dataset.deckReady && Reveal.isScrollView()")
        page.add_style_tag(content=SHOW_FRAGMENTS)
        # reveal.js leaves many slides aria-hidden even in the scroll view, and axe-core leaves
        # out what is hidden from screen readers (an image without alt text, say): unhide them.
        # axe's colour-contrast rule still sees only the first screen: the scroll view scrolls
        # inside <body>, whose overflow axe takes for clipping.
        page.evaluate(UNHIDE_SLIDES)
    with _timed("axe start"):
        _start_axe(page, code_contrast_by_style=slides is None)
    return slides, errors


def _finish(page, path: Path, errors: list[str], problems: list[str]) -> None:
    """Wait for the axe-core run that :func:`_check` started, and report it and the console errors."""
    with _timed("axe wait"):
        problems += [f"{path.name}: {v}" for v in _accessibility_violations(page)]
    problems += [f"{path.name}: console error: {e[:200]}" for e in errors]
    page.close()


PHONE = {"width": 390, "height": 844}
# On a phone: how wide the page is and its widest element (scrollers count at their own width);
# what leaves the screen without a scroller that shows it, or is cut off by a clipping box;
# whether the chapter list is closed and the search box visible on the first screen; display
# maths too wide to scroll; and every table wider than its column: the box that scrolls it must
# take the keyboard focus, have a name, and show a visible "scroll" cue.
PHONE_LAYOUT = r"""(scrollCue) => {
  const W = innerWidth, visible = e => e.checkVisibility() && e.getBoundingClientRect().width > 0;
  const scroller = e => {  // the nearest ancestor that does not let e overflow: [element, overflow-x]
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o !== "visible") return [a, o];
    }
    return [null, "visible"];
  };
  const describe = e => e.tagName.toLowerCase() + (e.className && typeof e.className === "string"
    ? "." + e.className.split(" ")[0] : "") + ": " + e.textContent.trim().replace(/\s+/g, " ").slice(0, 40);
  let widest = null, widestRight = 0;
  const sideways = [], cut = [];
  for (const e of document.querySelectorAll("body *")) {
    if (!visible(e)) continue;
    const r = e.getBoundingClientRect();
    const [box, how] = scroller(e);
    const own = getComputedStyle(e).overflowX === "visible"
      ? Math.max(r.right, r.left + e.scrollWidth) : r.right;
    if (how === "visible" && own >= widestRight) { widest = e; widestRight = own; }  // innermost wins
    if (own <= W + 1) continue;
    if (how === "visible") sideways.push(`${describe(e)} reaches ${Math.round(own)} px`);
    else if (how === "hidden" || how === "clip") cut.push(describe(e));
  }
  const input = document.querySelector('form[role="search"] input');
  const box = input && input.getBoundingClientRect();
  const tables = [];
  for (const t of document.querySelectorAll("main table")) {
    const [s] = scroller(t);
    if (!s || s.scrollWidth <= s.clientWidth + 1) continue;
    const cue = [...s.parentElement.querySelectorAll("*")]
      .some(c => !t.contains(c) && c !== s && visible(c) && new RegExp(scrollCue, "i").test(c.textContent));
    s.scrollLeft = s.scrollWidth;  // the last column comes into view
    const last = t.querySelector("tr").lastElementChild.getBoundingClientRect();
    tables.push({head: t.querySelector("tr").textContent.trim().replace(/\s+/g, " ").slice(0, 40),
                 focusable: s.tabIndex >= 0, named: !!(s.getAttribute("aria-label") || "").trim(),
                 cue: cue, lastShown: last.right <= W + 1 && last.left >= 0});
    s.scrollLeft = 0;
  }
  return {
    pageWidth: document.documentElement.scrollWidth,
    widest: widest ? `${describe(widest)} (${Math.round(widest.getBoundingClientRect().left)}` +
                     `..${Math.round(widestRight)} px)` : "",
    sideways: sideways.slice(0, 3), cut: cut.slice(0, 3),
    menuOpen: [...document.querySelectorAll("details.menu")].some(d => d.open),
    searchShown: !!input && visible(input) && box.bottom <= innerHeight && box.right <= W,
    mathCut: [...document.querySelectorAll('math[display="block"]')]
      .filter(m => m.scrollWidth > m.clientWidth + 1
                   && !["auto", "scroll"].includes(getComputedStyle(m).overflowX)).length,
    tables: tables,
  };
}"""
# A figure's visible cues: the text of its visible parts that say "enlarge" or "close", and where.
FIGURE_CUES = r"""(b, cues) => [...b.querySelectorAll("*"), b].filter(e => e.checkVisibility()
    && e.getBoundingClientRect().width > 0 && new RegExp(cues, "i").test(e.textContent)
    && ![...e.children].some(c => new RegExp(cues, "i").test(c.textContent)))
  .map(e => { const r = e.getBoundingClientRect();
    return {text: e.textContent.trim(), x: r.left + r.width / 2, y: r.top + r.height / 2,
            inView: r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth}; })"""
PHONE_WIDTHS: dict[str, tuple[int, str]] = {}  # page -> (page width, widest element): printed at the end
# What the phone checks look for in each language (regular expressions): a figure's "tap to
# enlarge" and "close" cues, a wide table's "scroll" cue; the search box's query and the page its
# first result must be on. A test holds the cues to the site's catalogue.
CUES = {
    "en": {"enlarge": "tap.*enlarge", "close": "close", "scroll": "scroll"},
    "zh_CN": {"enlarge": "点按.*放大", "close": "关闭", "scroll": "滚动"},
}
SEARCHES = {
    "en": ("online softmax", "13_efficient_attention.html#"),
    "zh_CN": ("在线 softmax", "13_efficient_attention.html#"),
}


def _check_phone(page, path: Path, problems: list[str], lang: str = "en") -> None:
    """One site page on a 390-px phone: nothing pushes the page sideways or is cut off, the
    chapter list waits behind its button while the search box shows, wide maths and tables
    scroll and say so, and a figure says a tap enlarges it, which it does, with a close control."""
    page.goto(path.as_uri() + ("?q=softmax" if path.name == "search.html" else ""))
    page.wait_for_load_state("load")
    name = f"{path.name} (phone)"
    cues = CUES[lang]
    layout = page.evaluate(PHONE_LAYOUT, cues["scroll"])
    PHONE_WIDTHS[path.name] = (layout["pageWidth"], layout["widest"])
    if layout["pageWidth"] > PHONE["width"] + 1 or layout["sideways"]:
        problems.append(f"{name}: the page is {layout['pageWidth']} px wide: {layout['sideways']}")
    if layout["cut"]:
        problems.append(f"{name}: cut off at the right, with no way to scroll to it: {layout['cut']}")
    if layout["menuOpen"]:
        problems.append(f"{name}: the chapter list is open and fills the first screen")
    if not layout["searchShown"]:
        problems.append(f"{name}: no search box on the first screen with the chapter list closed")
    if layout["mathCut"]:
        problems.append(f"{name}: {layout['mathCut']} display equations are cut and do not scroll")
    for table in layout["tables"]:
        missing = [what for what in ("focusable", "named", "cue", "lastShown") if not table[what]]
        if missing:
            problems.append(f"{name}: a wide table ({table['head']}) scrolls, but is not {missing}")
    figure = page.query_selector("button.figure-zoom")
    if figure is not None:
        figure.scroll_into_view_if_needed()
        both = f"{cues['enlarge']}|{cues['close']}"
        shown = figure.evaluate(FIGURE_CUES, both)
        if not any(re.search(cues["enlarge"], c["text"], re.I) for c in shown):
            problems.append(f"{name}: a figure does not say that a tap enlarges it: {shown}")
        figure.click()
        width, natural = figure.evaluate(
            "b => [b.querySelector('img').getBoundingClientRect().width, b.querySelector('img').naturalWidth]"
        )
        if abs(width - natural) > 1:
            problems.append(f"{name}: a tapped figure shows {width:.0f} px of its {natural} px")
        close = [c for c in figure.evaluate(FIGURE_CUES, both) if re.search(cues["close"], c["text"], re.I)]
        if not close or not close[0]["inView"]:
            problems.append(f"{name}: the enlarged figure has no close control in view: {close}")
        else:
            page.mouse.click(close[0]["x"], close[0]["y"])
            if figure.get_attribute("aria-expanded") != "false":
                problems.append(f"{name}: the close control leaves the figure enlarged")


def _check_search(page, home: Path, problems: list[str], lang: str = "en") -> None:
    """The search box of the chapter list, used once: a query finds its section, offline."""
    query, expected = SEARCHES[lang]
    page.goto(home.as_uri())
    page.fill("form.search input", query)
    page.press("form.search input", "Enter")
    page.wait_for_load_state("load")
    found = page.eval_on_selector_all("#search-results a", "as => as.map(a => a.getAttribute('href'))")
    if not found or not found[0].startswith(expected):
        problems.append(f"search for {query!r}: {page.inner_text('#search-status')} {found[:3]}")
        return
    page.click("#search-results a >> nth=0")
    page.wait_for_load_state("load")
    # As browsers find a fragment's element (HTML's "indicated part"): by the fragment as written,
    # then percent-decoded (nbconvert writes a Chinese heading's id percent-encoded).
    found_it = "() => { const f = location.hash.slice(1);"
    found_it += " return !!(document.getElementById(f) || document.getElementById(decodeURIComponent(f))); }"
    if not page.evaluate(found_it):
        problems.append(f"search result {found[0]} leads to no section")


def _start_axe(page, code_contrast_by_style: bool = False) -> None:
    """Start axe-core's WCAG 2.0 and 2.1, level A and AA, rules on the open page, and return at
    once: the browser runs each page in its own process, so the next page's checks (and its own
    axe run) go on beside this one. With ``code_contrast_by_style``, colour contrast is checked on
    one code span per style (:data:`SAME_STYLE_CODE`); a deck, where axe sees the contrast of
    only the first screen, keeps every span, lest the one it keeps lie below that screen."""
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
    if code_contrast_by_style:
        page.evaluate(SAME_STYLE_CODE)
    page.evaluate(START_AXE, options)


def _accessibility_violations(page) -> list[str]:
    """axe-core's violations on the page where :func:`_start_axe` ran it, one line each."""
    violations = page.evaluate("() => window.axeRun.then(result => result.violations)")
    same_style = page.evaluate("() => document.querySelectorAll('[data-contrast-as-styled]').length")
    return [
        f"WCAG {v['id']} ({v['help']}) at {', '.join(str(n['target']) for n in v['nodes'][:3])}"
        + (f" and {len(v['nodes']) - 3} more" if len(v["nodes"]) > 3 else "")
        + (
            f" (one code span per style checked: {same_style} more code spans share the page's styles)"
            if v["id"] == "color-contrast" and same_style
            else ""
        )
        for v in violations
    ]


@pytest.mark.publish
@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_every_deck_and_site_page_in_chromium(built, lang):
    from playwright.sync_api import sync_playwright

    all_decks, all_pages = built[lang]
    decks, pages = _only(all_decks), _only(all_pages)
    home = next(p for p in all_pages if p.name == "index.html")
    DECK_WALKS.clear()  # printed at the end, for this language only
    PHONE_WIDTHS.clear()
    shots = Path(os.environ["ATTN_SCREENSHOTS"]) if os.environ.get("ATTN_SCREENSHOTS") else None
    if shots is not None and lang != "en":
        shots = shots / lang  # the pages have the English pages' names
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
                with _timed("phone"):
                    _check_phone(page, path, problems, lang)
                page.close()
            page = browser.new_page()
            with _timed("search"):
                _check_search(page, home, problems, lang)
            page.close()
            while running:
                _finish(*running.popleft(), problems)
            browser.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    problems += [f"request to the network: {url}" for url in network]
    for name, (width, widest) in PHONE_WIDTHS.items():
        print(f"[{lang}] phone {name}: {width} px wide; widest element {widest}")
    for name, walk in DECK_WALKS.items():
        print(
            f"[{lang}] deck {name}: the right arrow reaches {walk['reached']} of {walk['slides']} slides "
            f"({walk['presses']} presses, fragments included); smallest code {walk['code']:.1f} px; "
            f"smallest zoom {walk['zoom'][0]:.2f}, {walk['zoom'][1]}"
        )
    print(
        f"[{lang}] checked {len(decks)} decks ({slide_count} slides, {small} zoomed below 0.8)"
        f" and {len(pages)} pages"
    )
    if os.environ.get("ATTN_BROWSER_TIMES"):
        print("seconds:", ", ".join(f"{part} {seconds:.1f}" for part, seconds in TIMES.items()))
    assert len(all_decks) == len(list((ROOT / "notebooks").glob("*.ipynb"))) and (
        slide_count > 0 or not decks
    )
    assert not problems, "\n".join(problems)

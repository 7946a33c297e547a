"""Offline full-text search for the web site: an index written at build time, read in the browser.

The index is a script (``search-index.js``, ``window.SEARCH_INDEX = [...]``) and the search page
(``search.html``) a plain page whose script matches the words of a query against it. Both work
from ``file:`` URLs with no server and no network, where a search that fetches its index
(pagefind, lunr with a JSON index) cannot: browsers refuse ``fetch`` and module imports on
``file:`` pages. One entry per section of a chapter (the text under one heading of its prose,
code left out), so that a result links to the place it was found.

A query is split at spaces into words, and a section matches when it holds every word (as a
substring, ignoring case). Chinese writes no spaces between words, so a run of CJK characters
that the section does not hold whole still matches where the section holds pieces of two or more
characters that make it up, taken longest first from its start, ranked below a whole match:
``查询掩码`` finds a section that says ``查询`` and ``掩码`` apart. English queries match as
before. The page's messages come from
``locale/<lang>/site.po`` (:mod:`tools.ui`), written into the page as JSON for its script.
"""

from __future__ import annotations

import json
from html import escape
from html.parser import HTMLParser
from pathlib import Path

from .ui import N_
from .ui import text as ui_text

HEADINGS = {"h1", "h2", "h3", "h4"}
INDEX_FILE = "search-index.js"
PAGE = "search.html"
MAX_TEXT = 4000  # characters kept per section: enough for every word of a long section to count


class _Sections(HTMLParser):
    """The prose of a chapter page (its rendered Markdown), cut at every heading that has an id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[dict[str, str]] = []
        self._depth = 0  # > 0 inside a rendered Markdown cell
        self._heading: str | None = None  # the tag of the heading being read
        self._skip = 0  # inside an anchor-link "¶", a script or a style

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if self._depth:
            self._depth += tag not in ("br", "img", "hr", "input", "meta", "link")
        elif tag == "div" and "jp-MarkdownOutput" in (a.get("class") or ""):
            self._depth = 1
        if not self._depth:
            return
        if tag in HEADINGS and a.get("id"):
            self._heading = tag
            self.sections.append({"anchor": a["id"], "heading": "", "text": ""})
        if tag in ("script", "style") or "anchor-link" in (a.get("class") or ""):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if not self._depth:
            return
        if tag in ("script", "style", "a") and self._skip:
            self._skip -= 1
        if tag == self._heading:
            self._heading = None
        self._depth -= 1

    def handle_data(self, data: str) -> None:
        if not self._depth or self._skip or not self.sections:
            return
        key = "heading" if self._heading else "text"
        self.sections[-1][key] += data


def page_sections(html: str, page: str, title: str) -> list[dict[str, str]]:
    """The searchable sections of one page: ``page``, ``title``, ``heading``, ``anchor``, ``text``."""
    parser = _Sections()
    parser.feed(html)
    out = []
    for s in parser.sections:
        text = " ".join(s["text"].split())[:MAX_TEXT]
        heading = " ".join(s["heading"].split()).rstrip("¶").strip()
        out.append({"page": page, "title": title, "heading": heading, "anchor": s["anchor"], "text": text})
    return out


def write_index(out_dir: Path, entries: list[dict[str, str]]) -> Path:
    path = out_dir / INDEX_FILE
    path.write_text(
        "window.SEARCH_INDEX = " + json.dumps(entries, ensure_ascii=False) + ";\n", encoding="utf-8"
    )
    return path


# What the search form and page say, by the name the page's script or HTML uses.
MESSAGES = {
    "label": N_("Search the series"),
    "placeholder": N_("Search"),
    "button": N_("Search"),
    "heading": N_("Search"),
    "words": N_("Words to find"),
    "empty": N_("Type one or more words."),
    "found": N_("{count} sections match {query}."),
    "none": N_("Nothing matches {query}."),
    "introduction": N_("introduction"),
    "quoted": N_("\u201c{query}\u201d"),
}


def messages(lang: str | None = None) -> dict[str, str]:
    """:data:`MESSAGES` in ``lang`` (a missing translation stops the build)."""
    return {name: ui_text(english, lang) for name, english in MESSAGES.items()}


def form(lang: str | None = None) -> str:
    """The form every page's chapter list carries."""
    t = {name: escape(value) for name, value in messages(lang).items()}
    return (
        f'<form class="search" role="search" action="{PAGE}">'
        f'<input type="search" name="q" aria-label="{t["label"]}" placeholder="{t["placeholder"]}">'
        f' <button type="submit">{t["button"]}</button></form>'
    )


# searchHits(index, query): the sections that hold every word of the query (in any order, as
# substrings, ignoring case; a CJK run not held whole matches by pieces of two or more characters,
# longest first, at half the score), more hits and hits in the heading first. Also run by the
# tests, under Node.
MATCH = r"""
function searchWords(q) {
  return q.toLowerCase().split(/\s+/).filter(Boolean);
}
function searchPieces(w, hay) {
  var out = [], i = 0;
  while (i < w.length) {
    var j = w.length;
    while (j > i + 2 && hay.indexOf(w.slice(i, j)) < 0) j--;
    if (j - i < 2 || hay.indexOf(w.slice(i, j)) < 0) return null;
    out.push(w.slice(i, j));
    i = j;
  }
  return out;
}
function searchHits(index, q) {
  var CJK = /[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/;
  var words = searchWords(q), hits = [];
  var count = function (text, w) { return text.split(w).length - 1; };
  index.forEach(function (e) {
    var heading = e.heading.toLowerCase(), text = e.text.toLowerCase(), score = 0;
    for (var i = 0; i < words.length; i++) {
      var w = words[i], n = count(text, w), h = heading.indexOf(w) >= 0;
      if (!n && !h && CJK.test(w)) {
        var parts = searchPieces(w, heading + "\n" + text);
        if (!parts) return;
        var least = Math.min.apply(null, parts.map(function (p) { return count(text, p); }));
        score += Math.min(least, 10) / 2;
        continue;
      }
      if (!n && !h) return;
      score += Math.min(n, 10) + (h ? 10 : 0);
    }
    hits.push({e: e, score: score});
  });
  hits.sort(function (a, b) { return b.score - a.score; });
  return hits;
}
"""

# The search page's script: reads ?q=, runs searchHits and lists the results, in the words of
# window.SEARCH_TEXT (:func:`messages`).
SCRIPT = (
    MATCH
    + r"""
(function () {
  var T = window.SEARCH_TEXT;
  var say = function (template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, k) { return k in values ? values[k] : m; });
  };
  var q = (new URLSearchParams(location.search).get("q") || "").trim();
  var input = document.getElementById("search-query");
  var status = document.getElementById("search-status");
  var list = document.getElementById("search-results");
  input.value = q;
  if (!q) { status.textContent = T.empty; return; }
  var words = searchWords(q);
  var hits = searchHits(window.SEARCH_INDEX, q);
  var quoted = say(T.quoted, {query: q});
  status.textContent = hits.length
    ? say(T.found, {count: hits.length, query: quoted})
    : say(T.none, {query: quoted});
  hits.slice(0, 40).forEach(function (hit) {
    var e = hit.e, li = document.createElement("li");
    var a = document.createElement("a"), p = document.createElement("p");
    a.href = e.page + "#" + e.anchor;  // as the page's own heading links write it
    a.textContent = e.title + " \u2014 " + (e.heading || T.introduction);
    var first = e.text.toLowerCase().indexOf(words[0]);
    if (first < 0) first = e.text.toLowerCase().indexOf(words[0].slice(0, 2));
    var at = Math.max(0, first - 80);
    p.textContent = (at ? "\u2026" : "") + e.text.slice(at, at + 240) + "\u2026";
    li.appendChild(a); li.appendChild(p); list.appendChild(li);
  });
})();
"""
)


def search_page_body(lang: str | None = None) -> str:
    """The body of ``search.html`` in ``lang`` (the page adds the chapter list and the licences)."""
    said = messages(lang)
    t = {name: escape(value) for name, value in said.items()}
    # JSON in a script: "</" would end the script early.
    text = json.dumps(said, ensure_ascii=False).replace("</", "<\\/")
    return (
        f"<h1>{t['heading']}</h1>\n"
        f'<form role="search" action="{PAGE}"><label for="search-query">{t["words"]}</label> '
        '<input id="search-query" type="search" name="q">'
        f' <button type="submit">{t["button"]}</button></form>\n'
        '<p id="search-status" role="status" aria-live="polite"></p>\n<ol id="search-results"></ol>\n'
        f'<script src="{escape(INDEX_FILE)}"></script>\n'
        f"<script>window.SEARCH_TEXT = {text};\n{SCRIPT}</script>"
    )

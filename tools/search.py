"""Offline full-text search for the web site: an index written at build time, read in the browser.

The index is a script (``search-index.js``, ``window.SEARCH_INDEX = [...]``) and the search page
(``search.html``) a plain page whose script matches the words of a query against it. Both work
from ``file:`` URLs with no server and no network, where a search that fetches its index
(pagefind, lunr with a JSON index) cannot: browsers refuse ``fetch`` and module imports on
``file:`` pages. One entry per section of a chapter (the text under one heading of its prose,
code left out), so that a result links to the place it was found.
"""

from __future__ import annotations

import json
from html import escape
from html.parser import HTMLParser
from pathlib import Path

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


# The form every page's chapter list carries.
FORM = (
    f'<form class="search" role="search" action="{PAGE}">'
    '<input type="search" name="q" aria-label="Search the series" placeholder="Search">'
    ' <button type="submit">Search</button></form>'
)

# Matches every word of the query (in any order, as substrings, ignoring case) against each
# section; more hits and hits in the heading rank higher.
SCRIPT = r"""
(function () {
  var q = (new URLSearchParams(location.search).get("q") || "").trim();
  var input = document.getElementById("search-query");
  var status = document.getElementById("search-status");
  var list = document.getElementById("search-results");
  input.value = q;
  if (!q) { status.textContent = "Type one or more words."; return; }
  var words = q.toLowerCase().split(/\s+/).filter(Boolean);
  var hits = [];
  window.SEARCH_INDEX.forEach(function (e) {
    var heading = e.heading.toLowerCase(), text = e.text.toLowerCase(), score = 0;
    for (var i = 0; i < words.length; i++) {
      var w = words[i], n = text.split(w).length - 1, h = heading.indexOf(w) >= 0;
      if (!n && !h) return;
      score += Math.min(n, 10) + (h ? 10 : 0);
    }
    hits.push({e: e, score: score});
  });
  hits.sort(function (a, b) { return b.score - a.score; });
  var quoted = "\u201c" + q + "\u201d";
  status.textContent = hits.length
    ? hits.length + " sections match " + quoted + "."
    : "Nothing matches " + quoted + ".";
  hits.slice(0, 40).forEach(function (hit) {
    var e = hit.e, li = document.createElement("li");
    var a = document.createElement("a"), p = document.createElement("p");
    a.href = e.page + "#" + e.anchor;  // as the page's own heading links write it
    a.textContent = e.title + " \u2014 " + (e.heading || "introduction");
    var at = Math.max(0, e.text.toLowerCase().indexOf(words[0]) - 80);
    p.textContent = (at ? "\u2026" : "") + e.text.slice(at, at + 240) + "\u2026";
    li.appendChild(a); li.appendChild(p); list.appendChild(li);
  });
})();
"""


def search_page_body() -> str:
    """The body of ``search.html`` (the page adds the chapter list and the licences)."""
    return (
        "<h1>Search</h1>\n"
        f'<form role="search" action="{PAGE}"><label for="search-query">Words to find</label> '
        '<input id="search-query" type="search" name="q"> <button type="submit">Search</button></form>\n'
        '<p id="search-status" role="status" aria-live="polite"></p>\n<ol id="search-results"></ol>\n'
        f'<script src="{escape(INDEX_FILE)}"></script>\n<script>{SCRIPT}</script>'
    )

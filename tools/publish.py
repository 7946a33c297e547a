"""What the slide decks (``tools.slides``) and the web site (``tools.site``) share: stored
notebooks turned into HTML that opens offline, with nothing fetched from a CDN.

- Maths is rendered at build time to MathML (``latex2mathml``, pure Python), which browsers
  draw natively: no MathJax, no script, nothing to load.
- An explorer (an ipywidgets view) cannot run in a static page. Its output becomes the still of
  its default view that the notebook stored in its widget state (the images its ``Output``
  widgets held when the notebook was executed), with a line saying that it is interactive in
  JupyterLab; never the dead ``VBox(...)`` text.
- Progress bars (on ``stderr``, or as text with carriage returns on ``stdout``) are left out;
  the decks also leave out a training cell's printed log.

Used by ``python -m tools.slides`` and ``python -m tools.site`` (``make slides``, ``make site``);
outside the attnlib package, so the wheel that notebooks install does not ship it.
"""

from __future__ import annotations

import copy
import re
from html import escape
from pathlib import Path

from .ui import N_
from .ui import text as ui_text

TEMPLATES = Path(__file__).with_name("templates")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CODE_STYLE = "xcode"  # a Pygments style whose colours all pass WCAG AA on the code background
INTERACTIVE_NOTE = N_(
    "Interactive explorer: open this notebook in JupyterLab and run it to use the controls."
)
# The alt text of an explorer's still begins with this, then the cell's caption.
STILL_ALT = N_("A still of the explorer's default view: ")
STILL_NOTE = N_(
    "A still of the explorer's default view. It is interactive in JupyterLab: open the notebook "
    "and run it to use the controls."
)
# The words the page and deck templates write (``resources["ui"]``), by the name they use.
TEMPLATE_TEXT = {
    "figure_alt": N_("figure drawn by the code above"),
    "zoom_title": N_("show the figure at full size"),
    "zoom_cue": N_("Tap or click to enlarge"),
    "zoom_close": N_("× Close"),  # noqa: RUF001 (the multiplication sign is the close mark)
    "slides": N_("slides"),
}
# The ``lang`` attribute of a page in each language the catalogues name (``zh_CN`` -> ``zh-CN``).
HTML_LANG = {"en": "en", "zh_CN": "zh-CN"}


def html_lang(lang: str | None) -> str:
    """The BCP 47 tag of ``lang`` (a catalogue's name, ``None`` for English) for ``<html lang>``."""
    lang = lang or "en"
    if lang not in HTML_LANG:
        raise ValueError(f"expected a language among {sorted(HTML_LANG)}, got {lang!r}")
    return HTML_LANG[lang]


def template_text(lang: str | None) -> dict[str, str]:
    """:data:`TEMPLATE_TEXT` in ``lang``, for the templates (a missing translation stops the build)."""
    return {name: ui_text(english, lang) for name, english in TEMPLATE_TEXT.items()}


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def slide_type(cell: dict) -> str:
    """The cell's RISE / reveal.js slide type ('slide', 'subslide', 'fragment', 'notes', 'skip' or '-')."""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def title_of(nb: dict) -> str:
    """The first level-1 heading of the notebook, without the '#'."""
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown":
            match = re.search(r"^#\s+(.+)$", _source(cell), re.M)
            if match:
                return match.group(1).strip()
    return ""


# --- explorers -------------------------------------------------------------------------------


def widget_still(state: dict, model_id: str) -> list[dict]:
    """The outputs (images first) that the ``Output`` widgets under ``model_id`` stored.

    Args:
        state: the notebook's widget state, ``{model_id: {"model_name": ..., "state": ...}}``.
        model_id: the id of the view an output cell shows.

    Returns:
        Display outputs in document order; empty when the notebook stored none.
    """
    found: list[dict] = []
    seen: set[str] = set()

    def walk(mid: str) -> None:
        if mid in seen or mid not in state:
            return
        seen.add(mid)
        model = state[mid]
        if model.get("model_name") == "OutputModel":
            found.extend(o for o in model["state"].get("outputs", []) if o.get("output_type") != "stream")
        for child in model.get("state", {}).get("children", []):
            walk(child.removeprefix("IPY_MODEL_"))

    walk(model_id)
    return found


def _note_output(text: str) -> dict:
    html = f'<p class="explorer-note">{escape(text)}</p>'
    return {"output_type": "display_data", "metadata": {}, "data": {"text/html": html, "text/plain": text}}


# A tqdm bar as text: "37%|###   | 211/564 [00:02<00:02, 121.04it/s]".
_BAR = re.compile(r"\d+%\|.*\|\s*\d+/\d+\s*\[|\d+/\d+\s*\[[\d:<?]+,\s*[\d.?]+\s*(it/s|s/it)\]")


def _text(out: dict) -> str:
    text = out.get("text", "")
    return "".join(text) if isinstance(text, list) else text


def _has_bar(text: str) -> bool:
    return "\r" in text or bool(_BAR.search(text))


def _without_bars(text: str) -> str:
    """Stream text as a terminal would leave it (each line's last carriage-return segment),
    without progress-bar lines; the epoch lines printed above a bar stay."""
    parts = text.split("\n")
    kept = []
    for i, part in enumerate(parts):
        line = part.split("\r")[-1]
        if not _BAR.search(line):
            kept.append(line + ("\n" if i < len(parts) - 1 else ""))
    out = "".join(kept)
    return "" if not out.strip() else out


def static_outputs(nb: dict, training_logs: bool = True, lang: str | None = None) -> dict:
    """A copy of ``nb`` fit for a static page: explorers as stills, no stderr, no widget state.

    Args:
        nb: a notebook (dict).
        training_logs: keep the printed log (stdout) of a cell that also drew a progress bar
            (wrote to stderr), i.e. a training cell; the decks leave it out.
        lang: the language of the lines said about explorers (``None``: English).
    """
    still_alt, still_note = ui_text(STILL_ALT, lang), ui_text(STILL_NOTE, lang)
    interactive_note = ui_text(INTERACTIVE_NOTE, lang)
    nb = copy.deepcopy(nb)
    widgets = nb.get("metadata", {}).pop("widgets", {})
    state = widgets.get(WIDGET_STATE, {}).get("state", {})
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        outputs = []
        streams = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        trains = any(o.get("name") == "stderr" or _has_bar(_text(o)) for o in streams)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                if out.get("name") == "stderr" or (trains and not training_logs):
                    continue  # progress bars, and in the decks training logs
                text = _without_bars(_text(out))
                if not text:
                    continue
                out = {**out, "text": text}
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                outputs.append(out)
                continue
            still = widget_still(state, view.get("model_id", ""))
            outputs += [*still, _note_output(still_note if still else interactive_note)]
            caption = cell.get("metadata", {}).get("caption")
            if still and caption and not caption.startswith(still_alt):
                cell["metadata"]["caption"] = f"{still_alt}{caption[0].lower()}{caption[1:]}"
        cell["outputs"] = outputs
    return nb


# --- maths -----------------------------------------------------------------------------------


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """MathML for one TeX formula; on TeX that latex2mathml cannot read, the TeX in a <code>."""
    from latex2mathml.converter import convert

    # latex2mathml reads `aligned` as plain text (a literal "&" on screen), `align*` as a table
    tex = re.sub(r"\\(begin|end)\{aligned\}", r"\\\1{align*}", tex.strip())
    try:
        return convert(tex, display="block" if display else "inline")
    except Exception:  # an unsupported command: show the TeX, marked, rather than fail the build
        return f'<code class="tex-error">{escape(tex)}</code>'


# A CJK character or full-width punctuation mark (Chinese, Japanese kana, Korean, the full-width
# forms and the CJK symbols block).
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_CJK_BREAK = re.compile(rf"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")
_FENCE = re.compile(r"^\s*(```|~~~)")


def join_cjk_lines(source: str) -> str:
    """Markdown with the line breaks inside a paragraph that fall between two CJK characters
    removed: browsers draw such a break as a space, which Chinese text does not have. Code
    fences, headings and other lines that a break ends (a ``#`` heading, a table row) keep theirs;
    text without CJK is returned unchanged."""
    if not re.search(f"[{_CJK}]", source):
        return source
    out: list[str] = []
    fenced = False
    for line in source.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif (
            not fenced
            and out
            and not re.match(r"\s*(#|\||$)", out[-1])
            and not re.match(r"\s*(#|\||[-*+>]\s|\d+[.)]\s|$)", line)
            and _CJK_BREAK.search(out[-1][-1:] + "\n" + line.lstrip()[:1])
        ):
            out[-1] += line.lstrip()
            continue
        out.append(line)
    return "\n".join(out)


def markdown_to_html(source: str, **renderer_options: object) -> str:
    """Markdown (with $...$ maths) to HTML, the maths as MathML; in Chinese text, a line break
    between two CJK characters is no space (:func:`join_cjk_lines`)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    source = join_cjk_lines(source)

    class MathMLRenderer(IPythonRenderer):
        def block_math(self, body: str) -> str:
            return tex_to_mathml(body, display=True)

        def multiline_math(self, text: str) -> str:
            return tex_to_mathml(text.strip().strip("$"), display=True)

        def latex_environment(self, name: str, body: str) -> str:
            return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

        def inline_math(self, body: str) -> str:
            return tex_to_mathml(body)

    return MarkdownWithMath(renderer=MathMLRenderer(escape=False, **renderer_options)).render(source)


# IPython's tracebacks colour their text with inline 256-colour styles (``style="color:
# rgb(0,135,0)"``), several below WCAG AA contrast (4.5:1) on the error background (#fdd). Each
# such colour is darkened, hue kept, until it reaches 4.5:1 there (and so on white too).
_INLINE_RGB = re.compile(r'style="color: rgb\((\d+),(\d+),(\d+)\)"')
ERROR_BACKGROUND = (0xFF, 0xDD, 0xDD)


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_colours(html: str, minimum: float = 4.5) -> str:
    """``html`` with every inline text colour darkened until it reaches ``minimum`` contrast on
    the error background."""

    def darken(match: re.Match) -> str:
        rgb = tuple(int(c) for c in match.groups())
        scale = 1.0
        while contrast(tuple(c * scale for c in rgb), ERROR_BACKGROUND) < minimum:
            scale -= 0.02
        r, g, b = (round(c * scale) for c in rgb)
        return f'style="color: rgb({r},{g},{b})"'

    return _INLINE_RGB.sub(darken, html)


def exporter(kind: str, template: str, lang: str | None = None):
    """An nbconvert exporter (``kind`` 'html' or 'slides') using one of our templates, for pages
    in ``lang`` (``<html lang>``; ``None``: English)."""
    from jinja2 import pass_context
    from nbconvert.exporters import HTMLExporter, SlidesExporter

    base = SlidesExporter if kind == "slides" else HTMLExporter

    class Exporter(base):
        @pass_context
        def markdown2html(self, context, source):
            cell = context.get("cell", {})
            return markdown_to_html(
                source,
                attachments=cell.get("attachments", {}),
                anchor_link_text=self.anchor_link_text,
                exclude_anchor_links=self.exclude_anchor_links,
            )

        def from_notebook_node(self, nb, resources=None, **kw):
            # HTMLExporter's own re-parses the whole page with BeautifulSoup to add alt texts
            # (our templates write them) and tab stops: half the build time, for nothing here.
            from nbconvert.exporters.templateexporter import TemplateExporter
            from nbconvert.filters.highlight import Highlight2HTML
            from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

            info = nb.metadata.get("language_info", {})
            lexer = info.get("pygments_lexer", info.get("name"))
            self.register_filter("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
            resources = self._init_resources(resources)
            self.register_filter(
                "filter_data_type",
                WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
            )
            html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return readable_colours(html), resources

    from traitlets.config import Config

    # Pygments' "xcode" colours all reach WCAG AA contrast (4.5:1) on the code background; the
    # default style's comments, numbers and keywords do not (4.2-4.4:1).
    config = Config({"CSSHTMLHeaderPreprocessor": {"style": CODE_STYLE}})
    exp = Exporter(config=config, extra_template_basedirs=[str(TEMPLATES)], template_name=template)
    exp.exclude_input_prompt = True
    exp.exclude_output_prompt = True
    exp.language_code = html_lang(lang)
    return exp

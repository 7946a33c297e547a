"""The language of what attnlib says to a student: check verdicts and hints, explorer labels, errors.

Shapes: none. English is the default; ``set_language("zh_CN")`` (or the environment variable
``ATTNLIB_LANG=zh_CN`` before ``import attnlib``) switches to Simplified Chinese. Each English
string is looked up, when it is shown, in the compiled catalogue shipped inside the package,
``attnlib/locale/zh_CN/LC_MESSAGES/attnlib.mo``, read with the standard library's ``gettext`` the
first time a translation is asked for (never while the language is English). Its source, the
catalogue translators edit, is ``locale/zh_CN/attnlib.po`` in the repository; ``make po`` compiles
it. A string with no translation is shown in English, so a
student never meets an error for a missing one; tests switch that off with :func:`strict` (or
``ATTNLIB_I18N_STRICT=1``) and get a :class:`KeyError` naming the string instead.

A string with variable parts is a fixed English template with ``{named}`` placeholders, translated
then formatted: ``tr("case {i}/{n} ({name})").format(i=1, n=4, name=...)``. Where such a string is
made long before it is shown (a hint handed to a check), :func:`fmt` makes it: a :class:`Text`, a
``str`` equal to the English, that :func:`tr` translates template and parts. :func:`N_` marks a
string for the catalogue where it is written without translating it (``tools/lib_catalogue.py``
extracts all three).

Used by every notebook, 01 (dot-product attention) to 14 (attention in vision): the Chinese edition's
set-up cell calls ``attnlib.set_language("zh_CN")``.
"""

from __future__ import annotations

import gettext
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

__all__ = ["N_", "Text", "fmt", "language", "set_language", "shown", "strict", "tr"]

#: The languages attnlib speaks, and the other spellings accepted for them.
LANGUAGES = ("en", "zh_CN")
ALIASES = {"zh": "zh_CN", "zh-CN": "zh_CN", "zh_cn": "zh_CN", "zh-cn": "zh_CN"}
LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "attnlib"


def _canonical(lang: str) -> str:
    """``lang`` as one of :data:`LANGUAGES`, or a ValueError naming what is accepted and what came."""
    if isinstance(lang, str):
        lang = ALIASES.get(lang.strip(), lang.strip())
        if lang in LANGUAGES:
            return lang
    accepted = ", ".join(repr(x) for x in (*LANGUAGES, *ALIASES))
    raise ValueError(f"expected a language among {accepted}, got {lang!r}")


_language = _canonical(os.environ.get("ATTNLIB_LANG") or "en")
_strict = os.environ.get("ATTNLIB_I18N_STRICT", "") not in ("", "0")
#: Called with every string :func:`tr` looks up outside English (tests record what is shown).
_listeners: list[Callable[[str], None]] = []


def set_language(lang: str) -> None:
    """Show attnlib's feedback in ``lang``: ``"en"`` (the default) or ``"zh_CN"`` (also ``"zh"``,
    ``"zh-CN"``). Takes effect for everything shown from then on."""
    global _language
    _language = _canonical(lang)


def language() -> str:
    """The language attnlib's feedback is shown in now: ``"en"`` or ``"zh_CN"``."""
    return _language


@contextmanager
def strict(on: bool = True) -> Iterator[None]:
    """Inside, a string with no translation raises :class:`KeyError` instead of showing the English."""
    global _strict
    before, _strict = _strict, on
    try:
        yield
    finally:
        _strict = before


def N_(english: str) -> str:  # noqa: N802 (gettext's name for a marker that translates nothing)
    """Mark ``english`` for the catalogue where it is written; returns it unchanged."""
    return english


class Text(str):
    """A string made from a template and parts by :func:`fmt`: the English as a ``str``, which
    :func:`tr` shows translated (the template looked up, then its :class:`Text` parts)."""

    template: str | None  # None: already in the current language (:func:`shown`)
    parts: dict[str, object]


def fmt(template: str, **parts: object) -> Text:
    """``template.format(**parts)`` as a :class:`Text`: equal to that English string, and shown by
    :func:`tr` as the translated template filled with the parts (each translated if a :class:`Text`;
    numbers, code and names as they are). ``fmt(english)`` with no parts marks a whole string."""
    text = Text(template.format(**parts))
    text.template, text.parts = template, parts
    return text


def shown(text: str) -> Text:
    """``text``, already in the current language (made of translated pieces), as a :class:`Text`
    that :func:`tr` hands back unchanged."""
    done = Text(text)
    done.template, done.parts = None, {}
    return done


def catalogue_path(lang: str) -> Path:
    """The compiled catalogue of ``lang`` shipped in the package: ``locale/<lang>/LC_MESSAGES/attnlib.mo``."""
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


@cache
def translations(lang: str) -> dict[str, str]:
    """English -> translation for every entry of ``lang``'s compiled catalogue (translated, not
    fuzzy: only those are compiled)."""
    path = catalogue_path(lang)
    if not path.exists():
        return {}
    with open(path, "rb") as f:
        compiled = gettext.GNUTranslations(f)
    # GNUTranslations keeps the entries in _catalog, the standard library's own since Python 2; the
    # empty key is the catalogue's header, not a string attnlib shows.
    return {english: text for english, text in compiled._catalog.items() if english}


def tr(english: str) -> str:
    """``english`` in the current language: itself in English, else its translation (the English
    where there is none, or a KeyError naming it under :func:`strict`)."""
    if _language == "en":
        return english
    if isinstance(english, Text) and english.template is None:
        return str(english)
    if isinstance(english, Text) and english.parts:
        parts = {k: tr(v) if isinstance(v, Text) else v for k, v in english.parts.items()}
        return tr(english.template).format(**parts)
    english = str(english)
    for listener in _listeners:
        listener(english)
    translated = translations(_language).get(english)
    if translated is not None:
        return translated
    if _strict:
        raise KeyError(
            f"locale/{_language}/{DOMAIN}.po has no translation of {english!r}: run make po and translate it"
        )
    return english


@contextmanager
def recording() -> Iterator[set[str]]:
    """Every English string :func:`tr` looks up (outside English) while the block runs."""
    seen: set[str] = set()
    _listeners.append(seen.add)
    try:
        yield seen
    finally:
        _listeners.remove(seen.add)

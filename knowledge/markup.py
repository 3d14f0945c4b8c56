"""Documents are data: HTML in them is removed before anything stores, shows or quotes it.

A review scraped from a web page can carry `<script>…</script>`, `<img src=x onerror=…>` or a
`javascript:` link; a bot that renders our answer as HTML would run it. `strip_markup(text)`
returns the text a reader sees, and nothing a browser would execute:

- tags are removed, not escaped (their attributes, so every event handler and href, go with
  them); the contents of script, style and similar elements are dropped, and of the made-up
  ones that forge a chat turn (<system>, <instructions>); comments and declarations go;
  entities are decoded (`&amp;` -> `&`);
- decoding can reveal markup (`&lt;script&gt;`), so the text is stripped again until it stops
  changing (a few rounds: each round removes one layer of encoding);
- what is left that a browser would still read as the start of a tag (an unclosed
  `<img src=x onerror=…` at the end, which a later `>` in an answer could close) gets a space
  after its `<`, so it stays readable text: `尺码<M码` -> `尺码< M码`;
- `javascript:`, `vbscript:`, `livescript:` and `data:<type>/` URLs are removed wherever they
  stand (a Markdown link `[领券](javascript:…)` keeps its words: 领券).

Markdown is not HTML: headings (`## 尺码表`), pipe tables, lists, emphasis and `>` quotes are
untouched; an autolink `<https://…>` keeps its address. Text without `<`, `&` or a script URL
is returned as it is, without parsing (most of a shop's text).

The loaders call `normalize_text` on every field they read (knowledge/load_*.py), and the
answer, citation snippets and titles of every result pass `strip_markup` again
(workflows/result.py): defence in depth for a KB ingested before this existed, and for a model
that writes HTML.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from citescope.knowledge.normalize import normalize

# Elements whose contents are code or data, never text a shopper reads.
_DROPPED_ELEMENTS = frozenset(
    {
        "script",
        "style",
        "template",
        "noscript",
        "iframe",
        "object",
        "embed",
        "svg",
        "math",
        "head",
        "title",
        "textarea",
        "xmp",
        "noembed",
        "noframes",
    }
)
# Made-up elements that forge a chat turn (<system>…</system>, <instructions>). Not HTML and never
# executed: at ingest they stay, because they are what tells knowledge/injection.py that the
# paragraph around them is an attack (stripping the tag alone would leave its orders as plain
# text); in output, they go with their contents.
FORGED_CHAT_ELEMENTS = frozenset({"system", "sys", "assistant", "user", "instructions", "instruction", "prompt"})
# Elements that end a line: their text must not run into the next element's.
_LINE_ELEMENTS = frozenset(
    {
        "br",
        "p",
        "div",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "blockquote",
        "pre",
        "table",
        "ul",
        "ol",
        "hr",
        "dt",
        "dd",
    }
)
_MAX_ROUNDS = 4  # layers of entity encoding undone; deeper nesting stays harmless entity text

_CODE_URL_HINT = re.compile(r"(?:script|data)\s*:")  # searched in lower-cased text only
# A scheme that runs code, spelled with spaces between letters too (browsers skip some whitespace).
_SCRIPT_SCHEME = r"(?:j\s*a\s*v\s*a|v\s*b|l\s*i\s*v\s*e)\s*s\s*c\s*r\s*i\s*p\s*t\s*:"
_DATA_SCHEME = r"d\s*a\s*t\s*a\s*:\s*(?=[a-z]+/[a-z0-9.+-]+)"
# The payload: printable ASCII up to a space. A script scheme followed by a space is prose
# ("Learning JavaScript: a guide"), not a URL: no renderer links it.
_CODE_URL = rf"(?:{_SCRIPT_SCHEME}(?=\S)|{_DATA_SCHEME})[!-~]*"
_MARKDOWN_CODE_LINK = re.compile(rf"(!?)\[([^\]\n]*)\]\(\s*<?\s*{_CODE_URL}", re.IGNORECASE)
_CODE_URL_ANYWHERE = re.compile(_CODE_URL, re.IGNORECASE)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^\s<>]+)>", re.IGNORECASE)
_TAG_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_TAG_OPENER_BUT_FORGED = re.compile(rf"<(?!/?(?:{'|'.join(sorted(FORGED_CHAT_ELEMENTS))})>)(?=[A-Za-z/!?])")


class _TextOnly(HTMLParser):
    """Collects the character data of an HTML fragment, entities decoded, tags and dropped
    elements' contents left out."""

    def __init__(self, keep_forged_chat: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.dropping: list[str] = []  # the open dropped elements, innermost last
        self.dropped = _DROPPED_ELEMENTS if keep_forged_chat else _DROPPED_ELEMENTS | FORGED_CHAT_ELEMENTS
        self.kept = FORGED_CHAT_ELEMENTS if keep_forged_chat else frozenset()

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in self.dropped:
            self.dropping.append(tag)
        elif self.dropping:
            return
        elif tag in self.kept:
            self.parts.append(f"<{tag}>")  # without attributes
        elif tag in _LINE_ELEMENTS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs) -> None:
        if not self.dropping and tag in _LINE_ELEMENTS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.dropping:
            while self.dropping and self.dropping.pop() != tag:
                pass
        elif self.dropping:
            return
        elif tag in self.kept:
            self.parts.append(f"</{tag}>")
        elif tag in _LINE_ELEMENTS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.parts.append(data)


def _text_of(fragment: str, keep_forged_chat: bool) -> str:
    parser = _TextOnly(keep_forged_chat)
    parser.feed(fragment)
    parser.close()
    return "".join(parser.parts)


def _may_hold_markup(text: str) -> bool:
    """A cheap test first: substring checks cost a fifth of a case-blind regex over long text."""
    if "<" in text or "&" in text:
        return True
    if ":" not in text:
        return False
    lowered = text.lower()
    return ("script" in lowered or "data" in lowered) and _CODE_URL_HINT.search(lowered) is not None


def strip_markup(text: str, keep_forged_chat: bool = False) -> str:
    """The text without HTML tags, dropped elements' contents, comments and code URLs, entities
    decoded (module docstring). keep_forged_chat: leave <system>-like tags (not their attributes)
    for the injection detector, as ingest does. Idempotent."""
    if not _may_hold_markup(text):
        return text
    text = _AUTOLINK.sub(r"\1", text)
    for _ in range(_MAX_ROUNDS):
        if "<" not in text and "&" not in text:
            break
        stripped = _text_of(text, keep_forged_chat)
        if stripped == text:
            break
        text = stripped
    text = _MARKDOWN_CODE_LINK.sub(lambda m: m.group(2), text)
    text = _CODE_URL_ANYWHERE.sub("", text)
    return (_TAG_OPENER_BUT_FORGED if keep_forged_chat else _TAG_OPENER).sub("< ", text)


def normalize_text(text: str) -> str:
    """knowledge.normalize, then strip_markup, then normalize again (a removed tag leaves
    spaces and blank lines behind): what every loader field goes through."""
    text = normalize(text)
    stripped = strip_markup(text, keep_forged_chat=True)
    return text if stripped == text else normalize(stripped)

"""Markup: the Jinja environment, sanitised Markdown, highlighted code, docs pages.

Jinja2 with autoescaping for pages, Pygments (class-based CSS) for code, Python-Markdown for notes
with its HTML sanitised by nh3, so no content can put script into a page. Highlighted code and
rendered Markdown are kept between builds in a FragmentCache, which the build passes in (no
module-level state).
"""

from __future__ import annotations

import hashlib
import html as html_lib
import json
import os
import re
from functools import cache

import jinja2
import markdown as markdown_lib
import nh3
from markupsafe import Markup, escape
from pygments.lexers import PythonLexer
from pygments.token import STANDARD_TYPES

from generator.files import write_json
from generator.load import facts
from generator.load.content import CHECKED_LABEL, CHECKED_NOTE, checked_labels

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "templates")


DOCS = os.path.join(os.path.dirname(TEMPLATES), "docs")


ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em", "h3", "h4", "h5",
    "hr", "i", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip


_LEXER = PythonLexer()


class FragmentCache:
    """Highlighted code and rendered Markdown from earlier builds, in one JSON file.

    Pygments and Python-Markdown were most of a no-change build's time; their output depends
    only on the text, on the libraries' versions and on this module's rendering code, which
    together make the file's stamp.
    """

    def __init__(self):
        self.entries: dict[str, str] = {}
        self.dirty = False

    @staticmethod
    def stamp() -> str:
        import pygments

        with open(__file__, "rb") as handle:
            code = hashlib.sha256(handle.read()).hexdigest()
        parts = (pygments.__version__, markdown_lib.__version__, getattr(nh3, "__version__", "?"), code)
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("stamp") == self.stamp() and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
        except (OSError, ValueError, AttributeError):
            self.entries = {}

    def save(self, path: str) -> None:
        if not self.dirty:
            return
        write_json(path, {"stamp": self.stamp(), "entries": self.entries}, separators=(",", ":"))
        self.dirty = False

    def markdown(self, text: str) -> Markup:
        """Markdown to HTML, sanitised: no script, no event handlers, no javascript: URLs."""
        return Markup(self.get("m", text, _markdown))

    def highlight(self, code: str) -> Markup:
        """Python source as HTML: coloured tokens in spans, all text escaped."""
        return Markup(self.get("h", code, _highlight))

    def get(self, kind: str, text: str, make) -> str:
        key = kind + hashlib.sha1(text.encode()).hexdigest()
        html = self.entries.get(key)
        if html is None:
            html = self.entries[key] = str(make(text))
            self.dirty = True
        return html


_EMPTY_HEADER = re.compile(r"<th( align=\"\w+\")?>\s*</th>")


def _markdown(text: str) -> str:
    html = markdown_lib.markdown(text, extensions=["tables", "fenced_code"], output_format="html")
    html = _EMPTY_HEADER.sub(r"<td\1></td>", html)  # a table's empty corner is no header (a screen reader would announce nothing)
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
    return clean


# The token kinds the stylesheet colours, each as one short class (Pygments' names, grouped by
# colour: keyword, string, number, comment, function or class name, builtin, error); other tokens
# (names, operators, whitespace) are plain text, which keeps pages small. A <wbr> after . and (
# lets wrapped code break between tokens (after [ { , it cost the largest page 2 KB for breaks a
# space nearby already gives); none before a space (a break already) or a closing bracket (no use).
TOKEN_COLOURS = {
    "k": ("k", "kn", "kd", "kr", "kc", "kp", "ow"),
    "s": ("s", "s1", "s2", "sa", "sb", "sc", "sd", "se", "sh", "si", "sr", "ss", "sx", "dl"),
    "m": ("m", "mi", "mf", "mh", "mo", "mb", "il"),
    "c": ("c", "c1", "cm", "ch", "cs", "cp", "cpf"),
    "f": ("nf", "fm", "nc", "nd"),
    "b": ("nb", "bp", "ne", "vm"),
    "e": ("err",),
}


STYLED_TOKENS = {name: colour for colour, names in TOKEN_COLOURS.items() for name in names}


_BREAK_AFTER = re.compile(r"([.(])(?![\s)\]}])")


@cache
def _token_class(ttype) -> str:
    while ttype is not None:
        css = STANDARD_TYPES.get(ttype)
        if css in STYLED_TOKENS:
            return STYLED_TOKENS[css]
        ttype = ttype.parent
    return ""


def _highlight(code: str) -> str:
    runs: list[list] = []  # [class, text], adjacent tokens of one class merged
    for ttype, value in _LEXER.get_tokens(code.rstrip("\n")):
        css = _token_class(ttype)
        if runs and runs[-1][0] == css:
            runs[-1][1] += value
        else:
            runs.append([css, value])
    html = (f'<span class="{css}">{escape(text)}</span>' if css else _BREAK_AFTER.sub(r"\1<wbr>", str(escape(text))) for css, text in runs)
    return "".join(html).rstrip("\n")


def document(path: str) -> tuple[str, Markup]:
    """A Markdown file of docs/ as a page: its first heading as the title, its HTML sanitised."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), os.path.basename(path))
    html = markdown_lib.markdown(text, extensions=["tables", "fenced_code", "toc"], output_format="html")
    headings = {tag: {"id"} for tag in ("h1", "h2", "h3", "h4")}
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS | {"h1", "h2"},
        attributes={"a": {"href", "title"}, "td": {"align"}, "th": {"align"}, **headings},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
    return title, Markup(clean)


def markdown(text: str) -> Markup:
    """Markdown to HTML, sanitised (no cache: the site's pages go through a FragmentCache)."""
    return Markup(_markdown(text))


def notes_markdown(row, fact_values: dict, fragments: FragmentCache | None = None) -> Markup:
    """A row's notes as HTML: facts filled in, each "(checked: label)" showing its check line."""
    lines = {}
    for cell in row.cells:
        if cell.check is not None:
            for line in cell.check.text.splitlines():
                match = CHECKED_LABEL.search(line)
                if match:
                    lines.setdefault(match.group(1), line[: match.start()].strip())

    def checked(match: re.Match) -> str:
        labels = checked_labels(match)
        title = " · ".join(lines.get(label, label) for label in labels)
        return f'(<abbr title="{html_lib.escape(title, quote=True)}">checked</abbr>)'

    return (fragments or FragmentCache()).markdown(CHECKED_NOTE.sub(checked, facts.expand(row.notes, fact_values)))


def environment(fact_values: dict | None = None, fragments: FragmentCache | None = None) -> jinja2.Environment:
    """The Jinja environment of the site's templates; Markdown and code go through `fragments`."""
    fact_values = fact_values or {}
    fragments = fragments if fragments is not None else FragmentCache()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["markdown"] = lambda text: fragments.markdown(facts.expand(text, fact_values))
    env.filters["notes"] = lambda row: notes_markdown(row, fact_values, fragments)
    env.filters["highlight"] = fragments.highlight
    env.filters["seconds"] = _seconds
    env.filters["code"] = inline_code
    env.filters["plain"] = plain
    return env


_BACKTICKS = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> Markup:
    """Plain text in which `backticks` mark code (titles, facts, reasons): escaped, the code in <code>."""
    return Markup(_BACKTICKS.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(text))))


def plain(text: str) -> str:
    """The same text where no markup can go (an attribute, a visually hidden label): the backticks dropped."""
    return _BACKTICKS.sub(r"\1", text)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def safe_url(url: str) -> str:
    """Only http(s) URLs reach an href; anything else is dropped."""
    return url if url.startswith(("https://", "http://")) else ""

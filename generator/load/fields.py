"""The schema machinery: typed fields that validate themselves, and the Reader that applies them.

A kind of mapping (a sheet, a row, a verdict…) is a `Spec`: its name and one `Field` per key, in
order. A field knows its type, whether it is required or its default, the one line the docs say
about it and its allowed values; it checks a value and reports each problem with its file:line
through the `Reader`, which collects every error instead of stopping at the first. The declarations
themselves are in generator/load/schema.py; the loaders (content.py, pages.py) read with them and
keep only the checks that need more than one field (a cell's lanes against its column's, evidence
against the rows that exist).

A value that is null (`key:` with nothing after it) counts as absent for the optional fields whose
type has `null_ok` (strings, code and a few lists), and is a type error for the others. A required
field is never null: `cells:` with nothing after it is an error, not a row with no cells.
"""

from __future__ import annotations

import ast
import difflib
import re

from generator import lanes as lane_registry
from generator.errors import ContentError
from generator.load import codeinfo, facts, yamlfile
from generator.load.yamlfile import Map, Seq
from generator.model import Snippet as SnippetValue

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def suggest(word: str, choices) -> str:
    """" (did you mean 'x'?)" for the choice closest to word, or ""."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _empty_seq() -> Seq:
    seq = Seq()
    seq.line, seq.item_lines = 0, []
    return seq


class Field:
    """One key of a kind of mapping. Subclasses say what a valid value is."""

    type_doc = "value"
    null_ok = False  # a null value counts as absent (no error) instead of as a wrong type

    def __init__(self, description: str, *, required: bool = False, default=None, default_doc: str | None = None,
                 type_doc: str | None = None, null_ok: bool | None = None, group: str | None = None):
        self.description = description
        self.required = required
        self.default = default
        self.default_doc = default_doc  # the default in words, where it is computed (not a value)
        self.group = group  # a cell's kind (code, text, none): the fields that may appear together
        if type_doc is not None:
            self.type_doc = type_doc
        if null_ok is not None:
            self.null_ok = null_ok

    def missing(self):
        """The value of an absent key."""
        return self.default

    def read(self, reader: Reader, data: Map, key: str):
        value = data[key]
        if value is None and self.required:
            reader.error(data.key_lines[key], f"'{key}' is required but has no value (nothing after '{key}:')")
            return self.missing()
        if value is None and self.null_ok:
            return self.missing()
        return self.check(reader, value, data.key_lines[key], key)

    def check(self, reader: Reader, value, line: int, key: str):
        return value

    def default_text(self) -> str:
        """The default as the docs say it ("" when there is none worth saying)."""
        if self.required:
            return ""
        if self.default_doc:
            return f"default: {self.default_doc}"
        value = self.default
        if isinstance(value, bool):
            return f"default {str(value).lower()}"
        if isinstance(value, float):
            return "default " + f"{value:g}".replace("e-0", "e-")
        return f"default {value}" if isinstance(value, int) else ""


class Str(Field):
    """A string; non-empty unless `nonempty=False`. `facts`: may use {{facts}}, checked here."""

    type_doc = "string"
    null_ok = True

    def __init__(self, description: str, *, nonempty: bool = True, facts: bool = False, message: str | None = None, **options):
        options.setdefault("default", "")
        super().__init__(description, **options)
        self.nonempty = nonempty
        self.facts = facts
        self.message = message

    def check(self, reader, value, line, key):
        if not isinstance(value, str) or (self.nonempty and not value.strip()):
            reader.error(line, self.message or f"'{key}' must be a non-empty string")
            return ""
        # A reader that expands facts (the guide and trade-off pages) checks them in every string.
        if self.facts or reader.fact_values is not None:
            facts.validate(reader, value, getattr(value, "content_line", 0) or line)
        if reader.fact_values is not None:
            value = facts.expand(str(value), reader.fact_values)
        return self.more(reader, str(value), line, key)

    def more(self, reader, value: str, line: int, key: str) -> str:
        return value


class Markdown(Str):
    type_doc = "Markdown"


class Slug(Str):
    type_doc = "slug"

    def more(self, reader, value, line, key):
        if not SLUG.match(value):
            reader.error(line, f"'{key}' must be a slug (lower-case letters, digits and '-'): '{value}'")
        return value


class PythonName(Str):
    type_doc = "Python name"

    def more(self, reader, value, line, key):
        if not value.isidentifier():
            reader.error(line, f"'{key}' must be a Python name, not '{value}'")
        return value


class Regex(Str):
    type_doc = "regular expression"

    def more(self, reader, value, line, key):
        try:
            re.compile(value)
        except re.error as exc:
            reader.error(line, f"'{key}' is not a valid regular expression: {exc}")
        return value


class Choice(Str):
    """One of a few strings."""

    def __init__(self, description: str, *, allowed, **options):
        super().__init__(description, **options)
        self.allowed = tuple(allowed)
        names = [f"`{name}`" for name in self.allowed]
        self.type_doc = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]

    def more(self, reader, value, line, key):
        if value not in self.allowed:
            reader.error(line, f"'{key}' must be one of {sorted(self.allowed)}: '{value}'{suggest(value, self.allowed)}")
        return value


class Code(Field):
    """Python source in a literal block (`|`): parsed here, so that a syntax error has its line."""

    type_doc = "Python"
    null_ok = True

    def check(self, reader, value, line, key):
        if not isinstance(value, yamlfile.Text) or not value.strip():
            reader.error(line, f"'{key}' must be Python source text")
            return None
        if value.style == ">":
            reader.error(line, f"'{key}' must be a literal block ('|'), not a folded one ('>')")
            return None
        snippet = SnippetValue(str(value), value.content_line)
        try:
            if codeinfo.parse(snippet.text) is None:  # parsed once per process, shared with the readers of the code
                ast.parse(snippet.text, filename=reader.path)  # for the error's line and message
        except SyntaxError as exc:
            reader.error(snippet.line + (exc.lineno or 1) - 1, f"'{key}' is not valid Python: {exc.msg}")
        return snippet


class Int(Field):
    """An integer, optionally in [low, high]."""

    def __init__(self, description: str, *, low: int | None = None, high: int | None = None, **options):
        super().__init__(description, **options)
        self.low, self.high = low, high
        self.span = f" from {low} to {high}" if low is not None and high is not None else ""
        self.type_doc = f"integer {low}–{high}" if self.span else "integer"

    def check(self, reader, value, line, key):
        if isinstance(value, bool) or not isinstance(value, int) or not (self.low is None or self.low <= value) or not (self.high is None or value <= self.high):
            reader.error(line, f"'{key}' must be an integer{self.span}")
            return self.default
        return value


class Number(Field):
    """A number ≥ 0 (> 0 with `positive`), as a float; `unit` ends its error message."""

    type_doc = "number"

    def __init__(self, description: str, *, positive: bool = False, unit: str = "", **options):
        super().__init__(description, **options)
        self.positive, self.unit = positive, unit

    def check(self, reader, value, line, key):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (self.positive and value == 0):
            reader.error(line, f"'{key}' must be a {'positive' if self.positive else 'non-negative'} number{self.unit}")
            return self.default
        return float(value)


class Bool(Field):
    type_doc = "boolean"

    def check(self, reader, value, line, key):
        if not isinstance(value, bool):
            reader.error(line, f"'{key}' must be true or false")
            return self.default
        return value


class List(Field):
    """A YAML list (kept as a Seq, with its items' lines) of objects or, with `strings`, of strings.

    `of` names the items in the docs ("list of rows"); `says` ends the error message, by default
    " of <of>" for a list of strings.
    """

    def __init__(self, description: str, *, of: str, nonempty: bool = False, strings: bool = False, says: str | None = None, **options):
        super().__init__(description, **options)
        self.of, self.nonempty, self.strings = of, nonempty, strings
        self.says = says if says is not None else (f" of {of}" if strings else "")
        if "type_doc" not in options:
            self.type_doc = f"{'non-empty ' if nonempty else ''}list of {of}"

    def missing(self):
        return _empty_seq()

    def check(self, reader, value, line, key):
        if not isinstance(value, Seq) or (self.nonempty and not value) or (self.strings and not all(isinstance(v, str) for v in value)):
            reader.error(line, f"'{key}' must be a {'non-empty ' if self.nonempty else ''}list{self.says}")
            return _empty_seq()
        return value


class Lanes(List):
    """Lane names, each one the lane registry knows; a tuple."""

    def __init__(self, description: str, **options):
        super().__init__(description, of="lane names", nonempty=True, strings=True, **options)

    def missing(self):
        return ()

    def check(self, reader, value, line, key):
        value = super().check(reader, value, line, key)
        for name, item_line in zip(value, value.item_lines, strict=True):
            if name not in lane_registry.LANES:
                reader.error(item_line, f"unknown lane '{name}'{suggest(name, lane_registry.LANES)}")
        return tuple(str(v) for v in value)


class Mapping(Field):
    """A mapping whose keys the loader checks (a row's cells, keyed by column id)."""

    null_ok = True

    def __init__(self, description: str, *, keys: str, values: str, **options):
        options.setdefault("type_doc", f"mapping {keys} → {values}")
        super().__init__(description, **options)
        self.says = f" of {keys} to {values}"

    def check(self, reader, value, line, key):
        if not isinstance(value, Map):
            reader.error(line, f"'{key}' must be a mapping{self.says}")
            return None
        return value


class Object(Field):
    """A nested mapping of another kind, read by the loader (`Reader.read`) with that kind's spec."""


class Spec:
    """A kind of mapping: its name (as error messages say it) and its fields, in order."""

    def __init__(self, kind: str, /, **fields: Field):
        self.kind = kind
        self.fields = fields

    def groups(self) -> dict[str, set[str]]:
        """{group: its fields} for the kinds whose fields come in groups (a cell's code/text/none)."""
        out: dict[str, set[str]] = {}
        for name, spec_field in self.fields.items():
            if spec_field.group:
                out.setdefault(spec_field.group, set()).add(name)
        return out


class Record(dict):
    """The values of one mapping's fields (defaults for the absent ones), and where each key was."""

    def __init__(self, data: Map):
        super().__init__()
        self.data = data
        self.line = data.line

    def given(self, key: str) -> bool:
        return key in self.data

    def at(self, key: str) -> int:
        """The line of key, or of the mapping where key is absent."""
        return self.data.key_lines.get(key, self.data.line)

    def content_line(self, key: str) -> int:
        """The line a string value's text starts on (after a block scalar's indicator)."""
        return getattr(self.data.get(key), "content_line", self.at(key))


class Reader:
    """Turns located YAML data into checked values with specs, collecting every error.

    `fact_values`: when given, every string read may use {{facts}} and comes back with them filled in.
    """

    def __init__(self, path: str, errors: list | None = None, fact_values: dict[str, str] | None = None):
        self.path = path
        self.errors = errors if errors is not None else []
        self.fact_values = fact_values

    def error(self, line: int, message: str) -> None:
        self.errors.append(ContentError(self.path, line, message))

    def mapping(self, data, spec: Spec, line: int) -> Map | None:
        """data if it is a mapping of spec's kind: no unknown keys, no required one missing."""
        if not isinstance(data, Map):
            self.error(getattr(data, "line", line), f"a {spec.kind} must be a mapping")
            return None
        for key in data:
            if key not in spec.fields:
                self.error(data.key_lines[key], f"unknown field '{key}' in {spec.kind}{suggest(key, spec.fields)}")
        for key, spec_field in spec.fields.items():
            if spec_field.required and key not in data:
                self.error(data.line, f"{spec.kind} is missing the required field '{key}'")
        return data

    def values(self, data: Map, spec: Spec, only=None) -> Record:
        """Every field's checked value (only those named in `only`, when given)."""
        record = Record(data)
        for key, spec_field in spec.fields.items():
            if only is None or key in only:
                record[key] = spec_field.read(self, data, key) if key in data else spec_field.missing()
        return record

    def read(self, data, spec: Spec, line: int) -> Record | None:
        data = self.mapping(data, spec, line)
        return None if data is None else self.values(data, spec)


def table(spec: Spec) -> str:
    """spec's fields as a Markdown table, for docs/schema.md."""
    grouped = any(spec_field.group for spec_field in spec.fields.values())
    head = "| field | kind | type | meaning |" if grouped else "| field | required | type | meaning |"
    lines = [head, "|---|---|---|---|"]
    for name, spec_field in spec.fields.items():
        meaning = spec_field.description
        if spec_field.default_text():
            meaning += f" ({spec_field.default_text()})"
        second = spec_field.group if grouped else ("yes" if spec_field.required else "no")
        lines.append(f"| `{name}` | {second} | {spec_field.type_doc} | {meaning} |")
    return "\n".join(lines)

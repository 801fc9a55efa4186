"""Strict YAML reading that keeps line numbers.

PyYAML silently keeps the last of two equal mapping keys and happily expands alias bombs. Here a
file is composed into nodes and turned into plain data by hand: duplicate keys, anchors/aliases and
non-string keys are errors, and every mapping remembers the line of each of its keys.
"""

from __future__ import annotations

import re

import yaml

from generator.errors import ContentError

try:  # the C parser is several times faster; fall back where libyaml is missing
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover

    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s,\[\]{}]", re.M)
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$|^[-+]?[0-9]+[eE][-+]?[0-9]+$")
_CONSTANTS = {"true": True, "True": True, "false": False, "False": False, "null": None, "~": None, "": None}


class _Resolver(yaml.resolver.BaseResolver):
    """Plain scalars are strings unless they are obviously numbers, booleans or null.

    The stock resolver runs a dozen regular expressions over every plain scalar; content needs
    only these few types, and loading a large sheet spent most of its time there.
    """

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            if value in _CONSTANTS:
                return "tag:yaml.org,2002:null" if _CONSTANTS[value] is None else "tag:yaml.org,2002:bool"
            if value[:1] in "0123456789-+." and (_INT.match(value) or _FLOAT.match(value)):
                return "tag:yaml.org,2002:int" if _INT.match(value) else "tag:yaml.org,2002:float"
        return super().resolve(kind, value, implicit)


class _Loader(_Parser, yaml.composer.Composer, _Resolver):
    def __init__(self, stream):
        _Parser.__init__(self, stream)
        if not hasattr(self, "get_single_node"):  # pragma: no cover - the pure-Python parser
            yaml.composer.Composer.__init__(self)
        _Resolver.__init__(self)


class Map(dict):
    """A mapping that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict


class Seq(list):
    """A sequence that knows its own line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list


class Text(str):
    """A string scalar that knows its line, the line its content starts on, and its YAML style."""

    line: int = 0
    content_line: int = 0
    style: str | None = None


def read(path: str, text: str) -> tuple[object, list[ContentError]]:
    """Parse one YAML document; return (data, errors). Data is None when the file is unusable."""
    # No gc.disable() here: it saved ~50 ms of a full content load, but switched the collector off for
    # the whole process (every thread of `serve`) while a library function ran.
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            if hasattr(loader, "dispose"):
                loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        message = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        hint = indentation(text.splitlines(), line)
        if hint is not None:  # the line whose indentation is wrong, which the parser reports only later
            line, said = hint
            message = f"{said} (the YAML parser says: {message})"
        return None, [ContentError(path, line, f"invalid YAML: {message}", root=True)]
    except yaml.YAMLError as exc:
        return None, [ContentError(path, 1, f"invalid YAML: {exc}", root=True)]
    if node is None:
        return None, [ContentError(path, 1, "the file is empty")]
    if _ANCHOR.search(text):  # an alias needs an anchor: only then is the event scan worth its time
        alias = _first_alias(text)
        if alias is not None:
            return None, [ContentError(path, alias, "YAML anchors and aliases are not allowed in content; the file was refused")]
    errors: list[ContentError] = []
    data = _build(node, path, errors, set())
    return data, errors


_BLOCK_SCALAR = re.compile(r"^(\s*)(?:-\s+)?[^\s#][^:#]*:\s*[|>][-+0-9]*\s*(?:#.*)?$")


_KEY = re.compile(r"^\s*(?:-\s+)?(?:[^\s:#'\"][^:#]*|'[^']*'|\"[^\"]*\")\s*:(?:\s|$)|^\s*-(?:\s|$)|^\s*#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def indentation(lines: list[str], error_line: int) -> tuple[int, str] | None:
    """(line, message) naming a wrong indentation at or before `error_line` (1-based), if one explains the
    error: a line under a block scalar (`code: |`) indented less than the block's lines but more than its
    key (it ends the block, and the parser stumbles a line later), or the error line itself indented
    unlike the lines above it."""
    block = None  # (header line, key indent, content indent)
    for number in range(1, min(error_line, len(lines)) + 1):
        text = lines[number - 1]
        if not text.strip():
            continue
        indent = _indent(text)
        if block is not None:
            header, key_indent, content_indent = block
            if content_indent is None:
                content_indent = indent if indent > key_indent else None
                block = (header, key_indent, content_indent)
                if content_indent is not None:
                    continue
            elif indent >= content_indent:
                continue
            elif key_indent < indent or not _KEY.match(text):
                return number, (f"indentation: line {number} is indented {indent} spaces, less than the {content_indent} of the block "
                                f"that starts on line {header} ({lines[header - 1].strip()}), so it ends the block: indent it to "
                                f"{content_indent} spaces to keep it in the block, or to {key_indent} if it starts the next key")  # fmt: skip
            block = None
        match = _BLOCK_SCALAR.match(text)
        if match:
            block = (number, indent, None)
    if 1 <= error_line <= len(lines) and lines[error_line - 1].strip():
        text = lines[error_line - 1]
        if "\t" in text[: len(text) - len(text.lstrip())]:
            return error_line, f"indentation: line {error_line} is indented with a tab; YAML indents with spaces"
        above = next((n for n in range(error_line - 1, 0, -1) if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")), None)
        if above is not None and _indent(lines[above - 1]) != _indent(text):
            return error_line, (f"indentation: line {error_line} is indented {_indent(text)} spaces, line {above} above it "
                                f"{_indent(lines[above - 1])}: a key of the same mapping takes the same indentation")  # fmt: skip
    return None


_SCALARS = {
    "tag:yaml.org,2002:str": str,
    "tag:yaml.org,2002:int": int,
    "tag:yaml.org,2002:float": float,
    "tag:yaml.org,2002:bool": lambda value: _CONSTANTS[value],
    "tag:yaml.org,2002:null": lambda value: None,
}


class _EventLoader(_Parser, _Resolver):
    def __init__(self, stream):
        _Parser.__init__(self, stream)
        _Resolver.__init__(self)


def _first_alias(text: str) -> int | None:
    """The line of the first alias (*name) in text, if any. Expands nothing, so a bomb costs nothing."""
    for event in yaml.parse(text, Loader=_EventLoader):
        if isinstance(event, yaml.AliasEvent):
            return event.start_mark.line + 1
    return None


def _build(node, path: str, errors: list[ContentError], seen: set[int]):
    line = node.start_mark.line + 1
    if id(node) in seen:
        errors.append(ContentError(path, line, "YAML anchors and aliases are not allowed in content"))
        return None
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        result = Map()
        result.line = line
        result.key_lines = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                errors.append(ContentError(path, key_line, "a mapping key must be a plain string"))
                continue
            if key_node.tag == "tag:yaml.org,2002:merge":
                errors.append(ContentError(path, key_line, "YAML merge keys (<<) are not allowed in content"))
                continue
            key = str(key_node.value)
            if key in result:
                first = result.key_lines[key]
                errors.append(  # a root cause: the value is dropped, and what it held is reported missing
                    ContentError(path, key_line, f"duplicate key '{key}' (first defined on line {first}): the second is ignored, "
                                                 "so errors about what it holds may follow", root=True)  # fmt: skip
                )
                continue
            result[key] = _build(value_node, path, errors, seen)
            result.key_lines[key] = key_line
        return result
    if isinstance(node, yaml.SequenceNode):
        result = Seq()
        result.line = line
        result.item_lines = []
        for item in node.value:
            result.append(_build(item, path, errors, seen))
            result.item_lines.append(item.start_mark.line + 1)
        return result
    convert = _SCALARS.get(node.tag)
    if convert is None:
        errors.append(ContentError(path, line, f"unsupported YAML tag {node.tag}"))
        return None
    value = convert(node.value)
    if isinstance(value, str):
        text = Text(value)
        text.line = line
        text.style = node.style
        # A block scalar's content starts on the line after its indicator.
        text.content_line = line + 1 if node.style in ("|", ">") else line
        return text
    return value

"""Split a page into YAML frontmatter and body, and parse it.

Written here rather than taken from python-frontmatter because the check path parses every
page of a wiki on each run: this split is a few string finds plus libyaml's CSafeLoader,
and it reports the line of a YAML error.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _yaml() -> tuple[Any, type]:
    """PyYAML and its fastest safe loader, imported on first use: a check served from the
    scan cache parses no YAML and should not pay for the import."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# The fast path: frontmatter made only of lines a strict subset of YAML covers (simple keys;
# double- or single-quoted strings, the double-quoted ones with JSON's escapes at most
# (``\"``, ``\\``, ``\n``, ``\uXXXX``...: what a JSON-writing tool emits, and YAML reads the
# same way); plain words; flow or block lists of those; dates; small integers) is read
# without PyYAML, whose import alone costs the
# pre-commit hook ~30 ms; anything else goes to PyYAML. tests/wiki/test_frontmatter.py checks
# every form against PyYAML.
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*?))? *")
_BAD = (
    r"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"  # line breaks, non-printables
)
# JSON's escapes, which YAML's double-quoted style reads alike (a \u escape of a surrogate
# excepted: JSON pairs two of them into one character, YAML does not).
_ESCAPE = r'\\(?:["\\/bfnrt]|u(?![dD][89abAB])[0-9a-fA-F]{4})'
_QUOTED = rf'"(?:[^"\\{_BAD}]|{_ESCAPE})*"|\'[^\'{_BAD}]*\''
_PLAIN = r"[A-Za-z][A-Za-z0-9_./()-]*(?: [A-Za-z0-9_./()-]+)*"
_SCALAR = re.compile(rf"(?:{_QUOTED}|{_PLAIN})")
_FLOW = re.compile(rf"\[ *(?:(?:{_QUOTED}|{_PLAIN})(?: *, *(?:{_QUOTED}|{_PLAIN}))*)? *\]")
_FLOW_ITEM = re.compile(rf"{_QUOTED}|{_PLAIN}")
_ITEM = re.compile(r"( *)- +(.*?) *")
# One level of mapping under a key (compile's ``sourceBlobs:``, a source path to its blob id):
# indented plain keys, each with a value of the subset or a git object id.
_ENTRY = re.compile(r"( +)([A-Za-z_][A-Za-z0-9_./-]*): +(.*?) *")
_OBJECT_ID = re.compile(r"[0-9a-f]{7,64}")
_NUMBER_LIKE = re.compile(r"[0-9]+|0b[01]+")  # what YAML 1.1 reads as an integer among hex digits
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_INT = re.compile(r"0|[1-9][0-9]{0,8}")
_NOT_STRINGS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()
)
_MISS = object()


def _simple_scalar(text: str) -> Any:
    """The value of one simple scalar, or _MISS when it is not in the subset."""
    if _SCALAR.fullmatch(text):
        if text[0] == '"' and "\\" in text:
            import json  # noqa: PLC0415 - escapes are rare: most pages never import it

            return json.loads(text)
        if text[0] in "\"'":
            return text[1:-1]
        return _MISS if text in _NOT_STRINGS else text
    date = _DATE.fullmatch(text)
    if date:
        try:
            return _dt.date(int(date[1]), int(date[2]), int(date[3]))
        except ValueError:
            return _MISS
    return int(text) if _INT.fullmatch(text) else _MISS


def _entry_value(text: str) -> Any:
    """A nested entry's value: a scalar of the subset, or a git object id (hex digits that
    YAML 1.1 reads as a string: not all decimal digits, not ``0b`` and binary digits)."""
    if _OBJECT_ID.fullmatch(text):
        return _MISS if _NUMBER_LIKE.fullmatch(text) else text
    return _simple_scalar(text)


def _flow_items(text: str) -> list[str] | None:
    inner = text[1:-1].strip()
    if not inner:
        return []
    items = []
    for part in _FLOW_ITEM.findall(inner):
        value = _simple_scalar(part)
        if not isinstance(value, str):
            return None
        items.append(value)
    return items


def _simple_yaml(raw: str) -> dict[str, Any] | None:
    """``raw`` read as the subset above, or None when it is not in it (use PyYAML)."""
    if len(raw) > 4096 or "\r" in raw or "\t" in raw:
        return None
    data: dict[str, Any] = {}
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        match = _KEY_LINE.fullmatch(line)
        if match is None or match[1] in data or match[1] in _NOT_STRINGS:
            return None
        text = match[2]
        if text is None or text == "":
            items: list[Any] = []
            indent = None
            while i < len(lines):
                item = _ITEM.fullmatch(lines[i])
                if item is None or (indent is not None and item[1] != indent):
                    break
                indent = item[1]
                value = _simple_scalar(item[2])
                if value is _MISS:
                    return None
                items.append(value)
                i += 1
            if not items and i < len(lines) and lines[i].startswith(" "):
                entries: dict[str, Any] = {}
                while i < len(lines):
                    entry = _ENTRY.fullmatch(lines[i])
                    if entry is None or (indent is not None and entry[1] != indent):
                        break
                    indent = entry[1]
                    value = _entry_value(entry[3])
                    if value is _MISS or entry[2] in entries or entry[2] in _NOT_STRINGS:
                        return None
                    entries[entry[2]] = value
                    i += 1
                if not entries:
                    return None
                data[match[1]] = entries
                continue
            data[match[1]] = items if items else None
        elif text[0] == "[":
            if not _FLOW.fullmatch(text):
                return None
            flow = _flow_items(text)
            if flow is None:
                return None
            data[match[1]] = flow
        else:
            value = _simple_scalar(text)
            if value is _MISS:
                return None
            data[match[1]] = value
    return data


_OPEN = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Frontmatter:
    """The frontmatter block of a page.

    ``raw`` is the YAML text between the fences (None when the page has none); ``data`` the
    parsed mapping (empty when absent or malformed); ``error`` a message with the line when
    the YAML is malformed; ``body_line`` the 0-based line index where the body starts.
    """

    raw: str | None
    data: Mapping[str, Any]
    error: str | None
    error_line: int | None
    body_line: int
    body_offset: int


def split(text: str) -> tuple[str | None, int, int]:
    """Return (yaml text or None, body start offset, body start line index)."""
    opened = _OPEN.match(text)
    if not opened:
        return None, 0, 0
    closed = _CLOSE.search(text, opened.end())
    if not closed:
        return None, 0, 0
    raw = text[opened.end() : closed.start()]
    end = closed.end()
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return raw, end, text.count("\n", 0, end)


def raw_start(text: str) -> int | None:
    """Where the frontmatter's YAML text (``split``'s first value) starts in ``text``: just
    after the opening fence; None when the page has no frontmatter."""
    opened = _OPEN.match(text)
    return opened.end() if opened and _CLOSE.search(text, opened.end()) else None


MAX_NODES = 20_000
"""Frontmatter expanding (aliases followed) to more values than this is refused: a few
hundred bytes of nested YAML aliases can otherwise expand to billions of values in any
reader that walks the data (JSON output, MCP ``read_page``)."""


def _oversized(data: Any) -> bool:
    """Whether walking ``data`` as a tree (shared references counted each time, as a JSON
    encoder would) visits more than MAX_NODES values; stops as soon as it does."""
    budget = MAX_NODES
    stack = [data]
    while stack:
        value = stack.pop()
        budget -= 1
        if budget < 0:
            return True
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set)):
            stack.extend(value)
    return False


def parse(text: str) -> Frontmatter:
    """Split and parse; malformed YAML is reported in ``error``, never raised."""
    raw, offset, body_line = split(text)
    if raw is None:
        return Frontmatter(None, {}, None, None, 0, 0)
    fast = _simple_yaml(raw)
    if fast is not None:
        return Frontmatter(raw, fast, None, None, body_line, offset)
    yaml, loader = _yaml()
    try:
        data = yaml.load(raw, Loader=loader) if raw.strip() else {}
        if ("&" in raw or "*" in raw or len(raw) > MAX_NODES) and _oversized(data):
            return Frontmatter(
                raw,
                {},
                f"frontmatter expands to more than {MAX_NODES} values "
                "(YAML aliases used as a bomb?); ignored",
                2,
                body_line,
                offset,
            )
    except RecursionError:
        return Frontmatter(
            raw, {}, "frontmatter is nested too deeply; ignored", 2, body_line, offset
        )
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1 for the fence, +1 to 1-based
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return Frontmatter(
            raw, {}, f"malformed YAML frontmatter: {problem}", line, body_line, offset
        )
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return Frontmatter(
            raw, {}, "frontmatter is not a mapping of keys to values", 2, body_line, offset
        )
    return Frontmatter(raw, data, None, None, body_line, offset)


def string_list(value: Any) -> list[str]:
    """Coerce ``aliases``-style values: a string or a list; only string items count."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []

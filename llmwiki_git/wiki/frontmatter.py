"""Split a page into YAML frontmatter and body, and parse it.

Written here rather than taken from python-frontmatter because the check path parses every
page of a wiki on each run: this split is a few string finds plus libyaml's CSafeLoader,
and it reports the line of a YAML error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any



def _yaml() -> tuple[Any, type]:
    """PyYAML and its fastest safe loader, imported on first use: a check served from the
    scan cache parses no YAML and should not pay for the import."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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
    yaml, loader = _yaml()
    try:
        data = yaml.load(raw, Loader=loader) if raw.strip() else {}
        if ("&" in raw or "*" in raw or len(raw) > MAX_NODES) and _oversized(data):
            return Frontmatter(raw, {}, f"frontmatter expands to more than {MAX_NODES} values "
                               "(YAML aliases used as a bomb?); ignored", 2, body_line, offset)
    except RecursionError:
        return Frontmatter(raw, {}, "frontmatter is nested too deeply; ignored", 2, body_line, offset)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1 for the fence, +1 to 1-based
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return Frontmatter(raw, {}, f"malformed YAML frontmatter: {problem}", line, body_line, offset)
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

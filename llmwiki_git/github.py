"""GitHub workflow commands and the step summary, as plain strings (no I/O here)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from .problems import ERROR, Problem
from .wording import plural

PER_FILE = 10
TOTAL = 50
SUMMARY_LIMIT = 1024 * 1024 - 4096  # GitHub rejects step summaries over 1 MiB


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: object) -> str:
    """One workflow command line, ``::kind k=v,...::message``, escaped so that no value (a
    branch name, an input) can end the line early and smuggle in a command of its own."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items())
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def problem_annotations(problems: Sequence[Problem]) -> list[str]:
    """At most 10 per file and 50 in all (GitHub drops the rest silently)."""
    per_file: Counter[str] = Counter()
    lines: list[str] = []
    for p in problems:
        if len(lines) >= TOTAL:
            break
        if per_file[p.path] >= PER_FILE:
            continue
        per_file[p.path] += 1
        kind = "error" if p.severity == ERROR else "warning"
        lines.append(
            command(kind, p.message, file=p.path, line=p.line, col=p.col, title=f"llmwiki {p.code}")
        )
    return lines


_MD_SPECIAL = re.compile(r"[\\`*_\[\]<>!|~&]|[\x00-\x1f\x7f-\x9f]")


def _entity(match: re.Match[str]) -> str:
    char = match.group()
    return " " if ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F else f"&#{ord(char)};"


def md_text(text: str) -> str:
    """``text`` as literal markdown (also inside a table cell): every character markdown or
    HTML could act on (backticks, ``<img>``, ``|``, links, emphasis) becomes a numeric
    character reference; control characters (CR, LF, escape sequences) become spaces."""
    return _MD_SPECIAL.sub(_entity, text)


def _cell(text: str) -> str:
    return md_text(text)


def summary(problems: Sequence[Problem], checked: int) -> str:
    """A markdown table of every problem, cut to stay under GitHub's 1 MiB limit."""
    errors = sum(1 for p in problems if p.severity == ERROR)
    warnings = len(problems) - errors
    head = (
        f"### llmwiki check\n\n{plural(checked, 'page')} checked: {plural(errors, 'error')}, "
        f"{plural(warnings, 'warning')}.\n\n"
    )
    if not problems:
        return head
    rows = ["| file | line | col | severity | problem |", "|---|---|---|---|---|"]
    size = len(head) + sum(len(r) + 1 for r in rows)
    for index, p in enumerate(problems):
        row = f"| <code>{_cell(p.path)}</code> | {p.line} | {p.col} | {p.severity} | {_cell(p.message)} |"
        if size + len(row) + 200 > SUMMARY_LIMIT:
            rows.append(
                f"\n_{len(problems) - index} more problems not shown (summary size limit)._"
            )
            break
        rows.append(row)
        size += len(row) + 1
    return head + "\n".join(rows) + "\n"

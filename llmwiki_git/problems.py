"""`Problem`: one finding of the checker, with where it is and how bad it is."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"
OFF = "off"  # not reported (a setting, or the default of a code you turn on)
SEVERITIES = (ERROR, WARNING, OFF)

#: code -> default severity. Only errors fail a check (exit 1); `[check.severity]` in
#: .llmwiki/config.toml changes them (checks/severity.py), except `unchecked-page`.
CODES = {
    "broken-link": ERROR,
    "empty-link": ERROR,
    "broken-relative-link": ERROR,
    "missing-heading": WARNING,
    "missing-block": WARNING,
    "pending-link": WARNING,
    "ambiguous-link": WARNING,
    "duplicate-title": WARNING,
    "alias-collision": WARNING,
    "empty-page": WARNING,
    "control-character": ERROR,
    "control-character-name": ERROR,
    "orphan-page": OFF,
    "malformed-frontmatter": WARNING,
    "unreadable-page": WARNING,
    "invalid-utf8": WARNING,
    "page-too-large": WARNING,
    "symlink-escape": WARNING,
    "unchecked-page": ERROR,
    "stale-page": WARNING,
    "source-missing": WARNING,
}

#: Page issues meaning the checker could not fully check the page: an error (unchecked-page)
#: for a page a change adds or modifies, so hidden links cannot slip through (fail closed).
UNCHECKABLE = frozenset({"unreadable-page", "invalid-utf8", "page-too-large"})


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    col: int
    code: str
    severity: str
    target: str | None
    message: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @property
    def location(self) -> str:
        """``path:line:col`` for text output, a newline or carriage return in the file name
        shown as ``\\n`` / ``\\r``: one problem stays one line."""
        path = (
            self.path.replace("\n", "\\n").replace("\r", "\\r")
            if "\n" in self.path or "\r" in self.path
            else self.path
        )
        return f"{path}:{self.line}:{self.col}"


def make(
    path: str, line: int, col: int, code: str, message: str, target: str | None = None
) -> Problem:
    return Problem(path, line, col, code, CODES[code], target, message)

"""Severity settings: ``[check.severity]`` in .llmwiki/config.toml, applied to a result.

Caches store problems by code; a code's severity is decided here, after the check, so
changing a setting never invalidates a cache. ``off`` drops a code's problems; a code that is
off by default (``orphan-page``) is not even computed until a setting turns it on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..errors import ConfigError
from ..problems import CODES, OFF, SEVERITIES
from .result import CheckResult

#: Codes whose severity no setting changes, and why.
LOCKED = {
    "unchecked-page": "it keeps the gate closed on pages it cannot read (docs/security.md)",
}


def severities(settings: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """Every code's severity: the defaults of `problems.CODES` with ``settings`` (code,
    severity) applied; ConfigError for an unknown code, an unknown severity or a locked code."""
    table = dict(CODES)
    for code, severity in settings:
        if code not in CODES:
            raise ConfigError(
                f"[check.severity] names an unknown problem code {code!r}",
                hint=f"the codes are: {', '.join(sorted(CODES))} (docs/check.md)",
            )
        if code in LOCKED:
            raise ConfigError(f"[check.severity] cannot change {code}: {LOCKED[code]}")
        if severity not in SEVERITIES:
            raise ConfigError(
                f"[check.severity] {code} = {severity!r}: use one of {', '.join(SEVERITIES)}"
            )
        table[code] = severity
    return table


def enabled(table: Mapping[str, str], code: str) -> bool:
    return table.get(code, OFF) != OFF


def apply(result: CheckResult, table: Mapping[str, str]) -> CheckResult:
    """``result`` with each problem at its code's severity in ``table``; codes set off dropped."""
    if all(p.severity == table.get(p.code, p.severity) for p in result.problems):
        return result
    problems = [
        p if p.severity == table[p.code] else replace(p, severity=table[p.code])
        for p in result.problems
        if table.get(p.code, p.severity) != OFF
    ]
    return CheckResult(result.checked, problems, result.base)

"""Severity settings: ``[check.severity]`` in .llmwiki/config.toml, applied to a result.

Caches store problems by code; a code's severity is decided here, after the check, so a
changed setting never invalidates a cache. For now the setting covers the provenance codes
(``stale-page``, ``source-missing``: warnings by default, errors where a team wants the gate
to refuse a source changed without its pages).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..errors import ConfigError
from ..problems import CODES, ERROR, WARNING
from .result import CheckResult

SEVERITIES = (ERROR, WARNING)
#: The codes a setting may change.
CONFIGURABLE = frozenset({"stale-page", "source-missing"})


def severities(settings: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """Every code's severity: the defaults of `problems.CODES` with ``settings`` (code,
    severity) applied; ConfigError for an unknown or unsettable code or severity."""
    table = dict(CODES)
    for code, severity in settings:
        if code not in CODES:
            raise ConfigError(f"[check.severity] names an unknown problem code {code!r}",
                              hint=f"the codes it can set are: {', '.join(sorted(CONFIGURABLE))} (docs/check.md)")
        if code not in CONFIGURABLE:
            raise ConfigError(f"[check.severity] cannot change {code}",
                              hint=f"the codes it can set are: {', '.join(sorted(CONFIGURABLE))} (docs/check.md)")
        if severity not in SEVERITIES:
            raise ConfigError(f"[check.severity] {code} = {severity!r}: use one of {', '.join(SEVERITIES)}")
        table[code] = severity
    return table


def apply(result: CheckResult, table: Mapping[str, str]) -> CheckResult:
    """``result`` with each problem at its code's severity in ``table``."""
    if all(p.severity == table.get(p.code, p.severity) for p in result.problems):
        return result
    problems = [p if p.severity == table.get(p.code, p.severity) else replace(p, severity=table[p.code])
                for p in result.problems]
    return CheckResult(result.checked, problems, result.base)

"""What a check returns: the pages checked and their problems, as a value every renderer
(CLI text/JSON/GitHub, the hook, MCP, the Action) reads, and the result algebra on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..problems import CODES, ERROR, UNCHECKABLE, WARNING, Problem
from ..problems import make as make_problem


@dataclass(frozen=True)
class CheckResult:
    """``problems`` of ``checked`` pages; with ``base`` set, only those new since that
    revision (`new_problems`)."""

    checked: int
    problems: list[Problem]
    base: str | None = None
    # With --staged, when links broke: (old, new) of the pages the index renames (renames.py)
    renames: tuple[tuple[str, str], ...] = ()

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]

    @property
    def counts(self) -> dict[str, int]:
        """Problems per code, most frequent first."""
        return dict(Counter(p.code for p in self.problems).most_common())


def sort_problems(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.path, p.line, p.col, p.code))


# A page's problems as the cache keeps them (plain tuples: `marshal` writes the cache), each
# (line, column, code, target, message): the path is the cache key's.
ProblemRow = tuple[int, int, str, str | None, str]
ProblemsRecord = tuple[ProblemRow, ...]
# A whole check's result: (pages checked, (path, line, column, code, target, message) rows).
ResultRow = tuple[str, int, int, str, str | None, str]
ResultRecord = tuple[int, tuple[ResultRow, ...]]


def problems_to_record(problems: list[Problem]) -> ProblemsRecord:
    """One page's problems as cache rows (the path is the cache key's)."""
    return tuple((p.line, p.col, p.code, p.target, p.message) for p in problems)


def problems_from_record(path: str, record: ProblemsRecord) -> list[Problem]:
    return [
        Problem(path, line, col, code, CODES[code], target, message)
        for line, col, code, target, message in record
    ]


def result_to_record(result: CheckResult) -> ResultRecord:
    return (
        result.checked,
        tuple((p.path, p.line, p.col, p.code, p.target, p.message) for p in result.problems),
    )


def result_from_record(record: ResultRecord) -> CheckResult:
    checked, rows = record
    return CheckResult(
        checked,
        [
            Problem(path, line, col, code, CODES[code], target, message)
            for path, line, col, code, target, message in rows
        ],
    )


def fail_closed(head: CheckResult, result: CheckResult, changed: set[str]) -> CheckResult:
    """``result`` with an ``unchecked-page`` error for each page of ``changed`` that ``head``
    could not fully check (NUL bytes, undecodable, oversize, unreadable), in place of the
    warning saying so (one line per page, not two): a gate that only warned would let links
    hidden in such a page through."""
    upgraded = [p for p in head.problems if p.code in UNCHECKABLE and p.path in changed]
    if not upgraded:
        return result
    extra = [
        make_problem(
            p.path,
            p.line,
            p.col,
            "unchecked-page",
            f"{p.message}: a page this change adds or modifies must be fully checkable; "
            "fix its encoding or size, or keep it out of the wiki",
        )
        for p in upgraded
    ]
    said = {(p.path, p.line, p.code) for p in upgraded}
    kept = [p for p in result.problems if (p.path, p.line, p.code) not in said]
    return CheckResult(result.checked, sort_problems(kept + extra), result.base)


def _key(problem: Problem) -> tuple[str, str, str | None]:
    return (problem.path, problem.code, problem.target)


def new_problems(base: CheckResult, head: CheckResult, base_name: str | None = None) -> CheckResult:
    """The problems of ``head`` that ``base`` did not have.

    Problems are matched by (file, code, target), not by line, so edits that move a known
    broken link do not report it again; a file that gains another occurrence of an
    already-broken target reports the occurrences beyond the old count. A page renamed or
    deleted between the two breaks links in files the change never touched: those appear
    here because the (file, target) pair was fine in ``base``.
    """
    before = Counter(_key(p) for p in base.problems)
    seen: Counter[tuple[str, str, str | None]] = Counter()
    fresh: list[Problem] = []
    for problem in head.problems:
        key = _key(problem)
        seen[key] += 1
        if seen[key] > before[key]:
            fresh.append(problem)
    return CheckResult(head.checked, fresh, base_name)

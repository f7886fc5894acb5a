"""The generic approval policy of a ``page/1`` candidate (DESIGN §6): the links an edit newly
breaks anywhere in the wiki refuse it, links broken before are only reported, pending links
(to pages open candidates would create) pass; and, when the page moved on since the editor
read it, the three-way view of what they started from, what is there now, what they propose."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..checks import CheckResult, check_wiki, fail_closed, new_problems
from ..checks.engine import mark_pending
from ..errors import UsageError
from ..gitstore.git import Git
from ..problems import Problem
from ..publication.trailers import ABSENT
from .project import ReviewProject

_BLOB = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def precondition_of(blob: str | None) -> str:
    return ABSENT if blob is None else f"blob {blob}"


def blob_of_precondition(precondition: str) -> str | None:
    """The blob id a precondition names (None for ``absent``); UsageError if it is neither."""
    if precondition == ABSENT:
        return None
    kind, _, oid = precondition.partition(" ")
    if kind != "blob" or not _BLOB.match(oid):
        raise UsageError(f"precondition {precondition!r} is neither 'absent' nor 'blob <id>'")
    return oid


@dataclass(frozen=True)
class LinkOutcome:
    new_errors: list[Problem]  # refuse
    old_errors: list[Problem]  # reported, not blocking
    pending: list[Problem]  # allowed: their candidates exist


def _generated(ws: ReviewProject, tip: str, wiki_root: str) -> set[str]:
    """The table of contents and journal llmwiki owns (rewritten by the approval itself, so
    their links never count)."""
    from ..wiki.generated import index_path, log_path, owned

    index_rel, log_rel = index_path(wiki_root), log_path(ws.project_prefix)
    return {
        rel
        for rel, kind in ((index_rel, "index"), (log_rel, "log"))
        if owned(ws.git, Path(ws.root), rel, tip, kind)
    }


def at_configured_severity(ws: ReviewProject, result: CheckResult) -> CheckResult:
    """``result`` with the repository's ``[check.severity]`` applied, exactly as ``llmwiki
    check`` applies it: a code set to ``warning`` never refuses an approval, one set ``off``
    is not reported (``unchecked-page`` cannot be changed)."""
    from ..checks.severity import apply, severities

    return apply(result, severities(ws.settings.check_severity))


def _without(result: CheckResult, paths: set[str]) -> CheckResult:
    return CheckResult(result.checked, [p for p in result.problems if p.path not in paths])


def link_outcome(ws: ReviewProject, tip: str, target: str, document: str | None) -> LinkOutcome:
    """Every page's links at ``tip`` against the wiki after ``target`` is written with
    ``document`` (None: deleted)."""
    return link_outcome_many(ws, tip, {target: document})


def link_outcome_many(
    ws: ReviewProject,
    tip: str,
    writes: Mapping[str, str | None],
    renamed: Mapping[str, str] | None = None,
) -> LinkOutcome:
    """Every page's links at ``tip`` against the wiki after every ``writes`` target is
    written with its document (None: deleted) -- all at once, so links among the written
    pages resolve within them. ``renamed``: pages whose text moves to another path (a move,
    a merge), old path -> new: a link broken before in the old page is not new in the new one."""
    before_wiki = ws.wiki(tip)
    after_wiki = before_wiki
    for target, document in writes.items():
        after_wiki = (
            after_wiki.without_page(target)
            if document is None
            else after_wiki.with_page(target, document)
        )
    generated = _generated(ws, tip, before_wiki.root_dir)
    before = _without(mark_pending(ws.git, check_wiki(before_wiki)), generated)
    if renamed:
        before = CheckResult(
            before.checked, [replace(p, path=renamed.get(p.path, p.path)) for p in before.problems]
        )
    after = _without(mark_pending(ws.git, check_wiki(after_wiki)), generated)
    after = fail_closed(
        after, after, {target for target, document in writes.items() if document is not None}
    )
    before, after = at_configured_severity(ws, before), at_configured_severity(ws, after)
    fresh = new_problems(before, after)
    fresh_keys = {id(p) for p in fresh.problems}
    return LinkOutcome(
        new_errors=fresh.errors,
        old_errors=[p for p in after.errors if id(p) not in fresh_keys],
        pending=[p for p in after.warnings if p.code == "pending-link"],
    )


def describe(problems: list[Problem], limit: int = 8) -> str:
    shown = [f"{p.path}:{p.line}: {p.message}" for p in problems[:limit]]
    more = len(problems) - limit
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _text(git: Git, blob: str | None, where: str) -> tuple[list[str], str]:
    if blob is None:
        return [], f"{where} (absent)"
    if git.object_type(blob) != "blob":
        return [], f"{where} (blob {blob[:12]} is not in this repository)"
    data = git.read_blob(blob).decode("utf-8", "replace")
    return data.splitlines(keepends=True), f"{where} (blob {blob[:12]})"


def moved(expected: str | None, at_tip: str | None) -> tuple[str, str]:
    """The refusal code and wording for a target that is not at the tip what it was."""
    if expected is None:
        return "target-appeared", "now exists"
    return ("target-vanished", "was deleted") if at_tip is None else ("target-changed", "changed")


def drift(
    git: Git, tip: str, target: str, started: str | None, proposed: str | None
) -> tuple[str, str, str, str] | None:
    """A lost update: ``target`` at ``tip`` is not the blob the editor started from. Returns
    the refusal code, its wording, the tip's precondition and the three-way view; None when
    the target is still what the editor read (every candidate kind asks this the same way)."""
    at_tip = git.blob_at(tip, target)
    if at_tip == started:
        return None
    code, what = moved(started, at_tip)
    return code, what, precondition_of(at_tip), three_way(git, target, started, at_tip, proposed)


def three_way(
    git: Git, target: str, started: str | None, now: str | None, proposed: str | None
) -> str:
    """Two unified diffs from the version the editor started from: to what is at the tip now
    (the change they did not see), and to what they propose."""
    base_lines, base_name = _text(git, started, f"{target} as the editor read it")
    now_lines, now_name = _text(git, now, f"{target} now")
    new_lines, new_name = _text(git, proposed, f"{target} as proposed")
    parts = ["=== what changed since the editor read it ===\n"]
    parts += difflib.unified_diff(base_lines, now_lines, base_name, now_name)
    parts.append("=== what the candidate proposes (against what the editor read) ===\n")
    parts += difflib.unified_diff(base_lines, new_lines, base_name, new_name)
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)

"""What compile stages, approval accepts: before a run is staged, its pages go through the
same checks ``review approve`` runs on it -- the acceptance rule for each page, then the
links of the whole wiki with every page written at once, at the repository's
``[check.severity]`` -- and a run that approval would refuse is not staged.

The offline notes quote no link that could break (``sources.clean``), so this gate is the
backstop: a model's page, or a case no quoting rule foresaw, stops here with the reason
instead of becoming a candidate nobody can approve.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..review.pagepolicy import describe, link_outcome_many
from ..review.project import ReviewProject
from ..review.stagefiles import FileWrite
from ..wiki.pages import acceptance_problem


def gate_refusal(ws: ReviewProject, base: str, writes: Sequence[FileWrite]) -> str | None:
    """Why approval would refuse ``writes`` staged on ``base`` (None: it would pass)."""
    limit = ws.settings.max_page_bytes
    for write in writes:
        if write.document is None:
            continue
        bad = acceptance_problem(write.document.encode("utf-8"), limit)
        if bad is not None:
            return f"{write.target} would not be fully checkable: {bad}"
    links = link_outcome_many(ws, base, {w.target: w.document for w in writes})
    if links.new_errors:
        return (
            f"the run would break {len(links.new_errors)} link(s), which approval refuses: "
            f"{describe(links.new_errors)}"
        )
    return None

"""What the review services take from the workspace they run in, typed: the write site's
project plus the page-size limit, the check engine's pending marking and the search index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..checks import CheckResult
from ..config import Settings
from ..publication.write import Project

if TYPE_CHECKING:
    from ..retrieval.service import Retrieval


class ReviewProject(Project, Protocol):
    @property
    def settings(self) -> Settings: ...
    def _mark_pending(self, result: CheckResult) -> CheckResult: ...  # the check engine's (issue 13c moves it)
    def retrieval(self) -> Retrieval: ...

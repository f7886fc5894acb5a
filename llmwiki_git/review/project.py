"""What the review services take from the workspace they run in, typed: the write site's
project plus the settings, the environment (passed in, as every service takes it) and the
search index (pending links are marked by
`checks.engine.mark_pending`, from the repository alone)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from ..config import Settings
from ..publication.write import Project
from ..wiki.model import Wiki

if TYPE_CHECKING:
    from ..retrieval.service import Retrieval


class ReviewProject(Project, Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    def retrieval(self) -> Retrieval: ...
    def cached_wiki(self, scope: str) -> Wiki: ...  # `wiki` through the checker's scan cache

"""The wiki at a glance (MCP ``wiki_status``): page counts, the search index, open review
candidates and broken links in the work tree. Reads only: ``.llmwiki/`` is never created."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import StoreError
from ..publication.write import Project

if TYPE_CHECKING:
    from ..checks.result import CheckResult


class StatusProject(Project, Protocol):
    """What the status reads: the project, where its state folder is, and its link check."""

    @property
    def state_path(self) -> Path: ...
    @property
    def vector_store(self) -> str | None: ...
    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult: ...


@dataclass(frozen=True)
class WikiStatus:
    root: str
    wiki_root: str
    pages: int
    concepts: int
    queries: int
    store: dict[
        str, object
    ]  # indexed, storeModel, storeBackend, indexedPages, storeUpdatedAt or storeProblem
    pending_candidates: int
    broken_links: int
    link_warnings: int

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "root": self.root,
            "wikiRoot": self.wiki_root,
            "pages": self.pages,
            "concepts": self.concepts,
            "queries": self.queries,
            **self.store,
            "pendingCandidates": self.pending_candidates,
            "brokenLinks": self.broken_links,
            "linkWarnings": self.link_warnings,
        }


def _store_status(project: StatusProject) -> dict[str, object]:
    from ..retrieval import store as store_mod  # numpy: loaded by the caller that asks

    try:
        store = store_mod.load(project.state_path, vector_store=project.vector_store)
    except StoreError as exc:
        return {
            "indexed": False,
            "storeModel": None,
            "storeBackend": None,
            "indexedPages": 0,
            "storeProblem": exc.message,
        }
    return {
        "indexed": True,
        "storeModel": store.model or None,
        "storeBackend": store.backend or None,
        "indexedPages": len(store.pages),
        "storeUpdatedAt": store.updated_at or None,
    }


def wiki_status(project: StatusProject) -> WikiStatus:
    wiki = project.wiki("worktree")
    pending = 0
    if project.git is not None:
        from ..publication.candidates import list_candidates

        pending = len(list_candidates(project.git))
    result = project.check()
    return WikiStatus(
        str(project.root),
        wiki.root_dir or ".",
        len(wiki.pages),
        sum(1 for p in wiki.pages if p.kind == "concept"),
        sum(1 for p in wiki.pages if p.kind == "query"),
        _store_status(project),
        pending,
        len(result.errors),
        len(result.warnings),
    )

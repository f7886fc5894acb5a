"""The wiki's state: ``review_list`` (open review candidates, `llmwiki review list --json`)
and ``wiki_status`` (page counts, the index, pending candidates, broken links)."""

from __future__ import annotations

from ..pages.status import wiki_status
from ..publication.kinds import KIND_ROWS
from ..workspace import Workspace
from .base import NULLABLE_STR, Arguments, Result, Tool, obj


def review_list(ws: Workspace, args: Arguments) -> Result:
    from ..review.service import list_view

    return {"version": 1, "candidates": [row.to_json() for row in list_view(ws)]}


def status(ws: Workspace, args: Arguments) -> Result:
    return wiki_status(ws).to_json()


REVIEW_LIST = Tool(
    "review_list",
    "Review candidates",
    "Open review candidates (staged as llmwiki/review/<id> branches; kind "
    + ", ".join(f"{r.name} ({r.shows_as})" for r in KIND_ROWS)
    + "), oldest first, with their citation or link status now (`llmwiki review list --json`).",
    obj({}),
    {
        "type": "object",
        "required": ["version", "candidates"],
        "properties": {
            "version": {"const": 1},
            "candidates": {
                "type": "array",
                "items": {"type": "object", "required": ["id", "target", "citationStatus"]},
            },
        },
    },
    review_list,
)

WIKI_STATUS = Tool(
    "wiki_status",
    "Wiki status",
    "A snapshot: repository root, wiki root, page counts, whether the search index exists and its model, "
    "open review candidates, and the number of broken links in the work tree.",
    obj({}),
    {
        "type": "object",
        "required": [
            "version",
            "root",
            "wikiRoot",
            "pages",
            "concepts",
            "queries",
            "indexed",
            "storeModel",
            "pendingCandidates",
            "brokenLinks",
        ],
        "properties": {
            "version": {"const": 1},
            "root": {"type": "string"},
            "wikiRoot": {"type": "string"},
            "pages": {"type": "integer"},
            "concepts": {"type": "integer"},
            "queries": {"type": "integer"},
            "indexed": {"type": "boolean"},
            "storeModel": NULLABLE_STR,
            "pendingCandidates": {"type": "integer"},
            "brokenLinks": {"type": "integer"},
        },
    },
    status,
)

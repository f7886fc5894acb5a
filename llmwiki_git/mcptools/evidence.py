"""Evidence without an answer: ``get_context_pack`` (the v1 envelope of `llmwiki context
--json`) and ``search_pages`` (ranked pages)."""

from __future__ import annotations

import json
from importlib import resources

from ..pages.service import head_blobs
from ..workspace import Workspace
from .base import WARNINGS, Arguments, Result, Tool, flag, integer, obj, text


def context_pack(ws: Workspace, args: Arguments) -> Result:
    from ..retrieval.context import ContextOptions

    options = ContextOptions(
        args["budget"],
        args["depth"],
        args["topPages"],
        args["topChunks"],
        args["includeSources"],
        args["omitRoot"],
    )
    retrieval = ws.retrieval()
    pack = retrieval.context(args["prompt"], options)
    if ws.git is not None:  # the blob each primary page has at HEAD: propose_page's basedOn
        # One `git ls-tree` for the few primary pages, not a scan of the wiki at HEAD (issue 15).
        paths = retrieval.paths_of(item.get("id") for item in pack.get("primary", []))
        heads = head_blobs(ws, sorted(set(paths.values())))
        for item in pack.get("primary", []):
            item["blobId"] = heads.get(paths.get(item.get("id"), ""))
    return pack


def search(ws: Workspace, args: Arguments) -> Result:
    loaded, result = ws.retrieval().search(args["query"], keep=50, max_pages=args["limit"])
    by_id = {p.page_id: p for p in loaded.store.pages}
    pages = []
    for page_id, score in result.pages[: args["limit"]]:
        entry = by_id.get(page_id)
        if entry is not None:
            pages.append(
                {
                    "pageId": page_id,
                    "title": entry.title,
                    "summary": entry.summary,
                    "score": round(float(score), 4),
                    "path": entry.path,
                }
            )
    return {
        "version": 1,
        "query": args["query"],
        "pages": pages,
        "warnings": list(loaded.warnings) + list(result.warnings),
    }


def _pack_schema() -> Result:
    schema: Result = json.loads(
        resources.files("llmwiki_git.retrieval")
        .joinpath("context-pack.schema.json")
        .read_text("utf-8")
    )
    return schema


CONTEXT_PACK = Tool(
    "get_context_pack",
    "Evidence pack",
    "The evidence for a prompt without generating an answer: primary pages with excerpts, wikilink graph "
    "neighbours, gaps, warnings and suggested actions, trimmed to a token budget (the v1 envelope of "
    "`llmwiki context --json`).",
    obj(
        {
            "prompt": text("What the evidence is for (a question or a task)."),
            "budget": integer(
                "Token budget (characters / 4); over it, neighbours, source windows, chunks, then pages are "
                "trimmed.",
                8000,
                100,
                1_000_000,
            ),
            "depth": integer("Wikilink graph expansion depth.", 1, 0, 2),
            "topPages": integer("Primary pages to include.", 5, 0, 20),
            "topChunks": integer("Excerpts to include across the primary pages.", 8, 0, 50),
            "includeSources": flag(
                "Add line windows of cited files under sources/ (paths confined to that folder)."
            ),
            "omitRoot": flag("Leave the absolute project path out (project.root = null)."),
        },
        ("prompt",),
    ),
    _pack_schema(),
    context_pack,
)

SEARCH_PAGES = Tool(
    "search_pages",
    "Search pages",
    "Rank wiki pages for a search text (hybrid embedding + BM25 search): pageId, title, summary, score, path.",
    obj(
        {"query": text("Search text."), "limit": integer("Pages to return.", 5, 1, 50)}, ("query",)
    ),
    {
        "type": "object",
        "required": ["version", "query", "pages", "warnings"],
        "properties": {
            "version": {"const": 1},
            "query": {"type": "string"},
            "warnings": WARNINGS,
            "pages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["pageId", "title", "summary", "score", "path"],
                    "properties": {
                        "pageId": {"type": "string"},
                        "title": {"type": "string"},
                        "summary": {"type": "string"},
                        "score": {"type": "number"},
                        "path": {"type": "string"},
                    },
                },
            },
        },
    },
    search,
)

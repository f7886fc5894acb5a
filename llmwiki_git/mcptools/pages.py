"""Pages: ``read_page`` (confined to the wiki root), ``check_links`` (the `llmwiki links
--json` envelope for a text) and ``propose_page`` (a page edit staged for review, never
published)."""

from __future__ import annotations

from ..controls import name_problem, visible
from ..errors import ArgumentError
from ..pages.service import clean_relative, links_report, read_page
from ..workspace import Workspace
from .base import LINKS_ENVELOPE, NULLABLE_STR, WARNINGS, Arguments, Result, Tool, obj, text

ONE_OF = "give exactly one of pageId or path"


def read(ws: Workspace, args: Arguments) -> Result:
    if ("pageId" in args) == ("path" in args):
        raise ArgumentError(f"invalid arguments for read_page: {ONE_OF}")
    return read_page(ws, page_id=args.get("pageId"), path=args.get("path")).to_json()


def check_links(ws: Workspace, args: Arguments) -> Result:
    return {"version": 1, "citations": [c.to_json() for c in links_report(ws, args["text"])]}


def propose(ws: Workspace, args: Arguments) -> Result:
    """Stage the page as a page/1 candidate branch; the work tree, index and HEAD are untouched
    and nothing is published (a human approves with `llmwiki review approve`)."""
    from ..review.stagepage import PageEdit, stage_pages

    rel = clean_relative(args["path"], "path")
    bad_name = name_problem(rel)  # the one name rule (controls.py), as approval and the gate
    if bad_name is not None:
        raise ArgumentError(f"invalid path for propose_page: {visible(rel)}: {bad_name}")
    (staged,) = stage_pages(
        ws, [PageEdit(rel, args["content"], args["basedOn"], tuple(args.get("sources") or ()))]
    )
    return {
        "version": 1,
        "candidateId": staged.candidate_id,
        "branch": staged.branch,
        "commit": staged.commit,
        "target": staged.target,
        "precondition": staged.precondition,
    }


_PATH = {"type": "string", "minLength": 1, "maxLength": 1024}

READ_PAGE = Tool(
    "read_page",
    "Read a page",
    "Read one page by pageId (concepts/blobs, or a [[link]] target such as blobs) or by path "
    "(wiki/concepts/blobs.md): frontmatter, body, blobId (the git blob id of the text read: propose_page's "
    "basedOn) and headBlobId (the page at HEAD). Only .md files under the wiki root are readable.",
    obj(
        {
            "pageId": {
                **_PATH,
                "description": "Page id from the wiki root without .md (concepts/blobs), or a [[link]] "
                "target (blobs).",
            },
            "path": {
                **_PATH,
                "description": "Repository-relative path of a .md page under the wiki root "
                "(wiki/concepts/blobs.md).",
            },
        },
        oneOf=[{"required": ["pageId"]}, {"required": ["path"]}],
    ),
    {
        "type": "object",
        "required": [
            "version",
            "pageId",
            "path",
            "title",
            "frontmatter",
            "body",
            "warnings",
            "blobId",
            "headBlobId",
        ],
        "properties": {
            "version": {"const": 1},
            "pageId": {"type": "string"},
            "path": {"type": "string"},
            "blobId": {"type": "string"},
            "headBlobId": NULLABLE_STR,
            "title": {"type": "string"},
            "frontmatter": {"type": "object"},
            "body": {"type": "string"},
            "warnings": WARNINGS,
        },
    },
    read,
    one_of=ONE_OF,
)

CHECK_LINKS = Tool(
    "check_links",
    "Check [[links]]",
    "Classify each unique [[wikilink]] of a text as resolved (with its page id), ambiguous (several pages "
    "match: the page id it resolves to and the alternatives; cite by path instead), pending (an open review "
    "candidate would create it) or broken, in order of first appearance (`llmwiki links --json`).",
    obj({"text": text("Markdown whose [[wikilinks]] to classify.")}, ("text",)),
    LINKS_ENVELOPE,
    check_links,
)

PROPOSE_PAGE = Tool(
    "propose_page",
    "Propose a page edit",
    "Stage a new or edited page as a review candidate branch (kind page/1) for a human to approve; nothing "
    "is published and the work tree is untouched. basedOn is the blobId read_page gave (or 'absent' for a "
    "new page): if the page changed since, approval is refused with a three-way view, so re-read and "
    "propose again.",
    obj(
        {
            "path": {
                **_PATH,
                "description": "Repository-relative path of the .md page under the wiki root (read_page's "
                "path).",
            },
            "content": text("The whole new page: frontmatter and body."),
            "basedOn": {
                "type": "string",
                "pattern": "^(absent|[0-9a-f]{40}|[0-9a-f]{64})$",
                "description": "The blobId read_page (or get_context_pack) gave for the version you edited; "
                "'absent' for a new page.",
            },
            "sources": {
                "type": "array",
                "maxItems": 100,
                "uniqueItems": True,
                "items": _PATH,
                "description": "The sources you wrote the page from, as paths from the project folder "
                "(sources/paper.md): recorded as `llmwiki compile` records them (the page's "
                "frontmatter sources:, and each source's blob in the candidate's trailers).",
            },
        },
        ("path", "content", "basedOn"),
    ),
    {
        "type": "object",
        "required": ["version", "candidateId", "branch", "commit", "target", "precondition"],
        "properties": {
            "version": {"const": 1},
            "candidateId": {"type": "string"},
            "branch": {"type": "string"},
            "commit": {"type": "string"},
            "target": {"type": "string"},
            "precondition": {"type": "string"},
        },
    },
    propose,
    read_only=False,
)

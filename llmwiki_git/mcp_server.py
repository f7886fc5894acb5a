"""`llmwiki serve`: the wiki as a Model Context Protocol server over stdio.

Tools (arguments validated with JSON Schema before anything runs):

    get_context_pack   the v1 evidence envelope of `llmwiki context --json`
    query_wiki         a cited answer, exactly the JSON of `llmwiki query --json`
                       (save/review follow the CLI's publication policy)
    search_pages       ranked pages: pageId, title, summary, score, path
    read_page          one page (by id or path), confined to the wiki root
    check_links        the `llmwiki links --json` envelope for a text
    review_list        open review candidates of both kinds (`llmwiki review list --json`)
    propose_page       stage a page edit as a review candidate (never publishes)
    wiki_status        page counts, index state, pending candidates, broken links

Resources: ``llmwiki://index`` (the generated index page) and ``llmwiki://page/{+pageId}``
(every page, listed one by one and as a template).

A tool never crashes the server: bad arguments, any `LlmwikiError` and unexpected
exceptions all come back as tool results with ``isError`` set. Tool calls run one at a
time in a worker thread (the services are synchronous and some write under the project
lock), so the event loop keeps answering pings while a model is generating.

The SDK (``mcp`` 2.x, the optional ``mcp`` extra) is imported only here, only when a
server is built: nothing else in the package depends on it.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .errors import ArgumentError, LlmwikiError, UsageError, WikiError, install_hint
from .git import blob_id

SDK_MISSING = f"llmwiki serve needs the MCP SDK: {install_hint('local,mcp')}"
SERVER_NAME = "llmwiki"
INDEX_URI = "llmwiki://index"
PAGE_PREFIX = "llmwiki://page/"
PAGE_TEMPLATE = "llmwiki://page/{+pageId}"
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for resources/read of an unknown URI
INTERNAL_ERROR = -32603
RESOURCES_PER_PAGE = 1000
MAX_TEXT = 1_000_000  # characters accepted in a prompt, question or text argument

INSTRUCTIONS = """\
This server answers from a markdown wiki kept in git. Pages link each other with \
[[wikilinks]]. Prefer get_context_pack to gather evidence (pages, excerpts, graph \
neighbours) and cite pages as [[page-name]]; check_links tells which links of a draft \
resolve. query_wiki writes a grounded answer itself; with save=true it publishes it as \
one git commit only when every citation resolves (review=true stages a review branch \
instead). read_page and the llmwiki://page/ resources read pages under the wiki root only."""


# -- argument schemas ---------------------------------------------------------------------

def _obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def _text(description: str, max_length: int = MAX_TEXT) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


def _int(description: str, default: int, minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "default": default, "description": description}


def _flag(description: str) -> dict[str, Any]:
    return {"type": "boolean", "default": False, "description": description}


def _provider_names() -> list[str]:
    from .providers.registry import PROVIDERS

    return list(PROVIDERS)


def _input_schemas() -> dict[str, dict[str, Any]]:
    return {
        "get_context_pack": _obj({
            "prompt": _text("What the evidence is for (a question or a task)."),
            "budget": _int("Token budget (characters / 4); over it, neighbours, source windows, chunks, then pages are trimmed.",
                           8000, 100, 1_000_000),
            "depth": _int("Wikilink graph expansion depth.", 1, 0, 2),
            "topPages": _int("Primary pages to include.", 5, 0, 20),
            "topChunks": _int("Excerpts to include across the primary pages.", 8, 0, 50),
            "includeSources": _flag("Add line windows of cited files under sources/ (paths confined to that folder)."),
            "omitRoot": _flag("Leave the absolute project path out (project.root = null)."),
        }, ("prompt",)),
        "query_wiki": _obj({
            "question": _text("The question to answer from the wiki."),
            "save": _flag("Publish the answer as wiki/queries/<slug>.md in one git commit; refused (nothing written) "
                          "when a citation is ambiguous, pending or broken."),
            "review": _flag("With save=true: stage the answer as a review candidate branch instead of publishing."),
            "lang": {"type": "string", "minLength": 1, "maxLength": 64,
                     "description": "Answer language (e.g. ja, zh-CN, German); wins over LLMWIKI_OUTPUT_LANG."},
            "provider": {"type": "string", "enum": _provider_names(),
                         "description": "Chat provider (default: LLMWIKI_PROVIDER, config, first with credentials, else extractive)."},
            "debug": _flag("Add the retrieval snapshot (pages, chunks, scores) to the result."),
        }, ("question",)),
        "search_pages": _obj({
            "query": _text("Search text."),
            "limit": _int("Pages to return.", 5, 1, 50),
        }, ("query",)),
        "read_page": _obj({
            "pageId": {"type": "string", "minLength": 1, "maxLength": 1024,
                       "description": "Page id from the wiki root without .md (concepts/blobs), or a [[link]] target (blobs)."},
            "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                     "description": "Repository-relative path of a .md page under the wiki root (wiki/concepts/blobs.md)."},
        }, oneOf=[{"required": ["pageId"]}, {"required": ["path"]}]),
        "check_links": _obj({"text": _text("Markdown whose [[wikilinks]] to classify.")}, ("text",)),
        "review_list": _obj({}),
        "wiki_status": _obj({}),
        "propose_page": _obj({
            "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                     "description": "Repository-relative path of the .md page under the wiki root (read_page's path)."},
            "content": _text("The whole new page: frontmatter and body."),
            "basedOn": {"type": "string", "pattern": "^(absent|[0-9a-f]{40}|[0-9a-f]{64})$",
                        "description": "The blobId read_page (or get_context_pack) gave for the version you edited; "
                                       "'absent' for a new page."},
            "sources": {"type": "array", "maxItems": 100, "uniqueItems": True,
                        "items": {"type": "string", "minLength": 1, "maxLength": 1024},
                        "description": "The sources you wrote the page from, as paths from the project folder "
                                       "(sources/paper.md): recorded as `llmwiki compile` records them (the page's "
                                       "frontmatter sources:, and each source's blob in the candidate's trailers)."},
        }, ("path", "content", "basedOn")),
    }


_ONE_OF_MESSAGES = {"read_page": "give exactly one of pageId or path"}


# -- output schemas (clients validate structuredContent against these) --------------------

_WARNINGS = {"type": "array", "items": {"type": "object", "required": ["code", "message"],
                                        "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}
_CITATIONS = {"type": "array", "items": {
    "type": "object", "required": ["target", "status"],
    "properties": {"target": {"type": "string"}, "status": {"enum": ["resolved", "ambiguous", "pending", "broken"]},
                   "pageId": {"type": "string"}, "alternatives": {"type": "array", "items": {"type": "string"}},
                   "candidateIds": {"type": "array", "items": {"type": "string"}}}}}
_LINKS_ENVELOPE = {"type": "object", "required": ["version", "citations"],
                   "properties": {"version": {"const": 1}, "citations": _CITATIONS}}
_NULLABLE_STR = {"type": ["string", "null"]}


def _output_schemas() -> dict[str, dict[str, Any]]:
    from importlib import resources

    pack = json.loads(resources.files("llmwiki_git.retrieval").joinpath("context-pack.schema.json").read_text("utf-8"))
    return {
        "get_context_pack": pack,
        "query_wiki": {
            "type": "object",
            "required": ["version", "question", "answer", "provider", "pageIds", "source", "warnings",
                         "answerCitations", "saved", "candidateId", "publicationRefusal"],
            "properties": {
                "version": {"const": 1}, "question": {"type": "string"}, "answer": {"type": "string"},
                "provider": {"type": "object", "required": ["name", "model"]},
                "pageIds": {"type": "array", "items": {"type": "string"}},
                "source": {"type": "string"}, "warnings": _WARNINGS,
                "answerCitations": {"oneOf": [_LINKS_ENVELOPE, {"type": "null"}]},
                "saved": _NULLABLE_STR, "candidateId": _NULLABLE_STR,
                "publicationRefusal": {"type": ["object", "null"]},
            },
        },
        "search_pages": {
            "type": "object", "required": ["version", "query", "pages", "warnings"],
            "properties": {
                "version": {"const": 1}, "query": {"type": "string"}, "warnings": _WARNINGS,
                "pages": {"type": "array", "items": {
                    "type": "object", "required": ["pageId", "title", "summary", "score", "path"],
                    "properties": {"pageId": {"type": "string"}, "title": {"type": "string"},
                                   "summary": {"type": "string"}, "score": {"type": "number"},
                                   "path": {"type": "string"}}}},
            },
        },
        "read_page": {
            "type": "object", "required": ["version", "pageId", "path", "title", "frontmatter", "body", "warnings",
                                           "blobId", "headBlobId"],
            "properties": {"version": {"const": 1}, "pageId": {"type": "string"}, "path": {"type": "string"},
                           "blobId": {"type": "string"}, "headBlobId": _NULLABLE_STR,
                           "title": {"type": "string"}, "frontmatter": {"type": "object"},
                           "body": {"type": "string"}, "warnings": _WARNINGS},
        },
        "check_links": _LINKS_ENVELOPE,
        "review_list": {
            "type": "object", "required": ["version", "candidates"],
            "properties": {"version": {"const": 1}, "candidates": {"type": "array", "items": {
                "type": "object", "required": ["id", "target", "citationStatus"]}}},
        },
        "propose_page": {
            "type": "object", "required": ["version", "candidateId", "branch", "commit", "target", "precondition"],
            "properties": {"version": {"const": 1}, "candidateId": {"type": "string"}, "branch": {"type": "string"},
                           "commit": {"type": "string"}, "target": {"type": "string"},
                           "precondition": {"type": "string"}},
        },
        "wiki_status": {
            "type": "object",
            "required": ["version", "root", "wikiRoot", "pages", "concepts", "queries", "indexed", "storeModel",
                         "pendingCandidates", "brokenLinks"],
            "properties": {
                "version": {"const": 1}, "root": {"type": "string"}, "wikiRoot": {"type": "string"},
                "pages": {"type": "integer"}, "concepts": {"type": "integer"}, "queries": {"type": "integer"},
                "indexed": {"type": "boolean"}, "storeModel": _NULLABLE_STR,
                "pendingCandidates": {"type": "integer"}, "brokenLinks": {"type": "integer"},
            },
        },
    }


# -- argument validation ------------------------------------------------------------------

def _describe(tool: str, error: Any, schema: Mapping[str, Any]) -> str:
    """One clear sentence for the most relevant jsonschema error."""
    known = ", ".join(sorted(schema.get("properties", {}))) or "none"
    where = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        return f"missing required argument {', '.join(map(repr, missing))}"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(schema.get("properties", {})))
        return f"unknown argument {', '.join(map(repr, extra))} (valid arguments: {known})"
    if error.validator == "oneOf" and not where:
        return _ONE_OF_MESSAGES.get(tool, error.message)
    if error.validator == "type" and not where:
        return "arguments must be a JSON object"
    return f"argument {where!r}: {error.message}" if where else error.message


@dataclass
class _Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Any, dict[str, Any]], dict[str, Any]]
    read_only: bool = True
    validator: Any = None

    def arguments(self, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated arguments with the schema's defaults filled in (ArgumentError otherwise)."""
        args = dict(raw or {})
        errors = list(self.validator.iter_errors(args))
        if errors:
            from jsonschema.exceptions import best_match

            error = best_match(errors)
            raise ArgumentError(f"invalid arguments for {self.name}: {_describe(self.name, error, self.input_schema)}")
        for name, prop in self.input_schema.get("properties", {}).items():
            if name not in args and "default" in prop:
                args[name] = prop["default"]
        for name, prop in self.input_schema.get("properties", {}).items():
            if prop.get("type") == "integer" and name in args:
                args[name] = int(args[name])  # 5.0 is a JSON Schema integer; the services want int
        return args


# -- the tools ----------------------------------------------------------------------------

def _context_pack(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .retrieval.context import ContextOptions

    options = ContextOptions(args["budget"], args["depth"], args["topPages"], args["topChunks"],
                             args["includeSources"], args["omitRoot"])
    retrieval = ws.retrieval()
    pack = retrieval.context(args["prompt"], options)
    if ws.git is not None:  # the blob each primary page has at HEAD: propose_page's basedOn
        # One `git ls-tree` for the few primary pages, not a scan of the wiki at HEAD (issue 15).
        paths = retrieval.paths_of(item.get("id") for item in pack.get("primary", []))
        heads = _head_blobs(ws.git, sorted(set(paths.values())))
        for item in pack.get("primary", []):
            item["blobId"] = heads.get(paths.get(item.get("id"), ""))
    return pack


def _head_blobs(git: Any, paths: list[str]) -> dict[str, str]:
    """Path -> blob id at HEAD of each of ``paths`` that HEAD has (none on an unborn branch)."""
    if not paths:
        return {}
    out = git.run("--literal-pathspecs", "ls-tree", "-z", "--full-tree", "--end-of-options", "HEAD", "--", *paths,
                  check=False)
    blobs: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        fields = meta.decode("ascii", "replace").split(" ")
        if len(fields) == 3 and fields[1] == "blob":
            blobs[path.decode("utf-8", "surrogateescape")] = fields[2]
    return blobs


def _query(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .answer.service import run_query

    if args["review"] and not args["save"]:
        raise UsageError("review=true requires save=true", hint="pass save=true and review=true to stage a review candidate")
    stage = None
    if args["review"]:
        from .review.stage import stage_candidate

        def stage(question: str, answer: str, pending: Any) -> Any:
            return stage_candidate(ws, question, answer, pending)
    # A refusal (exit code 1 in the CLI) is not a tool error: the answer is kept and
    # publicationRefusal says why nothing was written, exactly as `query --json` prints it.
    return run_query(ws, args["question"], save=args["save"], lang=args.get("lang"), debug=args["debug"],
                     provider=args.get("provider"), stage=stage).to_json()


def _search(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    loaded, result = ws.retrieval().search(args["query"], keep=50, max_pages=args["limit"])
    by_id = {p.page_id: p for p in loaded.store.pages}
    pages = []
    for page_id, score in result.pages[: args["limit"]]:
        entry = by_id.get(page_id)
        if entry is not None:
            pages.append({"pageId": page_id, "title": entry.title, "summary": entry.summary,
                          "score": round(float(score), 4), "path": entry.path})
    return {"version": 1, "query": args["query"], "pages": pages,
            "warnings": list(loaded.warnings) + list(result.warnings)}


_DRIVE = re.compile(r"^[A-Za-z]:")


def _clean_relative(value: str, what: str) -> str:
    """A relative POSIX path with no way out: absolute paths, drive letters, backslashes,
    ``..`` segments and NUL bytes are refused; ``.`` and empty segments are dropped."""
    if "\0" in value:
        raise WikiError(f"{what} {value!r} contains a NUL byte; refused")
    if value.startswith(("/", "~")) or _DRIVE.match(value):
        raise WikiError(f"{what} {value!r} is an absolute path; refused",
                        hint="give a path relative to the repository, under the wiki root")
    if "\\" in value:
        raise WikiError(f"{what} {value!r} contains a backslash; use forward slashes")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WikiError(f"{what} {value!r} has a '..' segment; refused", hint="reads are confined to the wiki root")
    if not parts:
        raise WikiError(f"{what} {value!r} names no page")
    return "/".join(parts)


def _wiki_prefix(wiki: Any) -> str:
    return f"{wiki.root_dir}/" if wiki.root_dir else ""


def _find_page(wiki: Any, *, page_id: str | None = None, path: str | None = None) -> Any:
    prefix = _wiki_prefix(wiki)
    where = wiki.root_dir or "the repository root"
    if path is not None:
        rel = _clean_relative(path, "path")
        if not rel.lower().endswith(".md"):
            raise WikiError(f"path {path!r} is not a markdown page; only .md files under {where} can be read")
        page = wiki.by_path.get(rel)
        if page is None and prefix and not rel.startswith(prefix):
            page = wiki.by_path.get(prefix + rel)  # also accept a path from the wiki root
            if page is None:
                raise WikiError(f"path {path!r} is outside the wiki root ({where}); refused")
        if page is None:
            raise WikiError(f"no page at {rel}", hint="use search_pages or wiki_status to find pages")
        return page
    assert page_id is not None
    key = _clean_relative(page_id, "pageId")
    if key.lower().endswith(".md"):
        key = key[:-3]
    page = wiki.by_id.get(key)
    if page is None:
        from .wiki.slug import parse_target

        found = wiki.resolve(parse_target(key))  # a [[link]] target: "blobs", "Blobs", an alias
        page = found.page
    if page is None:
        raise WikiError(f"page not found: {page_id}", hint="use search_pages to find page ids")
    return page


def _read_confined(ws: Any, wiki: Any, rel_path: str) -> str:
    """The text of ``rel_path`` (repository-relative), only if its real location is a .md
    file under the real wiki root (confine.py: symlinks leading out of the wiki, hidden
    folders, FIFOs and oversize files are refused)."""
    from . import confine
    from .errors import PathRefused

    root = Path(ws.root).resolve()
    wiki_root = root / wiki.root_dir if wiki.root_dir else root
    inner = rel_path[len(wiki.root_dir) + 1:] if wiki.root_dir else rel_path
    try:
        real = confine.confined(wiki_root, inner)
        if not real.lower().endswith(".md"):
            raise WikiError(f"{rel_path} resolves to a file that is not a .md page; refused")
        data = confine.read_file(real, max_bytes=ws.settings.max_page_mb * 1024 * 1024, name=rel_path)
    except PathRefused as exc:
        raise WikiError(f"{rel_path}: {exc.reason}; refused") from exc
    from .wiki.pages import decode

    text, _issues = decode(data)
    if text is None:
        raise WikiError(f"{rel_path} is a binary file; refused")
    return text


def _jsonable(value: Any) -> Any:
    """Frontmatter values as JSON (YAML dates and timestamps become ISO strings)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _read_page(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .wiki import frontmatter
    from .wiki.titles import page_title

    if ("pageId" in args) == ("path" in args):
        raise ArgumentError(f"invalid arguments for read_page: {_ONE_OF_MESSAGES['read_page']}")
    wiki = ws.wiki("worktree")
    page = _find_page(wiki, page_id=args.get("pageId"), path=args.get("path"))
    text = _read_confined(ws, wiki, page.path)
    meta = frontmatter.parse(text)
    warnings = []
    if meta.error:
        warnings.append({"code": "malformed-frontmatter", "message": f"{page.path}:{meta.error_line}: {meta.error}"})
    head_blob = None
    if ws.git is not None:
        found = ws.git.run("rev-parse", "--verify", "--quiet", f"HEAD:{page.path}", check=False).decode().strip()
        head_blob = found or None
    return {"version": 1, "pageId": page.id, "path": page.path,
            "blobId": blob_id(text.encode("utf-8")), "headBlobId": head_blob,
            "title": page_title(meta.data, text[meta.body_offset:], page.stem),
            "frontmatter": _jsonable(meta.data), "body": text[meta.body_offset:], "warnings": warnings}


def _check_links(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .publication.candidates import pending_index
    from .wiki.citations import citation_report

    report = citation_report(args["text"], ws.wiki("worktree"), pending_index(ws.git) if ws.git else None)
    return {"version": 1, "citations": [c.to_json() for c in report]}


def _propose_page(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Stage the page as a page/1 candidate branch; the work tree, index and HEAD are untouched
    and nothing is published (a human approves with `llmwiki review approve`)."""
    from .review.stagepage import PageEdit, stage_pages

    rel = _clean_relative(args["path"], "path")
    (staged,) = stage_pages(ws, [PageEdit(rel, args["content"], args["basedOn"], tuple(args.get("sources") or ()))])
    return {"version": 1, "candidateId": staged.candidate_id, "branch": staged.branch, "commit": staged.commit,
            "target": staged.target, "precondition": staged.precondition}


def _review_list(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .review.service import list_view

    return {"version": 1, "candidates": [row.to_json() for row in list_view(ws)]}


def _status(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
    from .retrieval import store as store_mod

    wiki = ws.wiki("worktree")
    state = Path(ws.project or ws.root) / ".llmwiki"  # read only: never create .llmwiki/ here
    out: dict[str, Any] = {
        "version": 1, "root": str(ws.root), "wikiRoot": wiki.root_dir or ".",
        "pages": len(wiki.pages),
        "concepts": sum(1 for p in wiki.pages if p.kind == "concept"),
        "queries": sum(1 for p in wiki.pages if p.kind == "query"),
    }
    try:
        store = store_mod.load(state)
    except store_mod.StoreError as exc:
        out.update(indexed=False, storeModel=None, storeBackend=None, indexedPages=0, storeProblem=exc.message)
    else:
        out.update(indexed=True, storeModel=store.model or None, storeBackend=store.backend or None,
                   indexedPages=len(store.pages), storeUpdatedAt=store.updated_at or None)
    if ws.git is not None:
        from .publication.candidates import list_candidates

        out["pendingCandidates"] = len(list_candidates(ws.git))
    else:
        out["pendingCandidates"] = 0
    result = ws.check()
    out["brokenLinks"] = len(result.errors)
    out["linkWarnings"] = len(result.warnings)
    return out


def _tools() -> list[_Tool]:
    inputs, outputs = _input_schemas(), _output_schemas()

    def tool(name: str, title: str, description: str, run: Callable[[Any, dict[str, Any]], dict[str, Any]],
             read_only: bool = True) -> _Tool:
        return _Tool(name, title, description, inputs[name], outputs[name], run, read_only)

    return [
        tool("get_context_pack", "Evidence pack",
             "The evidence for a prompt without generating an answer: primary pages with excerpts, wikilink graph "
             "neighbours, gaps, warnings and suggested actions, trimmed to a token budget (the v1 envelope of "
             "`llmwiki context --json`).", _context_pack),
        tool("query_wiki", "Answer from the wiki",
             "Answer a question only from wiki pages, citing them with [[wikilinks]], then report which links "
             "resolve, are pending review, or are broken (the JSON of `llmwiki query --json`). save=true publishes "
             "the answer as one git commit when every citation resolves; save=true with review=true stages a review "
             "branch instead. A refused publication is reported in publicationRefusal and writes nothing.",
             _query, read_only=False),
        tool("search_pages", "Search pages",
             "Rank wiki pages for a search text (hybrid embedding + BM25 search): pageId, title, summary, score, path.",
             _search),
        tool("read_page", "Read a page",
             "Read one page by pageId (concepts/blobs, or a [[link]] target such as blobs) or by path "
             "(wiki/concepts/blobs.md): frontmatter, body, blobId (the git blob id of the text read: propose_page's "
             "basedOn) and headBlobId (the page at HEAD). Only .md files under the wiki root are readable.",
             _read_page),
        tool("check_links", "Check [[links]]",
             "Classify each unique [[wikilink]] of a text as resolved (with its page id), ambiguous (several pages "
             "match: the page id it resolves to and the alternatives; cite by path instead), pending (an open review "
             "candidate would create it) or broken, in order of first appearance (`llmwiki links --json`).",
             _check_links),
        tool("review_list", "Review candidates",
             "Open review candidates (answers and page edits staged as llmwiki/review/<id> branches; kind "
             "validated-answer/1 or page/1), oldest first, with their link status now (`llmwiki review list --json`).",
             _review_list),
        tool("propose_page", "Propose a page edit",
             "Stage a new or edited page as a review candidate branch (kind page/1) for a human to approve; nothing "
             "is published and the work tree is untouched. basedOn is the blobId read_page gave (or 'absent' for a "
             "new page): if the page changed since, approval is refused with a three-way view, so re-read and "
             "propose again.", _propose_page, read_only=False),
        tool("wiki_status", "Wiki status",
             "A snapshot: repository root, wiki root, page counts, whether the search index exists and its model, "
             "open review candidates, and the number of broken links in the work tree.", _status),
    ]


# -- the server ---------------------------------------------------------------------------

def _sdk() -> Any:
    """Import the MCP SDK (2.x) and jsonschema, or explain how to install them."""
    try:
        import jsonschema  # noqa: F401  (a dependency of mcp)
        import mcp
        from mcp.server.lowlevel import Server  # noqa: F401
    except ImportError as exc:
        raise LlmwikiError(SDK_MISSING) from exc
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        found = "0"
    if not found.split(".", 1)[0].isdigit() or int(found.split(".", 1)[0]) != 2:
        raise LlmwikiError(f"llmwiki serve needs version 2 of the MCP SDK, found mcp {found}",
                           hint=install_hint("local,mcp"))
    return mcp


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llmwiki-git")
    except PackageNotFoundError:
        return "0"


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, LlmwikiError):
        return str(exc)
    return f"internal error: {exc.__class__.__name__}: {exc}"


def build_server(root: Path, *, wiki_dir: str | None = None) -> Any:
    """An MCP server (the SDK's low-level ``mcp.server.lowlevel.Server``) for the wiki
    whose repository contains ``root``. Raises `LlmwikiError` when the SDK is missing or
    ``root`` is not a wiki."""
    _sdk()
    import anyio
    import anyio.to_thread
    from jsonschema import Draft202012Validator
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from .workspace import Workspace

    ws = Workspace.open(Path(root), wiki_dir=wiki_dir)
    ws.reuse_listing = True  # long-running: a call with no file changed skips the git listing
    tools = {t.name: t for t in _tools()}
    for t in tools.values():
        Draft202012Validator.check_schema(t.input_schema)
        t.validator = Draft202012Validator(t.input_schema)
    serial = anyio.Lock()  # one call at a time: the services are synchronous and share the project

    async def in_thread(fn: Callable[[], Any]) -> Any:
        async with serial:
            return await anyio.to_thread.run_sync(fn)

    listing = [
        types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema,
                   output_schema=t.output_schema,
                   annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only,
                                                     destructive_hint=False, idempotent_hint=t.read_only,
                                                     open_world_hint=t.name == "query_wiki"))
        for t in tools.values()
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listing)

    def failure(message: str) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = tools.get(params.name)
        if tool is None:
            return failure(f"unknown tool {params.name!r}; tools: {', '.join(tools)}")
        try:
            args = tool.arguments(params.arguments)
            result = await in_thread(lambda: tool.run(ws, args))
            text = json.dumps(result, indent=2, ensure_ascii=False)
        except Exception as exc:  # noqa: BLE001 - a tool error, never a dead server
            return failure(_error_text(exc))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result)

    # -- resources --

    def page_uri(page_id: str) -> str:
        return PAGE_PREFIX + quote(page_id, safe="/")

    def index_path(wiki: Any) -> str:
        from .wiki.generated import index_path as path_of_index

        return path_of_index(wiki.root_dir)

    def resources_listing(offset: int) -> tuple[list[Any], int | None]:
        from .wiki.titles import stem_title

        wiki = ws.wiki("worktree")
        items: list[Any] = []
        index = wiki.by_path.get(index_path(wiki))
        if index is not None:
            items.append(types.Resource(uri=INDEX_URI, name="index", title="Wiki index",
                                        description=f"The generated table of contents ({index.path}).",
                                        mime_type="text/markdown"))
        for page in wiki.pages:
            if page is index:
                continue
            items.append(types.Resource(uri=page_uri(page.id), name=page.id,
                                        title=page.scan.title or stem_title(page.stem),
                                        description=f"{page.kind} page {page.path}", mime_type="text/markdown"))
        end = offset + RESOURCES_PER_PAGE
        return items[offset:end], end if end < len(items) else None

    async def list_resources(ctx: Any, params: Any) -> Any:
        cursor = getattr(params, "cursor", None) if params is not None else None
        if cursor is not None and not (cursor.isdigit() and len(cursor) < 10):
            raise MCPError(code=-32602, message=f"invalid cursor {cursor!r}")
        try:
            items, following = await in_thread(lambda: resources_listing(int(cursor or 0)))
        except Exception as exc:  # noqa: BLE001
            raise MCPError(code=INTERNAL_ERROR, message=_error_text(exc)) from exc
        return types.ListResourcesResult(resources=items, next_cursor=None if following is None else str(following))

    template = types.ResourceTemplate(
        uri_template=PAGE_TEMPLATE, name="page", title="Wiki page",
        description="The full text (frontmatter and body) of a page; pageId is its path from the wiki root "
                    "without .md (concepts/blobs), or a [[link]] target.",
        mime_type="text/markdown")

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[template])

    def read(uri: str) -> str:
        wiki = ws.wiki("worktree")
        if uri == INDEX_URI:
            path = index_path(wiki)
            if path not in wiki.by_path:
                raise WikiError(f"no index page ({path}); run `llmwiki index` to generate it")
            return _read_confined(ws, wiki, path)
        if uri.startswith(PAGE_PREFIX) and len(uri) > len(PAGE_PREFIX):
            page = _find_page(wiki, page_id=unquote(uri[len(PAGE_PREFIX):]))
            return _read_confined(ws, wiki, page.path)
        raise WikiError(f"unknown resource {uri!r}; use {INDEX_URI} or {PAGE_TEMPLATE}")

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            text = await in_thread(lambda: read(uri))
        except LlmwikiError as exc:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc), data={"uri": uri}) from exc
        except Exception as exc:  # noqa: BLE001
            raise MCPError(code=INTERNAL_ERROR, message=_error_text(exc), data={"uri": uri}) from exc
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")])

    return Server(
        SERVER_NAME,
        version=_own_version(),
        title="llmwiki",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _frame_id(exc: Exception) -> int | str | None:
    """The id of the frame the SDK could not read, when it had one (JSON-RPC: null when it
    cannot be determined). The validation error carries the parsed frame as its input."""
    errors = getattr(exc, "errors", None)
    try:
        for error in errors() if callable(errors) else ():
            frame = error.get("input")
            if isinstance(frame, dict):
                value = frame.get("id")
                return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    except Exception:  # noqa: BLE001 - any shape: answer with a null id
        pass
    return None


class _AnswerInvalidFrames:
    """The stdio read stream, answering each frame the SDK could not read as a JSON-RPC
    request -- no ``method``, ``params`` that are not an object, ``jsonrpc`` other than
    "2.0", not JSON at all -- with an Invalid Request (-32600) or Parse error (-32700)
    response, instead of the silence a client would wait on forever. Valid frames pass on."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp import types
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            errors = getattr(item, "errors", None)
            kinds = {e.get("type") for e in errors()} if callable(errors) else set()
            code, what = (-32700, "Parse error") if "json_invalid" in kinds else (-32600, "Invalid Request")
            error = types.ErrorData(code=code, message=f"{what}: not a JSON-RPC 2.0 request, notification or response "
                                                       "(a method, params that are an object, \"jsonrpc\": \"2.0\")")
            await self._write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=_frame_id(item), error=error)))

    def __aiter__(self) -> _AnswerInvalidFrames:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnswerInvalidFrames:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def main(root: Path | str | None = None, *, wiki_dir: str | None = None) -> None:
    """Serve the wiki containing ``root`` (default: the current folder) over stdio until
    the client closes standard input."""
    server = build_server(Path(root) if root is not None else Path.cwd(), wiki_dir=wiki_dir)
    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(_AnswerInvalidFrames(read_stream, write_stream), write_stream,
                             server.create_initialization_options())

    anyio.run(serve)  # Ctrl-C reaches the CLI, which exits 130 as for every command

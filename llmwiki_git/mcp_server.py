"""`llmwiki serve`: the wiki as a Model Context Protocol server over stdio.

The tools are declared in ``mcptools/`` (each with its schemas and handler, one place per
tool); here they are listed and called through the SDK, with arguments validated against
their JSON Schema before anything runs. Resources: ``llmwiki://index`` (the generated index
page) and ``llmwiki://page/{+pageId}`` (every page, listed one by one and as a template),
read through the pages service (``pages/service.py``: confined to the wiki root).

A tool never crashes the server: bad arguments, any `LlmwikiError` and unexpected
exceptions all come back as tool results with ``isError`` set. Tool calls run one at a
time in a worker thread (the services are synchronous and some write under the project
lock), so the event loop keeps answering pings while a model is generating. The server's
one workspace is long-lived: its retrieval service keeps what it loaded warm between calls.

The SDK (``mcp`` 2.x, the optional ``mcp`` extra) is imported only here, only when a
server is built: nothing else in the package depends on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

from .errors import LlmwikiError, WikiError, install_hint

if TYPE_CHECKING:
    from .mcptools.base import Tool
    from .workspace import Workspace

SDK_MISSING = f"llmwiki serve needs the MCP SDK: {install_hint('local,mcp')}"
SERVER_NAME = "llmwiki"
INDEX_URI = "llmwiki://index"
PAGE_PREFIX = "llmwiki://page/"
PAGE_TEMPLATE = "llmwiki://page/{+pageId}"
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for resources/read of an unknown URI
INTERNAL_ERROR = -32603
RESOURCES_PER_PAGE = 1000

INSTRUCTIONS = """\
This server answers from a markdown wiki kept in git. Pages link each other with \
[[wikilinks]]. Prefer get_context_pack to gather evidence (pages, excerpts, graph \
neighbours) and cite pages as [[page-name]]; check_links tells which links of a draft \
resolve. query_wiki writes a grounded answer itself; with save=true it publishes it as \
one git commit only when every citation resolves (review=true stages a review branch \
instead). read_page and the llmwiki://page/ resources read pages under the wiki root only."""

T = TypeVar("T")


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
        raise LlmwikiError(
            f"llmwiki serve needs version 2 of the MCP SDK, found mcp {found}",
            hint=install_hint("local,mcp"),
        )
    return mcp


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llmwiki-git")
    except PackageNotFoundError:
        return "0"


def _error_text(exc: BaseException, roots: tuple[str, ...] = ()) -> str:
    """What a client is told of a failure: an llmwiki error as it is; an OS error (a name too
    long for the file system, a full disk, a permission) as a clean refusal naming the file
    from the repository root; anything else as an internal error. No message shows a local
    absolute path: the repository folder (``roots``: as given and resolved) is left out."""
    if isinstance(exc, LlmwikiError):
        text = str(exc)
    elif isinstance(exc, OSError):
        name = exc.filename if isinstance(exc.filename, str) else None
        inside = next((r for r in roots if name and name.startswith(r + "/")), None)
        where = f" for {name[len(inside) + 1 :]}" if name and inside else ""
        text = (
            f"refused: the file system said {exc.strerror or exc.__class__.__name__!r}{where}; "
            "nothing was published (for a name too long, choose a shorter one)"
        )
    else:
        text = f"internal error: {exc.__class__.__name__}: {exc}"
    for root in sorted(roots, key=len, reverse=True):  # the longest first: a nested one
        text = text.replace(root + "/", "").replace(root, ".")
    return text


def build_server(root: Path, *, wiki_dir: str | None = None) -> Any:
    """An MCP server (the SDK's low-level ``mcp.server.lowlevel.Server``) for the wiki
    whose repository contains ``root``. Raises `LlmwikiError` when the SDK is missing or
    ``root`` is not a wiki."""
    _sdk()
    from mcp.server.lowlevel import Server

    from .workspace import Workspace

    # Long-lived: a call with no file changed skips the git listing, and the one retrieval
    # service keeps what it loaded warm for the next call (retrieval/service.py).
    ws = Workspace.open(Path(root), wiki_dir=wiki_dir, long_lived=True)
    roots = tuple(
        {str(p) for p in (Path(root), Path(root).resolve(), ws.root, ws.root.resolve())} - {"/"}
    )
    serial = _Serial()
    tools = _Tools(ws, serial, roots)
    resources = _Resources(ws, serial, roots)
    return Server(
        SERVER_NAME,
        version=_own_version(),
        title="llmwiki",
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=resources.list_resources,
        on_list_resource_templates=resources.list_templates,
        on_read_resource=resources.read_resource,
    )


class _Serial:
    """Runs the services' calls one at a time in a worker thread: they are synchronous and
    share the project, and the event loop keeps answering pings meanwhile."""

    def __init__(self) -> None:
        import anyio

        self._lock = anyio.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        import anyio.to_thread

        async with self._lock:
            return await anyio.to_thread.run_sync(fn)


def _tool_entry(tool: Tool) -> Any:
    """How ``tools/list`` shows ``tool``."""
    from mcp import types

    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=False,
            idempotent_hint=tool.read_only,
            open_world_hint=tool.open_world,
        ),
    )


def _failure(message: str) -> Any:
    """A tool result that reports an error (a tool never crashes the server)."""
    from mcp import types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


class _Tools:
    """The tools of ``mcptools/``: listed, and called with arguments checked against their
    JSON Schema before anything runs."""

    def __init__(self, ws: Workspace, serial: _Serial, roots: tuple[str, ...]) -> None:
        from jsonschema import Draft202012Validator

        from .mcptools import TOOLS

        self.ws, self.serial, self.roots = ws, serial, roots
        self.tools = {t.name: t for t in TOOLS}
        self.validators = {}
        for t in TOOLS:
            Draft202012Validator.check_schema(t.input_schema)
            self.validators[t.name] = Draft202012Validator(t.input_schema)
        self.listing = [_tool_entry(t) for t in self.tools.values()]

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(tools=self.listing)

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        tool = self.tools.get(params.name)
        if tool is None:
            return _failure(f"unknown tool {params.name!r}; tools: {', '.join(self.tools)}")
        try:
            args = tool.arguments(params.arguments, self.validators[tool.name])
            result = await self.serial.run(lambda: tool.handler(self.ws, args))
            text = json.dumps(result, indent=2, ensure_ascii=False)
        except Exception as exc:  # noqa: BLE001 - a tool error, never a dead server
            return _failure(_error_text(exc, self.roots))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=result
        )


def _page_uri(page_id: str) -> str:
    return PAGE_PREFIX + quote(page_id, safe="/")


class _Resources:
    """The index page and every page as resources, read through the pages service
    (confined to the wiki root)."""

    def __init__(self, ws: Workspace, serial: _Serial, roots: tuple[str, ...]) -> None:
        self.ws, self.serial, self.roots = ws, serial, roots

    def listing(self, offset: int) -> tuple[list[Any], int | None]:
        """One page of ``resources/list`` from ``offset``, and where the next starts."""
        from mcp import types

        from .wiki.generated import index_path
        from .wiki.titles import stem_title

        wiki = self.ws.cached_wiki("worktree")
        items: list[Any] = []
        index = wiki.by_path.get(index_path(wiki.root_dir))
        if index is not None:
            items.append(
                types.Resource(
                    uri=INDEX_URI,
                    name="index",
                    title="Wiki index",
                    description=f"The generated table of contents ({index.path}).",
                    mime_type="text/markdown",
                )
            )
        for page in wiki.pages:
            if page is index:
                continue
            items.append(
                types.Resource(
                    uri=_page_uri(page.id),
                    name=page.id,
                    title=page.scan.title or stem_title(page.stem),
                    description=f"{page.kind} page {page.path}",
                    mime_type="text/markdown",
                )
            )
        end = offset + RESOURCES_PER_PAGE
        return items[offset:end], end if end < len(items) else None

    async def list_resources(self, ctx: Any, params: Any) -> Any:
        from mcp import types
        from mcp.shared.exceptions import MCPError

        cursor = getattr(params, "cursor", None) if params is not None else None
        if cursor is not None and not (cursor.isdigit() and len(cursor) < 10):
            raise MCPError(code=-32602, message=f"invalid cursor {cursor!r}")
        try:
            items, following = await self.serial.run(lambda: self.listing(int(cursor or 0)))
        except Exception as exc:  # noqa: BLE001
            raise MCPError(code=INTERNAL_ERROR, message=_error_text(exc, self.roots)) from exc
        return types.ListResourcesResult(
            resources=items, next_cursor=None if following is None else str(following)
        )

    async def list_templates(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        template = types.ResourceTemplate(
            uri_template=PAGE_TEMPLATE,
            name="page",
            title="Wiki page",
            description="The full text (frontmatter and body) of a page; pageId is its path "
            "from the wiki root without .md (concepts/blobs), or a [[link]] target.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    def text(self, uri: str) -> str:
        """The text of the resource at ``uri``; `WikiError` when there is none."""
        from .pages.service import find_page, read_confined
        from .wiki.generated import index_path

        wiki = self.ws.cached_wiki("worktree")
        if uri == INDEX_URI:
            path = index_path(wiki.root_dir)
            if path not in wiki.by_path:
                raise WikiError(f"no index page ({path}); run `llmwiki index` to generate it")
            return read_confined(self.ws, wiki, path)
        if uri.startswith(PAGE_PREFIX) and len(uri) > len(PAGE_PREFIX):
            page = find_page(wiki, page_id=unquote(uri[len(PAGE_PREFIX) :]))
            return read_confined(self.ws, wiki, page.path)
        raise WikiError(f"unknown resource {uri!r}; use {INDEX_URI} or {PAGE_TEMPLATE}")

    async def read_resource(self, ctx: Any, params: Any) -> Any:
        from mcp import types
        from mcp.shared.exceptions import MCPError

        uri = str(params.uri)
        try:
            text = await self.serial.run(lambda: self.text(uri))
        except LlmwikiError as exc:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc), data={"uri": uri}) from exc
        except Exception as exc:  # noqa: BLE001
            raise MCPError(
                code=INTERNAL_ERROR, message=_error_text(exc, self.roots), data={"uri": uri}
            ) from exc
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")]
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
                return (
                    value if isinstance(value, (str, int)) and not isinstance(value, bool) else None
                )
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
            code, what = (
                (-32700, "Parse error") if "json_invalid" in kinds else (-32600, "Invalid Request")
            )
            error = types.ErrorData(
                code=code,
                message=f"{what}: not a JSON-RPC 2.0 request, notification or response "
                '(a method, params that are an object, "jsonrpc": "2.0")',
            )
            await self._write.send(
                SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=_frame_id(item), error=error))
            )

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
            await server.run(
                _AnswerInvalidFrames(read_stream, write_stream),
                write_stream,
                server.create_initialization_options(),
            )

    anyio.run(serve)  # Ctrl-C reaches the CLI, which exits 130 as for every command

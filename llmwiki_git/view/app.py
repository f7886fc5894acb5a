"""The `llmwiki view` application: Starlette routes behind the guard, served by Uvicorn on
127.0.0.1 only. :func:`create_app` is what the tests drive with Starlette's TestClient;
:func:`serve` binds the socket (a free port by default), prints the URL with its one-time
token, and runs until interrupted."""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..workspace import Workspace
from . import graph, review, wikipages
from .security import Guard, GuardMiddleware
from .site import Site

STATIC = Path(__file__).with_name("static")


def _sync(
    handler: Callable[[Site, Request], Response], site: Site
) -> Callable[[Request], Awaitable[Response]]:
    """A blocking handler (git, the checker) run in Starlette's thread pool."""
    from starlette.concurrency import run_in_threadpool

    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(handler, site, request)

    return endpoint


def create_app(site: Site) -> Starlette:
    async def home(request: Request) -> Response:
        return RedirectResponse("/review", status_code=303)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)  # no icon; spares the browser's console a 404

    async def act(request: Request) -> Response:
        return await review.act(site, request)

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Route("/review", _sync(review.queue, site), methods=["GET"]),
        Route("/review/{cid}", _sync(review.candidate, site), methods=["GET"]),
        Route("/review/{cid}/{action}", act, methods=["POST"]),
        Route("/page/{path:path}", _sync(wikipages.page, site), methods=["GET"]),
        Route("/source/{path:path}", _sync(wikipages.source, site), methods=["GET"]),
        Route("/check", _sync(wikipages.check, site), methods=["GET"]),
        Route("/graph", _sync(graph.graph, site), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=site.guard)])


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def serve(
    ws: Workspace,
    *,
    port: int = 0,
    open_browser: bool = False,
    read_only: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    import uvicorn

    sock = bind(port)
    guard = Guard(sock.getsockname()[1])
    site = Site(ws, guard, read_only=read_only)
    app = create_app(site)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    say(guard.url)
    if open_browser:
        webbrowser.open(guard.url)
    server.run(sockets=[sock])

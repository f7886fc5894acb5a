"""The view's guard: loopback only, a one-time token traded for a cookie, Host, Origin and
`Sec-Fetch-Site` checked on every request, CSRF tokens on the two POSTs, and the response
headers every answer carries (a strict Content-Security-Policy, nosniff, no referrer, no
CORS headers at all).

Hand-written rather than Starlette's TrustedHostMiddleware and CORS helpers: those allow
more than this needs (CORS) or check less (no Origin or Fetch Metadata); the whole rule is
one function below, tested request by request (tests/view/test_security.py)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "llmwiki_view"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


@dataclass
class Guard:
    """The secrets of one `llmwiki view` process: the one-time token printed in its URL and
    the session the first visit receives for it (a cookie), and the port it serves."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    used: bool = False

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.hosts)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def csrf(self) -> str:
        """The CSRF token the page's forms carry: bound to this session, never in a cookie."""
        return hmac.new(self.session.encode(), b"csrf", hashlib.sha256).hexdigest()

    def csrf_ok(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self.csrf().encode())

    def trade(self, token: str) -> bool:
        """Whether ``token`` is the one-time token, still unused (it is used up here)."""
        if self.used or not hmac.compare_digest(token.encode(), self.token.encode()):
            return False
        self.used = True
        return True

    def cookie_ok(self, header: str) -> bool:
        for part in header.split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self.session.encode()):
                return True
        return False

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """Why a request is refused (status, message), or None: Host first (DNS
        rebinding), then the method, Fetch Metadata and Origin (another site's page)."""
        if headers.get("host", "") not in self.hosts:
            return 421, "this server answers only to 127.0.0.1 and localhost on its own port"
        if method not in ("GET", "HEAD", "POST"):
            return 405, f"{method} is not served here"
        site = headers.get("sec-fetch-site")
        allowed_sites = ("same-origin",) if method == "POST" else ("same-origin", "none")
        if site is not None and site not in allowed_sites:
            return 403, f"a {site} request is refused: open the view from its own URL"
        origin = headers.get("origin")
        if method == "POST" and origin == "null" and site == "same-origin":
            # Under `Referrer-Policy: no-referrer` a browser sends `Origin: null` with the
            # page's own form posts; Fetch Metadata (which no page can set) vouches for it.
            return None
        if origin is not None and origin not in self.origins:
            return 403, "a request from another origin is refused"
        if method == "POST" and origin is None:
            return 403, "a POST without an Origin header is refused"
        return None


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


class GuardMiddleware:
    """Applies :class:`Guard` to every HTTP request and adds :data:`HEADERS` to every response."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: nothing to guard
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in HEADERS if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        headers = _headers(scope)
        refused = self.guard.refusal(scope["method"], headers)
        if refused is None and not self.guard.cookie_ok(headers.get("cookie", "")):
            token = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
            if scope["path"] == "/" and token and self.guard.trade(token[0]):
                await _redirect_with_cookie(send_with_headers, self.guard.session)
                return
            refused = (
                (403, "this link was used already: restart `llmwiki view` for a new one")
                if token and self.guard.used
                else (401, "open the URL `llmwiki view` printed (it carries a one-time token)")
            )
        if refused is not None:
            await _plain(send_with_headers, *refused)
            return
        await self.app(scope, receive, send_with_headers)


async def _plain(send: Callable[[Message], Awaitable[None]], status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Callable[[Message], Awaitable[None]], session: str) -> None:
    cookie = f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", b"/review"),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})

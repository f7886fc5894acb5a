"""One place for HTTP: timeouts, retries with backoff on 429/5xx and dropped connections,
and errors that say what to set or start -- for chat (streamed or not) and embeddings.
The provider modules own their wire formats and endpoints; this module owns the loops."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ProviderError, RetryableStreamError

if TYPE_CHECKING:  # httpx is imported where a request is made: importing this module stays light
    import httpx

# Clients open for a request, from any thread: :func:`close_open_requests` closes them when
# the user stops a run (Ctrl-C while compile's worker threads wait on a model), so that
# their connections close and a local server stops generating.
_OPEN: set[Any] = set()
_OPEN_LOCK = threading.Lock()
_STOPPING = threading.Event()


@contextmanager
def _tracked_client(settings: HttpSettings) -> Iterator[httpx.Client]:
    client = settings.client()
    with _OPEN_LOCK:
        _OPEN.add(client)
    try:
        with client:
            yield client
    finally:
        with _OPEN_LOCK:
            _OPEN.discard(client)


def close_open_requests() -> int:
    """Close every request in flight, from any thread (their readers fail at once and are
    not retried); returns how many were open. For a run being stopped."""
    _STOPPING.set()
    with _OPEN_LOCK:
        clients = list(_OPEN)
    for client in clients:
        client.close()
    return len(clients)


def reset_stopping() -> None:
    """Allow requests again after :func:`close_open_requests` (a long-lived process: MCP)."""
    _STOPPING.clear()


# 529 is Anthropic's "overloaded".
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


# ------------------------------------------------------------------ requests
#
# Every request -- chat streamed or not, embeddings -- goes through one retry loop
# (``_exchange``): POST, hand a 2xx response to a body reader (stream lines to a provider's
# parser, or one JSON body), pass on what it yields. Transient failures (429, 5xx,
# dropped connections, connections refused by another machine, a retryable error event;
# not a connection refused on this one, where nothing listens) are retried with exponential
# backoff -- but only while nothing has been yielded: once text has reached the caller a
# retry would duplicate it, so a stream that breaks after output raises a ProviderError
# saying how much arrived. ``Retry-After`` / ``retry-after-ms`` are honoured up to a cap.

#: Yielded by a stream parser when the server marked the end of the answer
#: (``[DONE]``, ``message_stop``, ``"done": true``).
STREAM_END = None

StreamParser = Callable[[Iterator[str]], Iterator[Any]]


@dataclass(frozen=True)
class StreamInfo:
    """Yielded by a stream parser for what is not text: the finish reason (``"length"``
    when the server stopped at the output limit) and token counts, when the server says."""

    finish: str | None = None
    input_tokens: Any = None
    output_tokens: Any = None


def _note_info(state: Any, info: StreamInfo) -> None:
    if state is None:
        return
    if info.finish is not None:
        state.finish = info.finish
    for name in ("input_tokens", "output_tokens"):
        value = getattr(info, name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            setattr(state, name, value)


@dataclass(frozen=True)
class HttpSettings:
    """Timeouts (seconds) and retry policy of chat requests."""

    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    retries: int = 3
    backoff: float = 1.0
    max_retry_after: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *variables: str) -> HttpSettings:
        """Defaults, with the read timeout taken from the first of ``variables`` that is set
        (milliseconds, as in ``LLMWIKI_REQUEST_TIMEOUT_MS``)."""
        for name in variables:
            raw = (environ.get(name) or "").strip()
            if not raw:
                continue
            try:
                millis = float(raw)
            except ValueError:
                millis = -1.0
            if not millis > 0 or millis != millis or millis == float("inf"):
                raise ConfigError(
                    f"{name} must be a positive number of milliseconds, not {raw!r}",
                    hint=f"e.g. {name}=300000 for five minutes",
                )
            return cls(read_timeout=millis / 1000.0)
        return cls()

    def backoff_delay(self, attempt: int) -> float:
        return float(self.backoff * 2**attempt)

    def timeout(self) -> httpx.Timeout:
        import httpx

        return httpx.Timeout(self.read_timeout, connect=self.connect_timeout)

    def client(self) -> httpx.Client:
        """A client with these timeouts (TLS settings loaded once per process)."""
        import httpx

        return httpx.Client(timeout=self.timeout(), verify=_tls_context())


_TLS: list[Any] = []


def _tls_context() -> Any:
    """httpx's default TLS context (certifi, honouring SSL_CERT_FILE / SSL_CERT_DIR), built
    once: loading the CA bundle costs ~0.2 s, which every new client would pay again."""
    if not _TLS:
        import httpx

        make = getattr(httpx, "create_ssl_context", None)
        _TLS.append(make() if make is not None else True)
    return _TLS[0]


@dataclass(frozen=True)
class Endpoint:
    """Where a provider's requests go, and how its failures are explained.

    ``key_var`` is the variable named when the server refuses the credentials;
    ``unreachable`` says what to start or check when nothing answers at ``url``;
    ``explain`` may turn a provider-specific refusal (status, detail) into a message and
    hint (a missing model, say), or return None for the generic wording.
    """

    provider: str
    url: str
    headers: Mapping[str, str]
    settings: HttpSettings
    key_var: str | None
    unreachable: str
    explain: Callable[[int, str], tuple[str, str | None] | None] | None = None
    timeout_var: str = "LLMWIKI_REQUEST_TIMEOUT_MS"


def error_detail(body: str) -> str:
    """The human part of an error body: ``error.message`` (OpenAI, Anthropic), ``error``
    (Ollama), else the text itself, shortened."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data.get("message"))
        if isinstance(err, dict):
            err = err.get("message") or err.get("type")
        if isinstance(err, str) and err.strip():
            text = err.strip()
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def http_error(endpoint: Endpoint, status: int, body: str, attempts: int) -> ProviderError:
    """The ProviderError for an HTTP refusal, naming what to set or check."""
    name = endpoint.provider
    detail = error_detail(body) or "(empty body)"
    special = endpoint.explain(status, detail) if endpoint.explain else None
    if special is not None:
        message, hint = special
        return ProviderError(name, message, hint=hint, status=status)
    if status in (401, 403):
        var = endpoint.key_var or "the API key"
        verb = "authentication failed" if status == 401 else "access denied"
        return ProviderError(
            name,
            f"{verb} (HTTP {status}): {detail} -- check {var}",
            hint=f"set {var} to a valid key",
            status=status,
        )
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if status == 429:
        return ProviderError(
            name,
            f"rate limited (HTTP 429){tries}: {detail}",
            hint="wait a little and try again, or use another model",
            status=status,
        )
    if status >= 500:
        return ProviderError(name, f"server error (HTTP {status}){tries}: {detail}", status=status)
    if status == 404:
        return ProviderError(
            name,
            f"not found (HTTP 404) at {endpoint.url}: {detail}",
            hint="check the base URL and the model name",
            status=status,
        )
    return ProviderError(name, f"request refused (HTTP {status}): {detail}", status=status)


def retry_after(headers: Mapping[str, str], cap: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date),
    capped at ``cap``; None when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    seconds: float | None = None
    if raw_ms:
        try:
            seconds = float(raw_ms) / 1000.0
        except ValueError:
            seconds = None
    raw = headers.get("retry-after")
    if seconds is None and raw:
        try:
            seconds = float(raw)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None and when.tzinfo is not None:
                seconds = when.timestamp() - time.time()
    if seconds is None or seconds != seconds:  # absent or NaN
        return None
    return min(max(seconds, 0.0), cap)


def _transport_error(endpoint: Endpoint, exc: Exception, attempts: int) -> ProviderError:
    import httpx

    name = endpoint.provider
    if isinstance(exc, httpx.ReadTimeout):
        seconds = endpoint.settings.read_timeout
        return ProviderError(
            name,
            f"no answer from {endpoint.url} within {seconds:g} s; the request was given up and "
            "its connection closed (a local server stops generating)",
            hint=f"set {endpoint.timeout_var} (milliseconds) to wait longer, or lower "
            "LLMWIKI_MAX_TOKENS",
        )
    if isinstance(exc, httpx.ConnectError):
        what = (
            "connection refused"
            if "refused" in str(exc).lower()
            else (str(exc) or "cannot connect")
        )
        tries = f", {attempts} attempts" if attempts > 1 else ""
        return ProviderError(
            name, f"cannot connect to {endpoint.url} ({what}{tries})", hint=endpoint.unreachable
        )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ProviderError(
            name,
            f"cannot use the URL {endpoint.url!r} ({exc})",
            hint="the base URL must start with http:// or https://",
        )
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    return ProviderError(
        name,
        f"the connection to {endpoint.url} failed{tries}: {exc.__class__.__name__}"
        + (f": {exc}" if str(exc) else ""),
        hint=endpoint.unreachable,
    )


def _retryable_transport(exc: Exception, url: str) -> bool:
    import httpx

    # A read timeout means the model is slow, not that the request was lost: waiting
    # another read_timeout per retry would only multiply the wait. A connection refused on
    # this machine means nothing listens there (Ollama not started): waiting 1 + 2 + 4 s
    # for it only delayed the error by 9 s.
    if isinstance(exc, httpx.ConnectError) and "refused" in str(exc).lower() and _loopback(url):
        return False
    return isinstance(exc, httpx.TransportError) and not isinstance(
        exc, (httpx.ReadTimeout, httpx.UnsupportedProtocol, httpx.LocalProtocolError)
    )


def _loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (localhost, 127.0.0.0/8, ::1)."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _body_text(response: httpx.Response) -> str:
    import httpx

    try:
        return response.read().decode("utf-8", errors="replace")
    except (
        httpx.HTTPError,
        httpx.StreamError,
    ):  # the status is what matters; the body is a courtesy
        return ""


_PARTIAL_HINT = "try again: an answer is never retried automatically once text has arrived"


def stream_request(
    endpoint: Endpoint,
    payload: Mapping[str, Any],
    parse: StreamParser,
    parse_full: Callable[[Any], str] | None = None,
    state: Any = None,
) -> Iterator[str]:
    """POST ``payload`` and yield the text deltas that ``parse`` finds in the body's lines.

    ``parse`` yields strings, :class:`StreamInfo` (noted in ``state``, a
    :class:`~.base.StreamState`) and :data:`STREAM_END` when the server marks the end; a
    body that ends without that mark is a broken stream. ``parse_full`` reads a plain JSON
    answer, for servers that ignore ``"stream": true``. Closing the returned iterator (the
    caller stops reading: a repetition cut, Ctrl-C) closes the response and its connection,
    which is how a local server learns to stop generating.
    """

    def read(response: httpx.Response) -> Iterator[object]:
        if parse_full is not None and response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            text = _parse_full_body(endpoint, _body_text(response), parse_full)
            if text:
                yield text
            return
        emitted = 0
        for item in parse(response.iter_lines()):
            if item is STREAM_END:
                return
            if isinstance(item, StreamInfo):
                _note_info(state, item)
                continue
            if item:
                emitted += len(item)
                yield item
        if emitted:
            raise ProviderError(
                endpoint.provider,
                f"the stream broke after {emitted} characters: the server closed it before the end "
                "of the answer, which is incomplete",
                hint=_PARTIAL_HINT,
            )
        yield _AGAIN

    with _tracked_client(endpoint.settings) as client:
        for item in _exchange(endpoint, payload, client, read):
            assert isinstance(item, str)
            yield item


def post_json(
    endpoint: Endpoint, payload: Mapping[str, Any], client: httpx.Client | None = None
) -> Any:
    """POST ``payload`` (not streamed) and return the decoded JSON answer, through the same
    retry loop as :func:`stream_request` (chat without streaming, embeddings). ``client`` is
    reused when given (embedding batches share one connection); otherwise one is made for
    this request."""
    if client is None:
        with _tracked_client(endpoint.settings) as own:
            return post_json(endpoint, payload, own)

    def read(response: httpx.Response) -> Iterator[object]:
        response.read()  # a body cut off here is a transport error: the loop retries it
        text = response.text
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ProviderError(
                endpoint.provider, f"the server sent a malformed answer: {text[:200]!r}"
            ) from exc
        yield _Answer(value)

    answers = _exchange(endpoint, payload, client, read)
    try:
        answer = next(answers)
    finally:
        answers.close()
    assert isinstance(answer, _Answer)
    return answer.value


@dataclass(frozen=True)
class _Answer:
    """A whole decoded JSON body, as :func:`_exchange` hands it on."""

    value: Any


#: Yielded by a body reader when this attempt brought no answer at all: try again.
_AGAIN = object()

#: Reads one successful (2xx) response: yields what the caller gets, or :data:`_AGAIN`.
BodyReader = Callable[["httpx.Response"], Iterator[object]]


def _exchange(
    endpoint: Endpoint, payload: Mapping[str, Any], client: httpx.Client, read: BodyReader
) -> Generator[object, None, None]:
    """The one retry loop: POST ``payload`` and pass on what ``read`` yields from a 2xx
    response. 429/5xx answers, dropped or refused connections, a retryable error event and
    an attempt that brought nothing (:data:`_AGAIN`) are retried with backoff -- but only
    while nothing has reached the caller: once text has, a retry would duplicate it, so a
    break after output raises a ProviderError saying how much arrived."""
    import httpx

    settings = endpoint.settings
    attempt = 0
    while True:
        sent = _Sent()
        delay = settings.backoff_delay(attempt)
        try:
            then = yield from _attempt(endpoint, payload, client, read, attempt, delay, sent)
            if then is None:  # the whole answer
                return
            delay = then
        except RetryableStreamError as exc:
            if sent.count:
                raise ProviderError(
                    endpoint.provider,
                    f"the stream broke after {sent.count} characters: "
                    f"{exc.message.split(': ', 1)[-1]} -- the answer is incomplete",
                    hint=_PARTIAL_HINT,
                ) from exc
            if attempt >= settings.retries:
                raise
        except httpx.DecodingError as exc:
            raise ProviderError(
                endpoint.provider, f"the server sent a body that cannot be decoded ({exc})"
            ) from exc
        except httpx.TransportError as exc:
            _raise_unless_retryable(endpoint, exc, attempt, sent.count)
        time.sleep(delay)
        attempt += 1


@dataclass
class _Sent:
    """How much of one attempt has reached the caller (characters, or items)."""

    count: int = 0


def _attempt(
    endpoint: Endpoint,
    payload: Mapping[str, object],
    client: httpx.Client,
    read: BodyReader,
    attempt: int,
    delay: float,
    sent: _Sent,
) -> Generator[object, None, float | None]:
    """One POST: passes on what ``read`` yields from a 2xx response, counted in ``sent``.
    Returns None when the answer is complete, else the delay before the next attempt (the
    server's ``Retry-After``, or ``delay``); raises when no attempt is left."""
    settings = endpoint.settings
    with client.stream(
        "POST", endpoint.url, json=dict(payload), headers=dict(endpoint.headers)
    ) as response:
        status = response.status_code
        if not 200 <= status < 300:
            body = _body_text(response)
            if status not in RETRY_STATUS or attempt >= settings.retries:
                raise http_error(endpoint, status, body, attempt + 1)
            waited = retry_after(response.headers, settings.max_retry_after)
            return delay if waited is None else waited
        for item in read(response):
            if item is _AGAIN:
                if attempt >= settings.retries:
                    raise ProviderError(
                        endpoint.provider,
                        f"the server closed the stream without an answer ({attempt + 1} attempts)",
                        hint=endpoint.unreachable,
                    )
                return delay
            sent.count += len(item) if isinstance(item, str) else 1
            yield item
        return None


def _raise_unless_retryable(endpoint: Endpoint, exc: Exception, attempt: int, sent: int) -> None:
    """A connection that broke or was refused: the ProviderError to raise, unless another
    attempt may follow (none was stopped, nothing reached the caller, attempts are left, the
    error is one to retry)."""
    if _STOPPING.is_set():
        raise ProviderError(
            endpoint.provider, "the request was stopped and its connection closed"
        ) from exc
    if sent:
        raise ProviderError(
            endpoint.provider,
            f"the stream broke after {sent} characters ({exc.__class__.__name__}): "
            "the answer is incomplete",
            hint=_PARTIAL_HINT,
        ) from exc
    if attempt >= endpoint.settings.retries or not _retryable_transport(exc, endpoint.url):
        raise _transport_error(endpoint, exc, attempt + 1) from exc


def json_request(
    endpoint: Endpoint, payload: Mapping[str, Any], parse_full: Callable[[Any], str]
) -> str:
    """POST ``payload`` (not streamed) and return the text ``parse_full`` finds in the JSON
    answer."""
    return _parse_full(endpoint, post_json(endpoint, payload), parse_full)


def answer_of(endpoint: Endpoint, data: Any, parse_full: Callable[[Any], str]) -> str:
    """The text ``parse_full`` finds in a decoded JSON answer (a malformed one: ProviderError)."""
    return _parse_full(endpoint, data, parse_full)


def _parse_full_body(endpoint: Endpoint, body: str, parse_full: Callable[[Any], str]) -> str:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ProviderError(
            endpoint.provider, f"the server sent a malformed answer: {body[:200]!r}"
        ) from exc
    return _parse_full(endpoint, data, parse_full)


def _parse_full(endpoint: Endpoint, data: Any, parse_full: Callable[[Any], str]) -> str:
    try:
        return parse_full(data)
    except ProviderError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        shown = json.dumps(data)[:200]
        raise ProviderError(
            endpoint.provider, f"the server sent a malformed answer: {shown!r}"
        ) from exc


def malformed(provider: str, what: str, line: str) -> ProviderError:
    """The error for a stream chunk that does not parse."""
    shown = line if len(line) <= 200 else line[:197] + "..."
    return ProviderError(
        provider,
        f"the server sent a malformed {what}: {shown!r}",
        hint="is the base URL pointing at the right kind of server?",
    )


def sse_events(provider: str, lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """Server-sent events as ``(event, data)`` pairs from the body's lines: ``data:``
    lines join with newlines, a blank line dispatches, ``:`` comments are ignored; a last
    event without its blank line is still dispatched. A line that is no SSE field at all
    (an HTML page, a JSON body) is a malformed stream, not something to skip silently."""
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field not in ("id", "retry"):
            raise malformed(provider, "event stream line", line)
    if data:
        yield event or "message", "\n".join(data)

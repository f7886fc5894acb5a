"""Compile's model requests: counted, bounded per step, structured where the server can.

Each JSON step (concept extraction, page writing) sends its JSON schema as the provider's
structured output (OpenAI-compatible ``response_format``, Ollama ``format``) when the
provider has one and the server accepts it; otherwise the prose prompt alone asks for the
shape. Either way the reply is validated against the schema (jsonschema); a reply that
does not validate is asked again once, with the validation error, and a second invalid
reply is refused (:class:`MalformedOutput`) showing what was received. Every error says what
the run had spent (requests, tokens) so far.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import Interrupted, MalformedOutput, MissingDependency, ProviderError
from ..providers.base import ChatProvider, Completion, Schema
from .progress import Progress

T = TypeVar("T")
R = TypeVar("R")

#: The concept list of one source. Sent with every property required (a constrained
#: decoder then writes them all); validated with :data:`EXTRACT_CHECK`, which lets a
#: prose reply leave out what compile can do without (a summary, aliases).
EXTRACT_SCHEMA = Schema(
    "concepts",
    {
        "type": "object",
        "properties": {
            "concepts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "summary": {"type": "string"},
                        "aliases": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["name", "summary", "aliases"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["concepts"],
        "additionalProperties": False,
    },
)
PAGE_SCHEMA = Schema(
    "page",
    {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1},
            "summary": {"type": "string"},
            "body": {"type": "string", "minLength": 1},
        },
        "required": ["title", "summary", "body"],
        "additionalProperties": False,
    },
)
_LENIENT_REQUIRED = {"concepts": (["concepts"], ["name"]), "page": (["body"], None)}

RETRY_NOTE = (
    "\n\nYour previous reply could not be used: {error}\n"
    "Reply again with JSON only, no prose and no code fence, in exactly the shape asked for."
)
SHOWN_CHARS = 300  # of a refused reply, in the error


def _lenient(schema: Schema) -> dict[str, Any]:
    """The schema a reply is checked against: the sent one with fewer required keys and
    extra keys allowed (a model may add a key; compile reads only its own)."""
    top, item = _LENIENT_REQUIRED.get(schema.name, (None, None))
    checked: dict[str, Any] = json.loads(json.dumps(schema.schema))
    checked.pop("additionalProperties", None)
    if top is not None:
        checked["required"] = top
    items = checked.get("properties", {}).get("concepts", {}).get("items")
    if isinstance(items, dict):
        items.pop("additionalProperties", None)
        if item is not None:
            items["required"] = item
    return checked


def parse_json(text: str) -> Any:
    """The JSON object in a reply (a code fence or prose around it tolerated); ValueError
    saying why when there is none."""
    stripped = text.strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    return json.loads(stripped[start : end + 1])


def problem(text: str, schema: Schema) -> tuple[dict[str, Any] | None, str | None]:
    """``(data, None)`` for a reply that validates against ``schema``, else
    ``(None, what is wrong)``."""
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - the remote and local extras install it
        raise MissingDependency(
            "compiling with a model needs jsonschema, to validate the model's replies",
            hint="pip install 'llmwiki-git[remote]'",
        ) from exc
    try:
        data = parse_json(text)
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    validator = jsonschema.Draft202012Validator(_lenient(schema))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the reply"
        return None, f"{where}: {error.message}"
    return data, None


def spent(progress: Progress) -> str:
    usage = progress.usage
    tokens = f"{usage.input_tokens} tokens in, {usage.output_tokens} out" + (
        " (some estimated)" if usage.estimated else ""
    )
    return f"{usage.requests} model request(s), {tokens}"


class Asker:
    """One model, counted: every request adds to the run's usage (``progress``)."""

    def __init__(self, chat: ChatProvider, progress: Progress) -> None:
        self.chat = chat
        self.progress = progress
        self.structured = 0  # requests sent with a JSON schema
        self.retried = 0  # replies asked again after failing validation

    def completion(
        self, system: str, user: str, *, step: str, schema: Schema | None = None
    ) -> Completion:
        counted = getattr(self.chat, "complete_counted", None)
        try:
            if counted is not None:
                reply = counted(system, user, step=step, schema=schema)
                self.progress.count(
                    reply.input_tokens, reply.output_tokens, system + user, reply.text
                )
                if reply.structured:
                    self.structured += 1
                return reply  # type: ignore[no-any-return]
            text = self.chat.complete(system, user, step=step)
        except ProviderError as exc:
            if "spent so far" not in exc.message:
                exc.message = f"{exc.message} (this run had spent {spent(self.progress)} so far)"
            raise
        self.progress.count(None, None, system + user, text)
        return Completion(text)

    def __call__(self, system: str, user: str, *, step: str = "page") -> str:
        return self.completion(system, user, step=step).text

    def json(
        self, system: str, user: str, *, step: str, schema: Schema, what: str
    ) -> Mapping[str, Any]:
        """The reply as a JSON object that validates against ``schema``: asked once more
        with the validation error when the first does not; MalformedOutput naming ``what``
        and showing the reply when the second does not either."""
        reply = self.completion(system, user, step=step, schema=schema)
        data, error = problem(reply.text, schema)
        if data is not None:
            return data
        self.retried += 1
        reply = self.completion(
            system, user + RETRY_NOTE.format(error=error), step=step, schema=schema
        )
        data, again = problem(reply.text, schema)
        if data is not None:
            return data
        cut = " (cut at the output limit: raise LLMWIKI_MAX_TOKENS)" if reply.finish else ""
        shown = reply.text.strip()
        shown = shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 3] + "..."
        raise MalformedOutput(
            self.chat.name,
            f"malformed model output for {what}: {again}{cut}, after one retry with the "
            f"first reply's error ({error}); received: {shown!r}; nothing was staged; "
            f"spent {spent(self.progress)}",
            hint="use a larger model, or LLMWIKI_STRUCTURED_OUTPUT=on with a server "
            "that supports JSON schemas",
        )


def parallel(
    work: Callable[[T], R],
    items: Iterable[T],
    concurrency: int,
    progress: Progress | None = None,
) -> list[R]:
    """``work`` over ``items`` on ``concurrency`` threads, in order. Ctrl-C cancels what has
    not started and closes the requests in flight (their connections close, so a local
    server stops generating) instead of waiting for every model reply; it is re-raised as
    :class:`Interrupted` saying what the run had spent (``progress``)."""
    from ..providers.http import reset_stopping

    reset_stopping()
    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        return list(pool.map(work, items))
    except KeyboardInterrupt:
        from ..providers.http import close_open_requests

        pool.shutdown(wait=False, cancel_futures=True)
        closed = close_open_requests()
        spending = f"; spent {spent(progress)}" if progress is not None else ""
        stopped = Interrupted(
            f"closed {closed} model request(s) in flight{spending}; nothing was staged"
        )
        stopped.closed = closed
        raise stopped from None
    finally:
        pool.shutdown(wait=True)

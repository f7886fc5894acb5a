"""Anthropic's Messages API.

Wire format: ``POST {ANTHROPIC_BASE_URL or https://api.anthropic.com}/v1/messages`` with
``x-api-key`` and ``anthropic-version: 2023-06-01``; the body carries ``model``,
``max_tokens`` (required; per step, see ``limits.py``), ``system``, ``messages`` and ``stream: true``. The answer
arrives as server-sent events: text in ``content_block_delta`` events whose
``delta.type`` is ``text_delta``, the end in ``message_stop``, failures in ``error``
events (``overloaded_error`` and friends are retried when no text has arrived yet).
``ANTHROPIC_AUTH_TOKEN`` (sent as a bearer token, for gateways) stands in for the key.
Model: ``LLMWIKI_MODEL`` > ``ANTHROPIC_MODEL`` > ``claude-3-5-haiku-latest``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ConfigError, ProviderError, RetryableStreamError
from .base import PromptedProvider, Schema, model_from_env, user_agent
from .http import (
    STREAM_END,
    Endpoint,
    HttpSettings,
    StreamInfo,
    malformed,
    sse_events,
)

NAME = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-3-5-haiku-latest"
API_VERSION = "2023-06-01"
MAX_TOKENS = 2048
KEY_VAR = "ANTHROPIC_API_KEY"
_RETRYABLE_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


class AnthropicProvider(PromptedProvider):
    """Messages API over HTTP with streaming (no SDK)."""

    name = NAME
    generative = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        settings: HttpSettings | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        base = base_url.rstrip("/")
        if base.endswith("/v1"):  # tolerate a base URL written with the version path
            base = base[:-3]
        self.base_url = base
        self.settings = settings or HttpSettings()
        headers = {
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
            "user-agent": user_agent(),
        }
        if api_key:
            headers["x-api-key"] = api_key
        elif auth_token:
            headers["authorization"] = f"Bearer {auth_token}"
        self._endpoint = Endpoint(
            provider=NAME,
            url=f"{base}/v1/messages",
            headers=headers,
            settings=self.settings,
            key_var=KEY_VAR if api_key or not auth_token else "ANTHROPIC_AUTH_TOKEN",
            unreachable=(
                "is the server at ANTHROPIC_BASE_URL running?"
                if base != DEFAULT_BASE_URL
                else "check the network connection to api.anthropic.com"
            ),
            explain=self._explain,
        )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        model: str | None = None,
        settings: HttpSettings | None = None,
    ) -> AnthropicProvider:
        """Configured from ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``),
        ``ANTHROPIC_BASE_URL``, ``LLMWIKI_MODEL`` / ``ANTHROPIC_MODEL`` and
        ``LLMWIKI_REQUEST_TIMEOUT_MS``; ConfigError without a key."""
        key = (environ.get(KEY_VAR) or "").strip() or None
        token = (environ.get("ANTHROPIC_AUTH_TOKEN") or "").strip() or None
        if not key and not token:
            raise ConfigError(
                "anthropic needs ANTHROPIC_API_KEY",
                hint="set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway)",
            )
        return cls(
            model_from_env(environ, "ANTHROPIC_MODEL", DEFAULT_MODEL, model),
            api_key=key,
            auth_token=token,
            base_url=(environ.get("ANTHROPIC_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
            settings=settings or HttpSettings.from_env(environ, "LLMWIKI_REQUEST_TIMEOUT_MS"),
        )

    def _payload(
        self, system: str, user: str, stream: bool, max_tokens: int, schema: Schema | None
    ) -> dict[str, Any]:
        # no structured-output field here (``structured`` is False): the prose request
        return {
            "model": self.model,
            "max_tokens": max_tokens if self.max_tokens == MAX_TOKENS else self.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "stream": stream,
        }

    def _parse_stream(self, lines: Iterator[str]) -> Iterator[Any]:
        return _parse_stream(lines)

    def _finish(self, body: dict[str, Any]) -> str | None:
        return "length" if body.get("stop_reason") == "max_tokens" else None

    def _usage(self, body: dict[str, Any]) -> tuple[Any, Any]:
        usage = body.get("usage")
        return (
            (usage.get("input_tokens"), usage.get("output_tokens"))
            if isinstance(usage, dict)
            else (None, None)
        )

    def _parse_full(self, body: Any) -> str:
        return _parse_full(body)

    def _explain(self, status: int, detail: str) -> tuple[str, str | None] | None:
        if status == 404 and "model" in detail.lower():
            return (
                f"model {self.model!r} not found (HTTP 404): {detail}",
                "set LLMWIKI_MODEL (or ANTHROPIC_MODEL) to a model your key can use",
            )
        if status == 404:
            return (
                f"nothing answers at {self._endpoint.url} (HTTP 404): {detail}",
                "ANTHROPIC_BASE_URL is the server's root (https://api.anthropic.com), without /v1/messages",
            )
        return None


def _error_event(event: dict[str, Any]) -> ProviderError:
    err = event.get("error")
    kind = err.get("type") if isinstance(err, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    detail = f"{kind}: {message}" if kind and message else str(kind or message or event)
    cls = RetryableStreamError if kind in _RETRYABLE_TYPES else ProviderError
    return cls(NAME, f"the server reported an error in the stream: {detail}")


def _parse_stream(lines: Iterator[str]) -> Iterator[Any]:
    for event_name, data in sse_events(NAME, lines):
        try:
            event = json.loads(data)
        except ValueError:
            raise malformed(NAME, f"{event_name} event", data) from None
        if not isinstance(event, dict):
            raise malformed(NAME, f"{event_name} event", data)
        kind = event.get("type") or event_name
        if kind == "content_block_delta":
            delta = event.get("delta")
            if not isinstance(delta, dict):
                raise malformed(NAME, "content_block_delta event", data)
            if delta.get("type") == "text_delta":
                text = delta.get("text")
                if not isinstance(text, str):
                    raise malformed(NAME, "text_delta", data)
                if text:
                    yield text
        elif kind == "message_delta":
            delta, usage = event.get("delta"), event.get("usage")
            stop = delta.get("stop_reason") if isinstance(delta, dict) else None
            yield StreamInfo(
                "length" if stop == "max_tokens" else None,
                None,
                usage.get("output_tokens") if isinstance(usage, dict) else None,
            )
        elif kind == "message_stop":
            yield STREAM_END
            return
        elif kind == "error":
            raise _error_event(event)
        # Anything else (message_start, ping, thinking or tool deltas, event types added
        # later) carries no answer text and is skipped, as the API's versioning policy asks.


def _parse_full(body: Any) -> str:
    if isinstance(body, dict) and body.get("type") == "error":
        raise _error_event(body)
    blocks = body["content"]
    return "".join(block["text"] for block in blocks if block.get("type") == "text")

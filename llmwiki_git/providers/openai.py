"""OpenAI chat completions, or any OpenAI-compatible server (``OPENAI_BASE_URL``).

Wire format: ``POST {base}/chat/completions`` with ``{"model", "messages", "stream": true}``
and ``Authorization: Bearer $OPENAI_API_KEY``; the answer arrives as server-sent events
whose ``data:`` is a JSON chunk (text in ``choices[0].delta.content``) until
``data: [DONE]``. ``OPENAI_BASE_URL`` includes the version path, as the official clients
expect (``http://127.0.0.1:8080/v1``); with it set the key is optional, for local servers.
Model: ``LLMWIKI_MODEL`` > ``OPENAI_MODEL`` > ``gpt-4o-mini``.

Embeddings: ``POST {base}/embeddings`` with ``{"model", "input": [texts]}``; vectors in
``data[i].embedding``, ordered by ``data[i].index``. Model: ``text-embedding-3-small``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ConfigError, ProviderError, RetryableStreamError
from .base import (
    HttpEmbeddings,
    PromptedProvider,
    Schema,
    chat_messages,
    model_from_env,
    user_agent,
)
from .http import (
    STREAM_END,
    Endpoint,
    HttpSettings,
    StreamInfo,
    error_detail,
    malformed,
    sse_events,
)

NAME = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
KEY_VAR = "OPENAI_API_KEY"
# Error types an OpenAI-compatible server reports inside a stream that are worth a retry.
_RETRYABLE_TYPES = {
    "server_error",
    "rate_limit_error",
    "rate_limit_exceeded",
    "overloaded_error",
    "timeout",
}


class OpenAIProvider(PromptedProvider):
    """Chat completions over HTTP with streaming (no SDK)."""

    name = NAME
    generative = True
    structured = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        settings: HttpSettings | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.settings = settings or HttpSettings()
        self._endpoint = _endpoint(
            self.base_url,
            "/chat/completions",
            api_key,
            self.settings,
            "text/event-stream",
            self._explain,
        )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        model: str | None = None,
        settings: HttpSettings | None = None,
    ) -> OpenAIProvider:
        """Configured from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``LLMWIKI_MODEL`` /
        ``OPENAI_MODEL`` and ``LLMWIKI_REQUEST_TIMEOUT_MS``; ConfigError without a key
        unless ``OPENAI_BASE_URL`` names a (local) server."""
        base, key = _base_and_key(environ, "openai")
        return cls(
            model_from_env(environ, "OPENAI_MODEL", DEFAULT_MODEL, model),
            base_url=base,
            api_key=key,
            settings=settings or HttpSettings.from_env(environ, "LLMWIKI_REQUEST_TIMEOUT_MS"),
        )

    def _payload(
        self, system: str, user: str, stream: bool, max_tokens: int, schema: Schema | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(system, user),
            "stream": stream,
            # max_tokens, not max_completion_tokens: every compatible server (llama.cpp,
            # vLLM, LM Studio, Ollama's /v1) reads this one
            "max_tokens": max_tokens,
        }
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": dict(schema.schema)},
            }
        return body

    def _parse_stream(self, lines: Iterator[str]) -> Iterator[Any]:
        return _parse_stream(lines)

    def _finish(self, body: dict[str, Any]) -> str | None:
        choices = body.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        return (
            "length" if isinstance(first, dict) and first.get("finish_reason") == "length" else None
        )

    def _usage(self, body: dict[str, Any]) -> tuple[Any, Any]:
        usage = body.get("usage")
        return (
            (usage.get("prompt_tokens"), usage.get("completion_tokens"))
            if isinstance(usage, dict)
            else (None, None)
        )

    def _parse_full(self, body: Any) -> str:
        return _parse_full(body)

    def _explain(self, status: int, detail: str) -> tuple[str, str | None] | None:
        if status != 404:
            return None
        if "model" in detail.lower():
            return (
                f"model {self.model!r} not found (HTTP 404): {detail}",
                "set LLMWIKI_MODEL (or OPENAI_MODEL) to a model this server offers",
            )
        return (
            f"nothing answers at {self._endpoint.url} (HTTP 404): {detail}",
            "OPENAI_BASE_URL must include the version path, e.g. http://127.0.0.1:8080/v1",
        )


def _base_and_key(environ: Mapping[str, str], what: str) -> tuple[str, str | None]:
    """The base URL and key from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; ConfigError when
    there is neither (a key is optional for a server named by ``OPENAI_BASE_URL``)."""
    key = (environ.get(KEY_VAR) or "").strip() or None
    base = (environ.get("OPENAI_BASE_URL") or "").strip()
    if not key and not base:
        raise ConfigError(
            f"{what} needs OPENAI_API_KEY",
            hint="set OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server"
            + (", or LLMWIKI_EMBEDDING_PROVIDER=local" if "embeddings" in what else ""),
        )
    return (base or DEFAULT_BASE_URL).rstrip("/"), key


def _endpoint(
    base_url: str,
    path: str,
    api_key: str | None,
    settings: HttpSettings,
    accept: str,
    explain: Any = None,
) -> Endpoint:
    headers = {"accept": accept, "user-agent": user_agent()}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return Endpoint(
        provider=NAME,
        url=f"{base_url}{path}",
        headers=headers,
        settings=settings,
        key_var=KEY_VAR,
        unreachable=(
            "is the server at OPENAI_BASE_URL running?"
            if base_url != DEFAULT_BASE_URL
            else "check the network connection to api.openai.com"
        ),
        explain=explain,
    )


class OpenAIEmbeddings(HttpEmbeddings):
    """``{base}/embeddings`` of OpenAI or a compatible server."""

    name = NAME

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        settings: HttpSettings | None = None,
    ) -> None:
        self.model = model
        self.endpoint = _endpoint(
            base_url.rstrip("/"),
            "/embeddings",
            api_key,
            settings or HttpSettings(),
            "application/json",
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], model: str | None = None) -> OpenAIEmbeddings:
        base, key = _base_and_key(environ, "openai embeddings")
        return cls(
            model or DEFAULT_EMBEDDING_MODEL,
            base_url=base,
            api_key=key,
            settings=HttpSettings.from_env(environ, "LLMWIKI_REQUEST_TIMEOUT_MS"),
        )

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _vectors(self, body: Any) -> list[list[float]]:
        data = sorted(body["data"], key=lambda d: d.get("index", 0))
        return [d["embedding"] for d in data]


def _error_of(chunk: dict[str, Any]) -> ProviderError:
    err = chunk.get("error")
    kind = err.get("type") or err.get("code") if isinstance(err, dict) else None
    detail = error_detail(json.dumps(chunk))
    cls = RetryableStreamError if kind in _RETRYABLE_TYPES else ProviderError
    return cls(NAME, f"the server reported an error in the stream: {detail}")


def _parse_stream(lines: Iterator[str]) -> Iterator[Any]:
    finished = False
    for _event, data in sse_events(NAME, lines):
        if data.strip() == "[DONE]":
            yield STREAM_END
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise malformed(NAME, "stream chunk", data) from None
        if not isinstance(chunk, dict):
            raise malformed(NAME, "stream chunk", data)
        if chunk.get("error"):
            raise _error_of(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, dict):  # the last chunk, when the server reports usage
            yield StreamInfo(None, usage.get("prompt_tokens"), usage.get("completion_tokens"))
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise malformed(NAME, "stream chunk (no choices)", data)
        for choice in choices:
            if not isinstance(choice, dict):
                raise malformed(NAME, "stream chunk", data)
            if choice.get("index", 0) != 0:  # only one completion is asked for
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if not isinstance(delta, dict) or (
                content is not None and not isinstance(content, str)
            ):
                raise malformed(NAME, "stream chunk", data)
            if content:
                yield content
            if choice.get("finish_reason"):
                finished = True
                if choice["finish_reason"] == "length":
                    yield StreamInfo("length")
    if finished:  # some compatible servers end with finish_reason and no [DONE]
        yield STREAM_END


def _parse_full(body: Any) -> str:
    if isinstance(body, dict) and body.get("error"):
        raise _error_of(body)
    content = body["choices"][0]["message"]["content"]
    if content is None:
        return ""
    if not isinstance(content, str):
        raise TypeError("content is not text")
    return content

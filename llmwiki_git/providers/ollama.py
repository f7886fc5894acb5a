"""A local Ollama server's native chat API.

Wire format: ``POST {OLLAMA_HOST or http://127.0.0.1:11434}/api/chat`` with
``{"model", "messages", "stream": true}``; the answer arrives as newline-delimited JSON,
``{"message": {"content": ...}, "done": false}`` per piece until ``"done": true``.
``OLLAMA_HOST`` is read the way the ``ollama`` command reads it (``host``, ``host:port``
or a URL; port 11434 when none is given; ``0.0.0.0`` means this machine; a trailing
``/v1`` -- the OpenAI-compatible path -- is dropped). ``OLLAMA_API_KEY``, when set, is sent
as a bearer token (hosted Ollama). A missing model says ``ollama pull <model>``; a server
that is not running says ``ollama serve``. Model: ``LLMWIKI_MODEL`` > ``OLLAMA_MODEL`` >
``llama3.2``. Read timeout: ``OLLAMA_TIMEOUT_MS`` > ``LLMWIKI_REQUEST_TIMEOUT_MS`` > 120 s.

Embeddings: ``POST {same base}/api/embed`` with ``{"model", "input": [texts]}``; vectors
in ``embeddings``. Model: ``nomic-embed-text``. The same ``OLLAMA_HOST`` reading, key,
timeouts and error wording as chat.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ProviderError
from .base import (
    HttpEmbeddings,
    PromptedProvider,
    Schema,
    chat_messages,
    model_from_env,
    user_agent,
)
from .http import STREAM_END, Endpoint, HttpSettings, StreamInfo, malformed

NAME = "ollama"
DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_MODEL = "llama3.2"
DEFAULT_EMBEDDING_MODEL = "nomic-embed-text"
START_HINT = "start Ollama with `ollama serve` (or set OLLAMA_HOST to where it runs)"


def ollama_base_url(host: str | None) -> str:
    """The base URL for ``OLLAMA_HOST`` (see the module docstring)."""
    raw = (host or "").strip().rstrip("/")
    if not raw:
        return DEFAULT_HOST
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest = "http", raw
    hostport, _, path = rest.partition("/")
    path = "/" + path if path else ""
    if path.endswith("/v1"):
        path = path[:-3]
    has_port = bool(re.search(r":\d+$", hostport)) and not (
        hostport.startswith("[") and hostport.endswith("]")
    )
    if not has_port and not sep:  # a bare host gets Ollama's port; a URL keeps its scheme's port
        hostport = f"{hostport or '127.0.0.1'}:11434"
    hostport = re.sub(r"^0\.0\.0\.0(?=:|$)", "127.0.0.1", hostport)
    hostport = re.sub(r"^\[::\](?=:|$)", "[::1]", hostport)
    return f"{scheme}://{hostport}{path}"


def _api_key(environ: Mapping[str, str]) -> str | None:
    return (environ.get("OLLAMA_API_KEY") or "").strip() or None


def _settings(environ: Mapping[str, str]) -> HttpSettings:
    return HttpSettings.from_env(environ, "OLLAMA_TIMEOUT_MS", "LLMWIKI_REQUEST_TIMEOUT_MS")


def _endpoint(
    base_url: str, path: str, api_key: str | None, settings: HttpSettings, accept: str, explain: Any
) -> Endpoint:
    headers = {"accept": accept, "user-agent": user_agent()}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return Endpoint(
        provider=NAME,
        url=f"{base_url}{path}",
        headers=headers,
        settings=settings,
        key_var="OLLAMA_API_KEY",
        unreachable=START_HINT,
        explain=explain,
        timeout_var="OLLAMA_TIMEOUT_MS",
    )


def _missing_model(detail: str) -> bool:
    low = detail.lower()
    return "model" in low and ("not found" in low or "pull" in low)


def _explain(model: str, url: str, status: int, detail: str) -> tuple[str, str | None] | None:
    """A missing model says ``ollama pull``; a 404 elsewhere says to check OLLAMA_HOST."""
    pull = f"ollama pull {model}"
    if _missing_model(detail):
        return (
            f"model {model!r} is not available in Ollama: run `{pull}` ({detail})",
            f"run `{pull}`",
        )
    if status == 404:
        return (
            f"nothing answers at {url} (HTTP 404): {detail}",
            "is OLLAMA_HOST pointing at an Ollama server?",
        )
    return None


class OllamaEmbeddings(HttpEmbeddings):
    """Ollama's ``/api/embed`` at the base URL chat uses."""

    name = NAME

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        api_key: str | None = None,
        settings: HttpSettings | None = None,
    ) -> None:
        self.model = model
        url = f"{ollama_base_url(host)}/api/embed"
        self.endpoint = _endpoint(
            ollama_base_url(host),
            "/api/embed",
            api_key,
            settings or HttpSettings(),
            "application/json",
            lambda status, detail: _explain(model, url, status, detail),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], model: str | None = None) -> OllamaEmbeddings:
        return cls(
            model or DEFAULT_EMBEDDING_MODEL,
            host=environ.get("OLLAMA_HOST"),
            api_key=_api_key(environ),
            settings=_settings(environ),
        )

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _vectors(self, body: Any) -> list[list[float]]:
        return list(body["embeddings"])


class OllamaProvider(PromptedProvider):
    """Ollama's ``/api/chat`` over HTTP with NDJSON streaming (no SDK)."""

    name = NAME
    generative = True
    structured = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        host: str | None = None,
        api_key: str | None = None,
        settings: HttpSettings | None = None,
    ) -> None:
        self.model = model
        self.base_url = ollama_base_url(host)
        self.settings = settings or HttpSettings()
        self._endpoint = _endpoint(
            self.base_url,
            "/api/chat",
            api_key,
            self.settings,
            "application/x-ndjson",
            self._explain,
        )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        model: str | None = None,
        settings: HttpSettings | None = None,
    ) -> OllamaProvider:
        """Configured from ``OLLAMA_HOST``, ``OLLAMA_API_KEY``, ``LLMWIKI_MODEL`` /
        ``OLLAMA_MODEL`` and the timeout variables; needs no key."""
        return cls(
            model_from_env(environ, "OLLAMA_MODEL", DEFAULT_MODEL, model),
            host=environ.get("OLLAMA_HOST"),
            api_key=_api_key(environ),
            settings=settings or _settings(environ),
        )

    def _payload(
        self, system: str, user: str, stream: bool, max_tokens: int, schema: Schema | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(system, user),
            "stream": stream,
            "options": {"num_predict": max_tokens},
        }
        if schema is not None:
            body["format"] = dict(schema.schema)
        return body

    def _finish(self, body: dict[str, Any]) -> str | None:
        return "length" if body.get("done_reason") == "length" else None

    def _explain(self, status: int, detail: str) -> tuple[str, str | None] | None:
        return _explain(self.model, self._endpoint.url, status, detail)

    def _in_stream_error(self, detail: str) -> ProviderError:
        if _missing_model(detail):
            message, hint = self._explain(404, detail) or (detail, None)
            return ProviderError(NAME, message, hint=hint, status=404)
        return ProviderError(NAME, f"the server reported an error: {detail}")

    def _parse_stream(self, lines: Iterator[str]) -> Iterator[Any]:
        for line in lines:
            if not line.strip():
                continue
            try:
                chunk = json.loads(line)
            except ValueError:
                raise malformed(NAME, "stream line", line) from None
            if not isinstance(chunk, dict):
                raise malformed(NAME, "stream line", line)
            if chunk.get("error"):
                raise self._in_stream_error(str(chunk["error"]))
            message = chunk.get("message")
            if message is not None:
                content = message.get("content") if isinstance(message, dict) else None
                if not isinstance(content, (str, type(None))) or not isinstance(message, dict):
                    raise malformed(NAME, "stream line", line)
                if content:
                    yield content
            elif "done" not in chunk:
                raise malformed(NAME, "stream line (no message)", line)
            if chunk.get("done") is True:
                yield StreamInfo(
                    "length" if chunk.get("done_reason") == "length" else None,
                    chunk.get("prompt_eval_count"),
                    chunk.get("eval_count"),
                )
                yield STREAM_END
                return

    def _usage(self, body: dict[str, Any]) -> tuple[Any, Any]:
        return body.get("prompt_eval_count"), body.get("eval_count")

    def _parse_full(self, body: Any) -> str:
        if isinstance(body, dict) and body.get("error"):
            raise self._in_stream_error(str(body["error"]))
        content = body["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not text")
        return content

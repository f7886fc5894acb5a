"""One place for HTTP: timeouts, retries with backoff on 429/5xx and dropped connections,
and errors that say what to set or start."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import LlmwikiError

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class ProviderError(LlmwikiError):
    """A model provider could not be reached or refused the request."""

    def __init__(self, provider: str, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(f"{provider}: {message}", hint=hint)
        self.provider = provider
        self.status = status


def post_json(
    provider: str,
    url: str,
    payload: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    retries: int = 3,
    backoff: float = 0.5,
    start_hint: str | None = None,
    client: httpx.Client | None = None,
) -> Any:
    """POST JSON and return the decoded JSON body, retrying transient failures."""
    owned = client is None
    client = client or httpx.Client(timeout=timeout)
    try:
        for attempt in range(retries + 1):
            try:
                response = client.post(url, json=payload, headers=dict(headers or {}))
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.TimeoutException) as exc:
                if attempt < retries:
                    time.sleep(backoff * 2**attempt)
                    continue
                raise ProviderError(provider, f"cannot reach {url} ({exc.__class__.__name__})", hint=start_hint) from exc
            if response.status_code in RETRY_STATUS and attempt < retries:
                delay = response.headers.get("retry-after")
                time.sleep(min(float(delay), 10.0) if delay and delay.replace(".", "", 1).isdigit() else backoff * 2**attempt)
                continue
            if response.status_code in (401, 403):
                raise ProviderError(provider, f"authentication failed ({response.status_code})",
                                    hint="check the API key variable", status=response.status_code)
            if response.status_code == 404:
                raise ProviderError(provider, f"not found at {url} (404): {response.text[:200]}",
                                    hint="check the model name and the base URL", status=404)
            if response.status_code >= 400:
                raise ProviderError(provider, f"HTTP {response.status_code}: {response.text[:300]}",
                                    status=response.status_code)
            try:
                return response.json()
            except ValueError as exc:
                raise ProviderError(provider, f"the server sent a malformed response: {response.text[:200]!r}") from exc
        raise ProviderError(provider, "gave up after retries")  # pragma: no cover
    finally:
        if owned:
            client.close()

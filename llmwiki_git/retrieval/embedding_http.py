"""Embeddings from an OpenAI-compatible server (``/v1/embeddings``) or Ollama (``/api/embed``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..providers.http import ProviderError, post_json

DEFAULT_MODELS = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}
BATCH = 64


class HttpEmbedder:
    def __init__(self, name: str, endpoint: str, model: str, headers: Mapping[str, str], start_hint: str | None) -> None:
        self.name = name
        self.model = model
        self.endpoint = endpoint
        self._headers = dict(headers)
        self._hint = start_hint
        self.dimension = 0
        # The endpoint is hashed, not shown: base URLs can carry credentials.
        digest = hashlib.sha256(f"{name}\0{model}\0{endpoint}".encode()).hexdigest()[:16]
        self.fingerprint = f"{name}:{model}:{digest}"

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str], model: str | None) -> HttpEmbedder:
        model = model or DEFAULT_MODELS[name]
        if name == "openai":
            key = environ.get("OPENAI_API_KEY")
            base = (environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
            if not key and "OPENAI_BASE_URL" not in environ:
                raise ConfigError("openai embeddings need OPENAI_API_KEY",
                                  hint="set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server), "
                                       "or LLMWIKI_EMBEDDING_PROVIDER=local")
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            return cls(name, f"{base}/embeddings", model, headers, "is OPENAI_BASE_URL right and the server running?")
        host = (environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434").rstrip("/")
        if "://" not in host:
            host = f"http://{host}"
        return cls(name, f"{host}/api/embed", model, {}, f"start Ollama (`ollama serve`) and `ollama pull {model}`")

    def embed(self, texts: Sequence[str], batch_size: int | None = None, progress: Any = None) -> np.ndarray:
        rows: list[list[float]] = []
        size = batch_size or BATCH
        for start in range(0, len(texts), size):
            batch = list(texts[start : start + size])
            body = post_json(self.name, self.endpoint, {"model": self.model, "input": batch},
                             headers=self._headers, start_hint=self._hint)
            rows.extend(self._vectors(body, len(batch)))
            if progress is not None:
                progress(min(start + size, len(texts)), len(texts))
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1) if rows else np.zeros((0, self.dimension), np.float32)
        if out.size:
            self.dimension = out.shape[1]
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

    def _vectors(self, body: Any, count: int) -> list[list[float]]:
        try:
            if self.name == "openai":
                data = sorted(body["data"], key=lambda d: d.get("index", 0))
                vectors = [d["embedding"] for d in data]
            else:
                vectors = body["embeddings"]
        except (KeyError, TypeError) as exc:
            raise ProviderError(self.name, f"unexpected embeddings response (missing {exc})") from exc
        if len(vectors) != count:
            raise ProviderError(self.name, f"asked for {count} embeddings, got {len(vectors)}")
        return vectors

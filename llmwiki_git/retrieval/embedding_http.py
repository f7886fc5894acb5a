"""Embeddings from an HTTP provider, as an :class:`~.embedders.Embedder`.

A thin adapter: the wire formats, endpoints (``OPENAI_BASE_URL``, ``OLLAMA_HOST``), keys,
retries and error wording live in the provider modules (``providers/openai.py``,
``providers/ollama.py``) and ``providers/http.py``, shared with chat. Here: batching
into numpy, normalisation, and the store's fingerprint. Retrieval imports providers,
never the other way round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..providers.base import HttpEmbeddings

BATCH = 64


class HttpEmbedder:
    def __init__(self, api: HttpEmbeddings) -> None:
        self._api = api
        self.name = api.name
        self.model = api.model
        self.endpoint: str = api.endpoint.url
        self.dimension = 0
        # The endpoint is hashed, not shown: base URLs can carry credentials.
        digest = hashlib.sha256(f"{self.name}\0{self.model}\0{self.endpoint}".encode()).hexdigest()[
            :16
        ]
        self.fingerprint = f"{self.name}:{self.model}:{digest}"

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: Any = None
    ) -> np.ndarray:
        rows = self._api.embed_batches(list(texts), batch_size or BATCH, progress)
        out = (
            np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
            if rows
            else np.zeros((0, self.dimension), np.float32)
        )
        if out.size:
            self.dimension = out.shape[1]
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

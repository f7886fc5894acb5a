"""Choosing the embedding backend: the local model by default, or none (lexical only).

``LLMWIKI_EMBEDDING_PROVIDER`` (or ``embedding_provider`` in config) picks ``local``
(all-MiniLM-L6-v2 int8 on onnxruntime, shipped in a PyPI package), ``none`` (the fast
option: BM25 only, no vectors), ``openai`` or ``ollama`` (HTTP endpoints);
``LLMWIKI_EMBEDDING_MODEL`` names the model for the HTTP backends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import ConfigError
from ..providertable import DEFAULT_EMBEDDING, EMBEDDING_PROVIDERS, LEXICAL_ONLY, builder, row

if TYPE_CHECKING:
    import numpy as np

Progress = Callable[[int, int], Any]

PROVIDERS = EMBEDDING_PROVIDERS


class Embedder(Protocol):
    name: str
    model: str
    dimension: int
    fingerprint: str

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray: ...


def provider_name(environ: Mapping[str, str], configured: str | None, fast: bool = False) -> str:
    if fast:
        return LEXICAL_ONLY
    name = (
        (environ.get("LLMWIKI_EMBEDDING_PROVIDER") or configured or DEFAULT_EMBEDDING)
        .strip()
        .lower()
    )
    if name not in PROVIDERS:
        raise ConfigError(
            f"unknown embedding provider {name!r}",
            hint=f"set LLMWIKI_EMBEDDING_PROVIDER to one of {', '.join(PROVIDERS)}",
        )
    return name


class EmbedderBuilder(Protocol):
    """What a table row's ``embeddings`` class offers: a backend configured from the
    environment (an `Embedder`, or a provider's HTTP endpoint that `HttpEmbedder` wraps)."""

    def from_env(self, environ: Mapping[str, str], model: str | None = None) -> object: ...


def make_embedder(
    name: str, environ: Mapping[str, str], model: str | None = None
) -> Embedder | None:
    """The embedder for ``name`` (a row of the provider table); None for the lexical-only ``none``."""
    model = environ.get("LLMWIKI_EMBEDDING_MODEL") or model
    found = row(name)
    if found is None or not found.embeds:
        raise ConfigError(
            f"unknown embedding provider {name!r}",
            hint=f"set LLMWIKI_EMBEDDING_PROVIDER to one of {', '.join(PROVIDERS)}",
        )
    if found.embeddings is None:
        return None
    built = cast(EmbedderBuilder, builder(found.embeddings)).from_env(environ, model)
    from ..providers.base import HttpEmbeddings

    if isinstance(built, HttpEmbeddings):
        from .embedding_http import HttpEmbedder

        return HttpEmbedder(built)
    return cast(Embedder, built)


def preload_local(
    state: Path,
    ready: Callable[[Embedder | None], object],
    without_local: Callable[[], bool] | None = None,
) -> None:
    """Hand ``ready`` the local model as soon as it exists, then load it, when the store in
    ``state`` holds vectors or ``without_local()`` says it will be used without them (else
    ``ready(None)``, nothing loaded). Run in a thread by a
    one-shot command: onnxruntime's import and session start (~0.3 s) then overlap the rest
    of its start-up, and the first `embed` waits for the load (the embedder's own lock);
    a load that fails here fails again, and is reported, there."""
    from .store import stored_dimensions

    if not stored_dimensions(state) and not (without_local is not None and without_local()):
        ready(None)
        return
    from .embedding_onnx import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder(optimize=False)  # one question to embed: the quicker start
    ready(embedder)
    embedder.load()

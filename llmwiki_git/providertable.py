"""The provider table: every chat and embedding provider llmwiki knows, in one place.

A row names the provider, what builds it (``"module:Class"`` under ``llmwiki_git``, whose
``from_env(environ, model)`` makes it: imported only when chosen, so the check path and the
hook never load provider code), the environment variables whose presence chooses it when
nothing else does, and whether it is an embedding backend. The settings (``config.py``),
the chat registry (``providers/registry.py``), the embedding backends
(``retrieval/embedders.py``), the ``--provider`` help and the MCP ``provider`` argument all
read this table: a new provider is its module and one row here.

Import-light on purpose (``config.py`` validates settings against it in every command).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = [
    "CHAT_PROVIDERS",
    "DEFAULT_CHAT",
    "DEFAULT_EMBEDDING",
    "EMBEDDING_PROVIDERS",
    "LEXICAL_ONLY",
    "LOCAL_EMBEDDING",
    "OFFLINE_CHAT",
    "PROVIDERS",
    "ProviderRow",
    "builder",
    "row",
]


@dataclass(frozen=True)
class ProviderRow:
    """One provider. ``chat``/``embeddings``: ``"module:Class"`` of what answers / embeds
    (None: it does not); ``credentials``: set (non-blank), any of them makes it the chat
    provider chosen by default, in table order; ``embeds``: a value of
    ``embedding_provider`` (``none`` embeds nothing: lexical-only search)."""

    name: str
    chat: str | None = None
    embeddings: str | None = None
    credentials: tuple[str, ...] = ()
    embeds: bool = False


PROVIDERS: tuple[ProviderRow, ...] = (
    ProviderRow("local", embeddings="retrieval.embedding_onnx:OnnxMiniLMEmbedder", embeds=True),
    ProviderRow("none", embeds=True),  # LEXICAL_ONLY: BM25, no vectors
    ProviderRow(
        "openai",
        chat="providers.openai:OpenAIProvider",
        embeddings="providers.openai:OpenAIEmbeddings",
        credentials=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
        embeds=True,
    ),
    ProviderRow(
        "anthropic",
        chat="providers.anthropic:AnthropicProvider",
        credentials=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    ),
    ProviderRow(
        "ollama",
        chat="providers.ollama:OllamaProvider",
        embeddings="providers.ollama:OllamaEmbeddings",
        credentials=("OLLAMA_HOST",),
        embeds=True,
    ),
    ProviderRow("extractive", chat="providers.extractive:ExtractiveProvider"),
)

#: The values of ``chat_provider`` / ``--provider`` and of ``embedding_provider``, in table order.
CHAT_PROVIDERS = tuple(r.name for r in PROVIDERS if r.chat)
EMBEDDING_PROVIDERS = tuple(r.name for r in PROVIDERS if r.embeds)
#: The offline answerer (no model: what answers with no setting and no credentials), the
#: embedding backend used by default (the packaged model), and the lexical-only choice.
OFFLINE_CHAT = DEFAULT_CHAT = "extractive"
LOCAL_EMBEDDING = DEFAULT_EMBEDDING = "local"
LEXICAL_ONLY = "none"


def row(name: str) -> ProviderRow | None:
    return next((r for r in PROVIDERS if r.name == name), None)


def builder(path: str) -> object:
    """The class ``"module:Class"`` names, imported now (``module`` under ``llmwiki_git``)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)

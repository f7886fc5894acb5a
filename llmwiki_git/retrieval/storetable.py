"""The shared vector stores llmwiki knows, by the scheme of their URI: the one place that
chooses one (docs/team.md).

``LLMWIKI_VECTOR_STORE`` (or ``vector_store`` in ``.llmwiki/config.toml``) names a store
whose vectors every clone, branch and worktree shares. A row says which URIs are its own
(its scheme), what ``embeddings.json`` and ``index.json`` record as its ``vectorStore``
(its kind) and which module implements it (imported only when chosen: psycopg and sqlite3
never load for a setting that does not name them). The module defines
``open_vectors(uri, fingerprint, dimensions, *, create) -> SharedIndex`` (vectors.py) and
``display(uri) -> str``, the only way a message may name the store (never a password).
A new store is its module and one row here.

A string without a scheme is libpq's keyword/value form (``host=... dbname=...``): a
PostgreSQL store. Any other scheme is a configuration error naming the supported ones.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from .vectors import SharedIndex


@dataclass(frozen=True)
class StoreRow:
    """One store: ``kind`` recorded in the index files, ``module`` under ``llmwiki_git``
    (``open_vectors`` and ``display``), ``example`` how the docs and messages show its URI."""

    kind: str
    module: str
    example: str


_POSTGRESQL = StoreRow(
    "postgresql", "retrieval.pgvectors", "postgresql://host/db or host=... dbname=..."
)

STORES: dict[str, StoreRow] = {
    "postgresql": _POSTGRESQL,
    "postgres": _POSTGRESQL,
    "sqlite": StoreRow("sqlite", "retrieval.sqlitevectors", "sqlite:///absolute/path.db"),
}
"""URI scheme -> store. A string with no scheme (libpq's keyword/value pairs) is PostgreSQL's."""

STORE_KINDS = frozenset(row.kind for row in STORES.values())
"""What ``vectorStore`` may say in ``embeddings.json`` and a published ``index.json``."""

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_SETTING = "LLMWIKI_VECTOR_STORE (or vector_store in .llmwiki/config.toml)"


def supported() -> str:
    """The supported forms, for messages and help."""
    forms = dict.fromkeys(row.example for row in STORES.values())
    return "; ".join(forms)


def row(uri: str) -> StoreRow:
    """The store ``uri`` names. ConfigError for an unknown scheme or a string that is no
    connection string at all (the setting itself is never printed: it may hold a password)."""
    found = _SCHEME.match(uri)
    if found is not None:
        scheme = found.group(1)
        if scheme in STORES:
            return STORES[scheme]
        raise ConfigError(
            f"{_SETTING} names a {scheme[:20]!r} store, which llmwiki does not know; "
            f"supported: {supported()} (docs/team.md)"
        )
    if "=" in uri:
        return _POSTGRESQL  # libpq's keyword/value pairs
    raise ConfigError(
        f"{_SETTING} is not a vector store URI; supported: {supported()} (docs/team.md)"
    )


def kind(uri: str) -> str:
    """What an index of ``uri``'s vectors records as its ``vectorStore``."""
    return row(uri).kind


def display(uri: str) -> str:
    """How every message names the store ``uri``: never a password (host, port and database
    name of a PostgreSQL one)."""
    try:
        chosen = row(uri)
    except ConfigError:
        return "the configured vector store"
    shown: str = importlib.import_module(f"llmwiki_git.{chosen.module}").display(uri)
    return shown


def open_shared(uri: str, fingerprint: str, dimensions: int, *, create: bool) -> SharedIndex:
    """The shared vectors of one model in the store ``uri`` names (`row`). ``create``: make
    what the store needs when absent (`llmwiki index`); otherwise a store that never held
    this model holds nothing (``holds_model`` False)."""
    module = importlib.import_module(f"llmwiki_git.{row(uri).module}")
    vectors: SharedIndex = module.open_vectors(uri, fingerprint, dimensions, create=create)
    return vectors

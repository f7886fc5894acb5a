"""The shared vector store (retrieval/pgvectors.py) against the real engine: an embedded
PostgreSQL with pgvector, started by the session (conftest.pg_server)."""

from __future__ import annotations

import numpy as np
import pytest

from llmwiki_git.errors import StoreError
from llmwiki_git.retrieval import pgvectors as P
from llmwiki_git.retrieval.pagetable import PageEntry, PageTable

DIMS = 8


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def test_vectors_round_trip_keyed_by_hash_and_model(pg_uri: str) -> None:
    store = P.open_vectors(pg_uri, "model-a", DIMS, create=True)
    assert len(store) == 0 and store.generation.startswith("pg-0")
    store.add({"h1": unit(1), "h2": unit(2)})
    assert len(store) == 2 and store.generation.startswith("pg-1")
    got = store.get(["h1", "h3"])
    assert list(got) == ["h1"] and np.allclose(got["h1"], unit(1))
    assert store.known(["h1", "h2", "h3"]) == {"h1", "h2"}
    other = P.open_vectors(pg_uri, "model-b", DIMS, create=True)  # another model: another table
    assert len(other) == 0 and other.table != store.table
    again = P.open_vectors(pg_uri, "model-a", DIMS, create=False)  # another process, say
    assert again.known(["h1", "h2"]) == {"h1", "h2"}
    store.remove(["h1"])  # shared with other branches: never removed from the table
    assert again.known(["h1"]) == {"h1"}


def test_nearest_is_exact_below_the_limit_and_maps_onto_rows(pg_uri: str) -> None:
    store = P.open_vectors(pg_uri, "m", DIMS, create=True)
    vectors = {f"h{i}": unit(i) for i in range(20)}
    store.add(vectors)
    query = unit(99)
    found = store.nearest(query, 5)
    exact = sorted(vectors, key=lambda h: -float(vectors[h] @ query))[:5]
    assert set(found.hashes) == set(exact) and not found.complete
    everything = store.nearest(query, 100)
    assert everything.complete and len(everything.hashes) == 20
    rows = PageTable([PageEntry("a", "a.md", "1" * 40, "A", "", 0, ("h3", "unknown"))])
    scores = everything.over(rows)
    assert scores[0] == pytest.approx(float(vectors["h3"] @ query), abs=1e-6) and scores[1] == 0.0


def test_a_wrong_or_unreachable_database_is_a_clear_error_without_the_password(pg_uri: str) -> None:
    uri = "postgresql://team:s3cret-pw@127.0.0.1:1/wiki"
    with pytest.raises(StoreError) as caught:
        P.open_vectors(uri, "m", DIMS, create=False)
    assert caught.value.code == "vector-store-unavailable"
    assert "s3cret-pw" not in caught.value.message and "postgresql://team:***@127.0.0.1:1/wiki" in caught.value.message
    assert P.redact("host=x password=s3cret-pw dbname=y") == "host=x password=*** dbname=y"
    assert P.redact("postgresql://u@h/db?password=s3cret-pw") == "postgresql://u@h/db?password=***"
    with pytest.raises(StoreError) as nonsense:
        P.open_vectors("not a uri at all", "m", DIMS, create=False)
    assert nonsense.value.code == "vector-store-unavailable"

"""The shared vector store (retrieval/pgvectors.py) against the real engine: an embedded
PostgreSQL with pgvector, started by the session (conftest.pg_server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from llmwiki_git.errors import ConfigError, StoreError
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
    exactly = store.nearest(query, 20)  # as many as the table holds: complete, told without a count
    assert exactly.complete and len(exactly.hashes) == 20
    assert not store.nearest(query, 19).complete and len(store.nearest(query, 19).hashes) == 19
    rows = PageTable([PageEntry("a", "a.md", "1" * 40, "A", "", 0, ("h3", "unknown"))])
    scores = everything.over(rows)
    assert scores[0] == pytest.approx(float(vectors["h3"] @ query), abs=1e-6) and scores[1] == 0.0


def test_a_wrong_or_unreachable_database_is_a_clear_error_without_the_password(pg_uri: str) -> None:
    uri = "postgresql://team:s3cret-pw@127.0.0.1:1/wiki"
    with pytest.raises(StoreError) as caught:
        P.open_vectors(uri, "m", DIMS, create=False)
    assert caught.value.code == "vector-store-unavailable"
    assert (
        "s3cret-pw" not in caught.value.message
        and "team" not in caught.value.message
        and "postgresql://127.0.0.1:1/wiki is unreachable" in caught.value.message
    )
    assert P.display("host=x password=s3cret-pw dbname=y") == "postgresql://x/y"
    assert P.display("postgresql://u@h/db?password=s3cret-pw") == "postgresql://h/db"
    with pytest.raises(ConfigError) as nonsense:  # never handed to the driver as it is
        P.open_vectors("not a uri at all", "m", DIMS, create=False)
    assert "not a PostgreSQL connection string" in nonsense.value.message


WRITER = """
import sys
import numpy as np
from llmwiki_git.retrieval import pgvectors as P
uri, tag, pause = sys.argv[1], sys.argv[2], sys.argv[3] == "pause"
store = P.open_vectors(uri, "m", 8, create=False)
rng = np.random.default_rng(len(tag))
vectors = {f"{tag}{i}": v / np.linalg.norm(v) for i, v in enumerate(rng.standard_normal((500, 8)).astype(np.float32))}
def hold():
    print("inside", flush=True)
    sys.stdin.readline()
store.write(vectors, before_commit=hold if pause else None)
print("done", flush=True)
"""


def writer(uri: str, tag: str, *, pause: bool) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, uri, tag, "pause" if pause else "go"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_writer_killed_mid_update_leaves_a_usable_store(pg_uri: str) -> None:
    store = P.open_vectors(pg_uri, "m", DIMS, create=True)
    store.add({"kept": unit(1)})
    before = store.generation
    with writer(pg_uri, "lost", pause=True) as child:
        assert (
            child.stdout is not None and child.stdout.readline() == "inside\n"
        )  # rows copied, not committed
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    again = P.open_vectors(pg_uri, "m", DIMS, create=False)
    assert (
        len(again) == 1
        and again.generation == before
        and again.known(["kept", "lost0"]) == {"kept"}
    )
    again.add({"after": unit(2)})  # the killed writer's lock went with it
    assert again.known(["after"]) == {"after"}


def test_two_writers_serialize(pg_uri: str) -> None:
    P.open_vectors(pg_uri, "m", DIMS, create=True)
    with writer(pg_uri, "a", pause=True) as first:
        assert (
            first.stdout is not None and first.stdout.readline() == "inside\n"
        )  # holds the model's lock
        with writer(pg_uri, "bb", pause=False) as second:  # started only now
            serialize(pg_uri, first, second)
    store = P.open_vectors(pg_uri, "m", DIMS, create=False)
    assert len(store) == 1000 and store.generation.startswith("pg-2-")


def serialize(pg_uri: str, first: subprocess.Popen[str], second: subprocess.Popen[str]) -> None:
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        waiting = 0
        deadline = time.monotonic() + 60
        while not waiting and time.monotonic() < deadline and second.poll() is None:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND wait_event = 'advisory'"
            ).fetchone()
            waiting = row[0] if row else 0
        assert waiting == 1 and second.poll() is None  # the second writer waits for the first
    assert P.open_vectors(pg_uri, "m", DIMS, create=False).known(["bb0", "a0"]) == set()
    assert first.stdin is not None
    first.stdin.write("\n")
    first.stdin.flush()
    assert first.wait(60) == 0 and second.wait(60) == 0


def test_a_large_table_is_searched_with_a_wider_ef_search(pg_uri: str) -> None:
    """``hnsw.ef_search`` follows the table's size, read from the planner's estimate (never a
    count): 200 below `LARGE_TABLE` vectors, 400 from it (the recall measured at 1,000,000)."""
    import psycopg

    store = P.open_vectors(pg_uri, "m", DIMS, create=True)
    store.add({f"h{i}": unit(i) for i in range(30)})
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"ANALYZE {store.table}")
    assert P.open_vectors(pg_uri, "m", DIMS, create=False).ef_search() == P.EF_SEARCH == 200
    with psycopg.connect(
        pg_uri, autocommit=True
    ) as conn:  # what the statistics of a large table say
        conn.execute(
            "UPDATE pg_class SET reltuples = %s WHERE oid = %s::regclass",
            (P.LARGE_TABLE, store.table),
        )
    large = P.open_vectors(pg_uri, "m", DIMS, create=False)
    assert large.ef_search() == P.EF_SEARCH_LARGE == 400
    assert len(large.nearest(unit(99), 5).hashes) == 5  # searched with it

"""The shared vector store (retrieval/pgvectors.py) against the real engine: an embedded
PostgreSQL with pgvector, started by the session (conftest.pg_server)."""

from __future__ import annotations

import subprocess
import time

import pytest

from llmwiki_git.errors import ConfigError, StoreError
from llmwiki_git.retrieval import pgvectors as P

from .sharedstores import DIMS, unit, writer


def test_each_model_has_its_table_and_each_write_counts_in_the_generation(pg_uri: str) -> None:
    """What only PostgreSQL shows (the contract, round trip and all, is test_shared_stores.py's):
    the generation is the registry's count of writes, and each model has a table of its own."""
    store = P.open_vectors(pg_uri, "model-a", DIMS, create=True)
    assert store.generation.startswith("pg-0")
    store.add({"h1": unit(1), "h2": unit(2)})
    assert store.generation.startswith("pg-1")
    other = P.open_vectors(pg_uri, "model-b", DIMS, create=True)
    assert other.table is not None and other.table != store.table


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

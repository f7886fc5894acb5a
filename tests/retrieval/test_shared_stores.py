"""The contract every shared vector store keeps (vectors.SharedIndex, chosen by
retrieval/storetable.py), run against each real store: PostgreSQL with pgvector (the
session's embedded server, conftest.pg_server) and SQLite (a file in tmp)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.errors import ConfigError
from llmwiki_git.retrieval import storetable
from llmwiki_git.retrieval.pagetable import PageEntry, PageTable
from llmwiki_git.retrieval.vectors import SharedIndex

from ..conftest import Repo, copy_demo
from .sharedstores import DIMS, unit, writer


@pytest.fixture(params=["postgresql", "sqlite"])
def shared_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/vectors.db"
    uri: str = request.getfixturevalue("pg_uri")
    return uri


def test_vectors_round_trip_keyed_by_hash_and_model(shared_uri: str) -> None:
    store = storetable.open_shared(shared_uri, "model-a", DIMS, create=True)
    assert isinstance(store, SharedIndex) and store.kind == storetable.kind(shared_uri)
    assert len(store) == 0 and store.holds_model()
    empty = store.generation
    store.add({"h1": unit(1), "h2": unit(2)})
    assert len(store) == 2 and store.generation != empty
    got = store.get(["h1", "h3"])
    assert list(got) == ["h1"] and np.allclose(got["h1"], unit(1))
    assert store.known(["h1", "h2", "h3"]) == {"h1", "h2"}
    other = storetable.open_shared(shared_uri, "model-b", DIMS, create=True)  # another table
    assert len(other) == 0 and other.known(["h1"]) == set()
    again = storetable.open_shared(shared_uri, "model-a", DIMS, create=False)  # another process
    assert again.known(["h1", "h2"]) == {"h1", "h2"} and again.generation == store.generation
    store.remove(["h1"])  # shared with other branches: never removed
    assert again.known(["h1"]) == {"h1"} and again.problem() is None
    never = storetable.open_shared(shared_uri, "model-c", DIMS, create=False)
    assert not never.holds_model() and len(never) == 0
    assert "vectors in the shared store" in store.describe()
    for opened in (store, other, again, never):
        opened.close()


def test_nearest_is_exact_and_maps_onto_rows(shared_uri: str) -> None:
    store = storetable.open_shared(shared_uri, "m", DIMS, create=True)
    vectors = {f"h{i}": unit(i) for i in range(20)}
    store.add(vectors)
    query = unit(99)
    found = store.nearest(query, 5)
    exact = sorted(vectors, key=lambda h: -float(vectors[h] @ query))[:5]
    assert set(found.hashes) == set(exact) and not found.complete
    everything = store.nearest(query, 100)
    assert everything.complete and len(everything.hashes) == 20
    exactly = store.nearest(query, 20)
    assert exactly.complete and len(exactly.hashes) == 20
    assert not store.nearest(query, 19).complete and len(store.nearest(query, 19).hashes) == 19
    rows = PageTable([PageEntry("a", "a.md", "1" * 40, "A", "", 0, ("h3", "unknown"))])
    scores = everything.over(rows)
    assert scores[0] == pytest.approx(float(vectors["h3"] @ query), abs=1e-6) and scores[1] == 0.0
    view = store.for_rows(rows)  # what the local store saves: the same vectors
    assert view.known(["h3"]) == {"h3"}
    store.close()


def test_what_a_store_cannot_take_is_kept_in_the_overlay(shared_uri: str) -> None:
    """A store opened without ``create`` that never held the model keeps what it is given
    in memory (the overlay, saved by the local store), found by a search."""
    storetable.open_shared(shared_uri, "another model", DIMS, create=True).close()
    store = storetable.open_shared(shared_uri, "m", DIMS, create=False)
    store.add({"mine": unit(5)})
    assert store.overlay.keys() == {"mine"} and store.known(["mine"]) == {"mine"}
    assert store.nearest(unit(5), 3).hashes == ["mine"]
    store.close()


def test_a_writer_killed_mid_update_leaves_a_usable_store(shared_uri: str) -> None:
    store = storetable.open_shared(shared_uri, "m", DIMS, create=True)
    store.add({"kept": unit(1)})
    before = store.generation
    with writer(shared_uri, "lost", pause=True) as child:
        assert child.stdout is not None and child.stdout.readline() == "inside\n"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    again = storetable.open_shared(shared_uri, "m", DIMS, create=False)
    assert len(again) == 1 and again.generation == before
    assert again.known(["kept", "lost0"]) == {"kept"}
    again.add({"after": unit(2)})  # the killed writer's lock went with it
    assert again.known(["after"]) == {"after"}
    store.close()
    again.close()


def test_two_writers_serialize(shared_uri: str) -> None:
    storetable.open_shared(shared_uri, "m", DIMS, create=True).close()
    with writer(shared_uri, "a", pause=True) as first:
        assert first.stdout is not None and first.stdout.readline() == "inside\n"
        with writer(shared_uri, "bb", pause=False) as second:
            time.sleep(1.5)  # the second has started and is waiting for the first's lock
            assert second.poll() is None
            reader = storetable.open_shared(shared_uri, "m", DIMS, create=False)
            assert reader.known(["a0", "bb0"]) == set()  # neither committed yet
            reader.close()
            assert first.stdin is not None
            first.stdin.write("\n")
            first.stdin.flush()
            assert first.wait(60) == 0 and second.wait(60) == 0
    store = storetable.open_shared(shared_uri, "m", DIMS, create=False)
    assert len(store) == 1000 and store.known(["a0", "bb0"]) == {"a0", "bb0"}
    store.close()


def test_the_table_chooses_by_scheme_and_names_what_it_supports(tmp_path: Path) -> None:
    assert storetable.kind("postgresql://h/db") == storetable.kind("host=h dbname=db")
    assert storetable.kind("postgres://h/db") == "postgresql"
    assert storetable.kind(f"sqlite://{tmp_path}/v.db") == "sqlite"
    for bad in ("mysql://x@y/z", "redis://:pw@h", "just words"):
        with pytest.raises(ConfigError) as caught:
            storetable.open_shared(bad, "m", DIMS, create=True)
        assert caught.value.exit_code == 2 and "sqlite:///" in caught.value.message
        assert "x@y" not in caught.value.message and "pw" not in caught.value.message
    for relative in ("sqlite:///", "sqlite://host/v.db", "sqlite:v.db", "sqlite:///x.db?mode=ro"):
        with pytest.raises(ConfigError):
            storetable.open_shared(relative, "m", DIMS, create=True)
    assert storetable.display(f"sqlite://{tmp_path}/v.db") == f"sqlite://{tmp_path}/v.db"


def test_a_sqlite_file_shares_vectors_between_clones_through_the_cli(
    repo: Repo, tmp_path: Path
) -> None:
    """The team flow (docs/team.md) with the SQLite store: `index` fills the file, a second
    clone answers `context` from it at once, embedding nothing; the published snapshot
    records the store's kind and a fresh clone with the setting restores it."""
    copy_demo(repo.root)
    repo.commit("demo wiki")
    path = tmp_path / "shared" / "vectors.db"
    path.parent.mkdir()
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "local", "LLMWIKI_VECTOR_STORE": f"sqlite://{path}"}
    proc = repo.llmwiki("index", "--publish", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["notes"] == [
        f"vectors in the shared store sqlite://{path} ({out['chunks']} of this model, exact search)"
    ]
    assert out["published"]["shared"] and out["published"]["chunks"] == 0
    meta = json.loads(repo.git("cat-file", "blob", "refs/llmwiki/index:index.json"))
    assert meta["vectorStore"] == "sqlite"

    member = tmp_path / "member"
    repo.git("clone", "-q", str(repo.root), str(member))
    other = Repo(member)
    proc = other.llmwiki("context", "what does a blob store", "--json", env=env)
    pack = json.loads(proc.stdout)
    assert pack["warnings"] == [] and pack["primary"][0]["id"] == "concepts/blobs"
    assert "semantic-chunk" in pack["primary"][0]["reasons"]
    stored = json.loads((member / ".llmwiki" / "embeddings.json").read_text())
    assert stored["vectorStore"] == "sqlite" and stored["overlay"] == []  # nothing embedded

    fresh = tmp_path / "fresh"
    repo.git("clone", "-q", str(repo.root), str(fresh))
    restored = Repo(fresh)
    restored.git("fetch", "-q", "origin", "refs/llmwiki/index:refs/llmwiki/index")
    pack = json.loads(
        restored.llmwiki("context", "what does a blob store", "--json", env=env).stdout
    )
    assert pack["warnings"] == [] and pack["primary"][0]["id"] == "concepts/blobs"
    stored = json.loads((fresh / ".llmwiki" / "embeddings.json").read_text())
    assert stored["vectorStore"] == "sqlite"


def test_a_snapshot_of_another_kind_of_store_is_declined(repo: Repo, tmp_path: Path) -> None:
    """A snapshot published beside a SQLite store is not restored by a clone whose setting
    names PostgreSQL: declined with a warning (nothing of it written), ranked lexically."""
    copy_demo(repo.root)
    repo.commit("demo wiki")
    path = tmp_path / "vectors.db"
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "local", "LLMWIKI_VECTOR_STORE": f"sqlite://{path}"}
    assert repo.llmwiki("index", "--publish", env=env).returncode == 0
    fresh = tmp_path / "fresh"
    repo.git("clone", "-q", str(repo.root), str(fresh))
    clone = Repo(fresh)
    clone.git("fetch", "-q", "origin", "refs/llmwiki/index:refs/llmwiki/index")
    other = {**env, "LLMWIKI_VECTOR_STORE": "host=127.0.0.1 port=1 dbname=w password=S3cretPW"}
    proc = clone.llmwiki("context", "what does a blob store", "--json", env=other)
    pack = json.loads(proc.stdout)
    refused = [w["message"] for w in pack["warnings"] if w["code"] == "index-ref-refused"]
    assert refused and "in a sqlite store" in refused[0] and "names a postgresql one" in refused[0]
    assert pack["primary"][0]["id"] == "concepts/blobs" and "S3cret" not in proc.stdout
    assert not (fresh / ".llmwiki" / "embeddings.json").exists()

"""Incremental refresh (issue 15, Deliver 4): after edits, additions, deletions and renames the
index a read refreshes by difference (only the changed pages read, only their chunks
tokenized) is the index a from-scratch build writes: same store entries, same lexical arrays
bit for bit, hence the same scores. Real git repositories, both layouts; lexical-only (no
model needed)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.retrieval import indexer
from llmwiki_git.retrieval import store as store_mod
from llmwiki_git.retrieval.lexical import LexicalIndex, LexicalIndexError
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
ARRAYS = ("terms", "term_offsets", "indptr", "doc_ids", "weights", "tf", "lengths")


def arrays(lexical: LexicalIndex) -> dict[str, np.ndarray]:
    return {name: np.asarray(value) for name, value in lexical._arrays().items()}


def assert_same_index(a: LexicalIndex, b: LexicalIndex) -> None:
    """The same scores bit for bit and, once compacted (an update by difference appends a
    layer, retrieval/lexlayer.py), the same arrays."""
    for query in ("apple pear", "prune after frost", "quince jelly", "bletted medlar", ""):
        assert np.array_equal(a.scores(query), b.scores(query)), query
    a, b = a.compacted(), b.compacted()
    assert (a.n_docs, a.n_terms, a.avg_doc_len) == (b.n_docs, b.n_terms, b.avg_doc_len)
    left, right = arrays(a), arrays(b)
    assert sorted(left) == sorted(right) == sorted(ARRAYS)
    for name in ARRAYS:
        assert left[name].dtype == right[name].dtype, name
        assert np.array_equal(left[name], right[name]), name


def entries(store: store_mod.Store) -> list[tuple]:
    return [
        (
            e.page_id,
            e.path,
            e.blob,
            e.title,
            e.summary,
            e.first_row,
            tuple(e.hashes),
            tuple(e.links),
            tuple(e.dangling),
        )
        for e in store.pages
    ]


# ---------------------------------------------------------------------------- the index

WORDS = (
    "apple pear quince medlar graft prune sap winter wall 果樹園 りんご Äpfel café naïve".split()
)


def random_doc(rng: random.Random) -> list[tuple[str, float]]:
    def text(n: int) -> str:
        return " ".join(
            rng.choice(WORDS) + rng.choice(["", "s", "ing", str(rng.randint(0, 40))])
            for _ in range(n)
        )

    return [
        (text(rng.randint(0, 3)), 2.0),
        (text(rng.randint(0, 2)), 1.0),
        (text(rng.randint(0, 60)), 1.0),
    ]


@pytest.mark.parametrize("seed", range(6))
def test_updated_equals_a_build_of_the_new_documents(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    docs = [random_doc(rng) for _ in range(rng.randint(0, 40))]
    base = LexicalIndex.build(docs)
    base.save(tmp_path / "bm25")
    base = LexicalIndex.load(tmp_path / "bm25")  # memory-mapped, as a read finds it
    # Keep a random subset in order, drop the rest, insert new documents anywhere.
    layout: list = [i for i in range(len(docs)) if rng.random() < 0.7]
    for _ in range(rng.randint(0, 8)):
        layout.insert(rng.randint(0, len(layout)), random_doc(rng))
    new_docs = [docs[item] if isinstance(item, int) else item for item in layout]
    updated = base.updated(layout)
    assert_same_index(updated, LexicalIndex.build(new_docs))
    for question in ("apple pruning", "りんご", "cafe naive medlar", "nothing-here"):
        assert np.array_equal(
            updated.scores(question), LexicalIndex.build(new_docs).scores(question)
        )


def test_a_term_whose_documents_all_go_disappears_and_nothing_left_is_empty() -> None:
    base = LexicalIndex.build(["apple pear", "zanzibarite quince", "pear"])
    updated = base.updated([0, 2])
    assert updated.document_frequency("zanzibarit") == 0 and updated.term_id("zanzibarit") is None
    assert_same_index(updated, LexicalIndex.build(["apple pear", "pear"]))
    assert_same_index(base.updated([]), LexicalIndex.build([]))


def test_bad_layouts_and_indexes_without_frequencies_are_refused(tmp_path: Path) -> None:
    base = LexicalIndex.build(["apple", "pear"])
    for bad in ([0, 0], [2], [-1]):
        with pytest.raises(IndexError):
            base.updated(bad)
    # An index written before the frequencies were kept: loads, queries, cannot be updated.
    base.save(tmp_path / "bm25")
    old = tmp_path / "old"
    old.mkdir()
    import json

    meta = json.loads((tmp_path / "bm25" / "meta.json").read_text())
    for name in ("tf.npy", "lengths.npy"):
        del meta["files"][name]
    for name in meta["files"]:
        (old / name).write_bytes((tmp_path / "bm25" / name).read_bytes())
    (old / "meta.json").write_text(json.dumps(meta))
    legacy = LexicalIndex.load(old, verify=True)
    assert not legacy.updatable and legacy.top("apple", 1)[0][0] == 0
    with pytest.raises(LexicalIndexError):
        legacy.updated([0])


# ----------------------------------------------------------------------- a real wiki


def build_vault(repo: Repo, prefix: str) -> None:
    if not prefix:
        repo.write("index.md", "# My own home page\n\nStart with [[apple]].\n")
        repo.write("log.md", "# Diary\n\nNothing yet.\n")
    repo.write(
        f"{prefix}concepts/apple.md",
        page("Apple", "Apple trees are pruned in late winter. See [[pear]]."),
    )
    repo.write(
        f"{prefix}concepts/pear.md",
        page("Pear", "Pear trees want a warm wall. Not [[quince]] yet."),
    )
    repo.write(
        f"{prefix}concepts/medlar.md", page("Medlar", "A medlar is bletted before it is eaten.")
    )
    for i in range(12):
        repo.write(
            f"{prefix}notes/n{i}.md",
            page(f"Note {i}", f"Orchard note {i} on grafting and [[apple]] sap. " * (i + 1)),
        )
    repo.commit("vault")


EDITS = {
    "edit": lambda repo, p: repo.write(
        f"{p}concepts/apple.md", page("Apple", "Apple trees: prune after frost.")
    ),
    "add": lambda repo, p: repo.write(
        f"{p}concepts/quince.md",
        page("Quince", "Quince jelly, [[medlar]] too.", aliases=["Cydonia"]),
    ),
    "delete": lambda repo, p: (Path(repo.root) / f"{p}concepts/pear.md").unlink(),
    "rename": lambda repo, p: (Path(repo.root) / f"{p}notes/n3.md").rename(
        Path(repo.root) / f"{p}notes/renamed.md"
    ),
    "alias": lambda repo, p: repo.write(
        f"{p}concepts/medlar.md", page("Medlar", "Bletted.", aliases=["Quince"])
    ),
}


@pytest.mark.parametrize("prefix", ["wiki/", ""])
@pytest.mark.parametrize(
    "steps",
    [
        ("edit",),
        ("add",),
        ("delete",),
        ("rename",),
        ("alias",),
        ("edit", "add", "delete", "rename", "alias"),
    ],
)
def test_a_refresh_by_difference_equals_a_full_index(
    repo: Repo, prefix: str, steps: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMWIKI_EMBEDDING_PROVIDER", "none")
    build_vault(repo, prefix)
    assert repo.llmwiki("index", env=FAST).returncode == 0
    state = Path(repo.root) / ".llmwiki"
    before = store_mod.load(state)
    for step in steps:
        EDITS[step](repo, prefix)
        repo.commit(step)
    ws = Workspace.open(Path(repo.root))
    plan = indexer.plan_update(ws.wiki(), before)
    assert (
        plan.read == {"edit": 1, "add": 1, "delete": 0, "rename": 1, "alias": 1}[steps[0]]
        if len(steps) == 1
        else plan.read == 4
    )
    loaded = ws.retrieval().load()  # refreshes by difference and saves
    assert not loaded.warnings
    refreshed_store, refreshed_lexical = (
        store_mod.load(state),
        LexicalIndex.load(state / indexer.LEXICAL_DIR),
    )
    assert entries(loaded.store) == entries(refreshed_store)

    # From scratch, lexical-only, without regenerating the table of contents (a page).
    summary, _ = Workspace.open(Path(repo.root)).retrieval().index(fast=True, full=True, page=False)
    assert (
        summary.read == summary.pages
    )  # every page read (a plain `index` would update by difference)
    full_store, full_lexical = store_mod.load(state), LexicalIndex.load(state / indexer.LEXICAL_DIR)
    assert entries(refreshed_store) == entries(full_store)
    assert (
        refreshed_store.skipped == full_store.skipped and refreshed_store.names == full_store.names
    )
    assert_same_index(refreshed_lexical, full_lexical)
    for question in ("prune apple trees", "quince jelly", "medlar bletted", "orchard grafting sap"):
        assert np.array_equal(refreshed_lexical.scores(question), full_lexical.scores(question))


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_a_lexical_only_index_follows_many_edits_at_once(
    repo: Repo, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found measuring issue 15: a `--fast` index has nothing to embed, yet edits adding more
    new chunks than the on-the-fly embedding bound were never saved: every read rebuilt
    them in memory (2 s a call at 10,000 pages) and warned that chunks awaited embedding."""
    monkeypatch.setenv("LLMWIKI_EMBEDDING_PROVIDER", "none")
    build_vault(repo, prefix)
    assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0
    for i in range(12):
        repo.write(
            f"{prefix}notes/n{i}.md",
            page(f"Note {i}", f"Rewritten note {i} about quince cordials. " * 40),
        )
    repo.commit("many pages rewritten")
    state = Path(repo.root) / ".llmwiki"
    ws = Workspace.open(Path(repo.root))
    plan = indexer.plan_update(ws.wiki(), store_mod.load(state))
    assert plan.read == 12 and not plan.missing  # no vectors in this store: nothing to embed
    loaded = ws.retrieval().load()
    assert loaded.warnings == []
    saved = store_mod.load(state)
    assert entries(saved) == entries(loaded.store)  # saved, not kept in memory only
    assert indexer.plan_update(Workspace.open(Path(repo.root)).wiki(), saved).read == 0

"""The appended layer of the lexical index (issue 39, retrieval/lexlayer.py): an update by
difference keeps the base postings' files as they are (hard links, not rewritten), appends the
new documents' postings, and scores exactly as a fresh build of the same documents; a damaged
layer is refused, never misread; past the compaction fraction it writes a plain index."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.retrieval import lexlayer
from llmwiki_git.retrieval.lexical import LexicalIndex, LexicalIndexError

WORDS = (
    "apple quince pear frost prune graft orchard cider jelly blossom root soil spade "
    "winter summer ladder basket harvest market bee hive honey wax moth canker scab"
).split()


def doc(rng: random.Random) -> tuple[tuple[str, float], ...]:
    """A chunk as the indexer gives it: weighted fields (title, description, path, body)."""
    words = lambda n: " ".join(rng.choice(WORDS) for _ in range(n))  # noqa: E731
    return ((words(2), 2.0), (words(3), 1.0), (words(1), 1.0), (words(rng.randint(0, 40)), 1.0))


QUERIES = ["apple frost", "quince jelly jelly", "bee hive honey wax", "scab", "nothing here", ""]


def arrays(index: LexicalIndex) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in index._arrays().items()}


def assert_scores_equal(a: LexicalIndex, b: LexicalIndex) -> None:
    assert len(a) == len(b)
    for query in QUERIES:
        assert np.array_equal(a.scores(query), b.scores(query)), query  # bit for bit
        assert a.top(query, 5) == b.top(query, 5)
    for word in WORDS[:6]:
        assert a.document_frequency(word) == b.document_frequency(word)


def edit(rng: random.Random, docs: list, index: LexicalIndex, edits: int) -> tuple[list, list]:
    """Replace ``edits`` documents, drop one, add two; the new documents and the layout."""
    layout: list = list(range(len(docs)))
    new_docs = list(docs)
    for at in rng.sample(range(len(docs)), edits):
        new_docs[at] = layout[at] = doc(rng)
    gone = rng.randrange(len(new_docs))
    del new_docs[gone], layout[gone]
    for _ in range(2):
        at = rng.randrange(len(new_docs) + 1)
        fresh = doc(rng)
        new_docs.insert(at, fresh)
        layout.insert(at, fresh)
    return new_docs, layout


def test_updates_score_as_a_fresh_build_and_compact_to_its_arrays(tmp_path: Path) -> None:
    rng = random.Random(39)
    docs = [doc(rng) for _ in range(400)]
    index = LexicalIndex.build(docs)
    for step in range(5):  # five updates, each layered over the last (saved and read back)
        docs, layout = edit(rng, docs, index, 3)
        index = index.updated(layout)
        assert index.layered
        index.save(tmp_path / "bm25")
        index = LexicalIndex.load(tmp_path / "bm25", verify=True)
        assert index.layered, step
        fresh = LexicalIndex.build(docs)
        assert_scores_equal(index, fresh)
    compact = index.compacted()
    assert not compact.layered
    fresh = LexicalIndex.build(docs)
    assert (compact.n_docs, compact.avg_doc_len) == (fresh.n_docs, fresh.avg_doc_len)
    left, right = arrays(compact), arrays(fresh)
    assert left.keys() == right.keys()
    for name in left:
        assert left[name].dtype == right[name].dtype and np.array_equal(left[name], right[name])


def test_an_update_writes_only_the_layer(tmp_path: Path) -> None:
    """The base's postings are hard-linked into the new index (same inode), so an update
    writes the layer, the lengths and the metadata only."""
    rng = random.Random(7)
    docs = [doc(rng) for _ in range(2000)]
    folder = tmp_path / "bm25"
    LexicalIndex.build(docs).save(folder)
    base = {p.name: p.stat().st_ino for p in folder.iterdir()}
    docs, layout = edit(rng, docs, LexicalIndex.load(folder), 1)
    LexicalIndex.load(folder).updated(layout).save(folder)
    after = {p.name: p for p in folder.iterdir()}
    for name in ("doc_ids.npy", "tf.npy", "weights.npy", "terms.npy", "indptr.npy"):
        assert after[name].stat().st_ino == base[name], name  # the same file, not rewritten
    segment = sum(after[f"{n}.npy"].stat().st_size for n in lexlayer.LAYER_ARRAYS if n != "doc_map")
    assert segment < after["doc_ids.npy"].stat().st_size / 50
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["version"] == 2 and meta["layer"]["base_docs"] == 2000
    assert_scores_equal(LexicalIndex.load(folder, verify=True), LexicalIndex.build(docs))


def test_past_the_fraction_an_update_compacts(tmp_path: Path) -> None:
    rng = random.Random(3)
    docs = [doc(rng) for _ in range(50)]
    index = LexicalIndex.build(docs)
    docs, layout = edit(rng, docs, index, int(50 * lexlayer.COMPACT_FRACTION) + 2)
    updated = index.updated(layout)
    assert not updated.layered  # a plain index again, equal to a build
    assert_scores_equal(updated, LexicalIndex.build(docs))


@pytest.mark.parametrize(
    "damage", ["truncate segment", "flip segment ids", "drop the map", "shorter map"]
)
def test_a_damaged_layer_is_refused_not_misread(tmp_path: Path, damage: str) -> None:
    rng = random.Random(11)
    docs = [doc(rng) for _ in range(300)]
    folder = tmp_path / "bm25"
    LexicalIndex.build(docs).save(folder)
    docs, layout = edit(rng, docs, LexicalIndex.load(folder), 2)
    LexicalIndex.load(folder).updated(layout).save(folder)
    seg = folder / "seg_doc_ids.npy"
    if damage == "truncate segment":  # a crash mid-write of an appended part
        seg.write_bytes(seg.read_bytes()[:-4])
    elif damage == "flip segment ids":  # same size, ids out of range
        ids = np.load(seg)
        ids[:] = 10**6
        np.save(seg, ids)
    elif damage == "drop the map":
        (folder / "doc_map.npy").unlink()
    else:
        meta = json.loads((folder / "meta.json").read_text())
        meta["layer"]["base_docs"] = 299
        (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(LexicalIndexError):
        LexicalIndex.load(folder)


def test_a_version_1_index_is_read_and_updated(tmp_path: Path) -> None:
    """An index written before layers (version 1) is read as a plain index; its update is
    written as version 2 (a version 1 reader refuses it: it would misread the layer)."""
    rng = random.Random(5)
    docs = [doc(rng) for _ in range(100)]
    folder = tmp_path / "bm25"
    LexicalIndex.build(docs).save(folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["version"] = 1
    (folder / "meta.json").write_text(json.dumps(meta))
    old = LexicalIndex.load(folder)
    assert_scores_equal(old, LexicalIndex.build(docs))
    docs, layout = edit(rng, docs, old, 1)
    old.updated(layout).save(folder)
    assert json.loads((folder / "meta.json").read_text())["version"] == 2
    assert_scores_equal(LexicalIndex.load(folder), LexicalIndex.build(docs))


def test_a_base_replaced_since_it_was_read_is_written_not_linked(tmp_path: Path) -> None:
    """A long-lived process updates the index it read while another writer replaced the
    folder with files of the same sizes (the same documents in another order): the update
    must not link those files in as its base; it writes its own and scores as a build."""
    rng = random.Random(17)
    docs = [doc(rng) for _ in range(300)]
    folder = tmp_path / "bm25"
    LexicalIndex.build(docs).save(folder)
    held = LexicalIndex.load(folder)
    LexicalIndex.build(list(reversed(docs))).save(folder)  # another writer, same sizes
    docs, layout = edit(rng, docs, held, 2)
    held.updated(layout).save(folder)
    assert_scores_equal(LexicalIndex.load(folder, verify=True), LexicalIndex.build(docs))

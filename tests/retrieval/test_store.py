from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.retrieval import store as S
from llmwiki_git.retrieval.filevectors import FileVectors


def make(rows: int = 3, dims: int = 4) -> S.Store:
    pages = [
        S.PageEntry(
            "concepts/a",
            "wiki/concepts/a.md",
            "b" * 40,
            "A",
            "",
            0,
            tuple(f"{i:016x}" for i in range(rows)),
            ("concepts/b",),
            ("missing",),
        )
    ]
    vectors = np.arange(rows * dims, dtype=np.float32).reshape(rows, dims)
    return S.build("fp-1", "test", "m", dims, pages, vectors, "2026-11-30T00:00:00Z")


def test_round_trip_is_mmapped(tmp_path: Path) -> None:
    S.save(tmp_path, make())
    loaded = S.load(tmp_path)
    assert isinstance(loaded.vectors, FileVectors) and isinstance(loaded.vectors.matrix, np.memmap)
    assert loaded.vectors.matrix.shape == (3, 4) and loaded.vectors.matrix[2, 3] == 11.0
    assert list(loaded.pages[0].links) == ["concepts/b"] and list(loaded.pages[0].dangling) == [
        "missing"
    ]
    assert set(loaded.vectors.get(f"{i:016x}" for i in range(5))) == {f"{i:016x}" for i in range(3)}


def test_missing_truncated_foreign_and_mismatched(tmp_path: Path) -> None:
    with pytest.raises(S.StoreError) as missing:
        S.load(tmp_path)
    assert missing.value.code == "embedding-store-missing"
    S.save(tmp_path, make())
    with pytest.raises(S.StoreError) as mismatch:
        S.load(tmp_path, expected_fingerprint="other")
    assert mismatch.value.code == "embedding-model-mismatch" and "never mixed" in str(
        mismatch.value
    )
    good_bin = (tmp_path / S.BIN_NAME).read_bytes()
    (tmp_path / S.BIN_NAME).write_bytes(good_bin[:-5])
    with pytest.raises(S.StoreError, match="truncated"):
        S.load(tmp_path)
    other = tmp_path / "other"
    S.save(other, make())  # same shape, different token: a bin from another run
    (tmp_path / S.BIN_NAME).write_bytes((other / S.BIN_NAME).read_bytes())
    with pytest.raises(S.StoreError, match="does not belong"):
        S.load(tmp_path)
    (tmp_path / S.JSON_NAME).write_text("{not json")
    with pytest.raises(S.StoreError) as corrupt:
        S.load(tmp_path)
    assert corrupt.value.code == "embedding-store-corrupt"


def test_save_leaves_no_temp_files(tmp_path: Path) -> None:
    S.save(tmp_path, make())
    S.save(tmp_path, make(rows=5))
    assert sorted(p.name for p in tmp_path.iterdir()) == [S.BIN_NAME, S.JSON_NAME, S.SIDE_NAME]
    assert S.load(tmp_path).rows == 5

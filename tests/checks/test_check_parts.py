"""`checks.parts.PartedMap`: the facts' large maps, decoded part by part."""

from __future__ import annotations

import marshal

import pytest

from llmwiki_git.checks.parts import PARTS, PartedMap


def test_round_trip_and_lookups() -> None:
    values = {f"text {i}": f"{i} {i + 1}" for i in range(3000)}
    stored = PartedMap.from_dict(values).to_record()
    assert len(stored) == PARTS and all(isinstance(blob, bytes) for blob in stored)
    loaded = PartedMap.from_record(marshal.loads(marshal.dumps(stored)))
    assert loaded is not None
    assert loaded.get("text 7") == "7 8" and loaded.get("absent") == "" and "text 2999" in loaded
    assert dict(loaded.items()) == values and len(loaded) == 3000


def test_a_copy_and_its_original_never_see_each_others_writes() -> None:
    original = PartedMap.from_record(PartedMap.from_dict({"a": "1", "b": "2"}).to_record())
    assert original is not None
    assert original.get("a") == "1"  # a decoded part, then shared by the copy
    twin = original.copy()
    twin["a"] = "changed"
    original["b"] = "also changed"
    twin["new"] = "x"
    assert (original.get("a"), original.get("b"), original.get("new")) == ("1", "also changed", "")
    assert (twin.get("a"), twin.get("b"), twin.get("new")) == ("changed", "2", "x")
    again = PartedMap.from_record(twin.to_record())
    assert again is not None and dict(again.items()) == {"a": "changed", "b": "2", "new": "x"}


@pytest.mark.parametrize(
    "record", [None, (), (b"",) * (PARTS - 1), ("not bytes",) * PARTS, {"a": "1"}]
)
def test_other_shapes_are_not_read(record: object) -> None:
    assert PartedMap.from_record(record) is None


def test_a_damaged_part_says_so_when_read() -> None:
    stored = list(PartedMap.from_dict({f"k{i}": "v" for i in range(2000)}).to_record())
    damaged = PartedMap.from_record(tuple(blob[:-2] if blob else blob for blob in stored))
    assert damaged is not None
    with pytest.raises(ValueError):
        damaged.get("k1")
    wrong_type = PartedMap.from_record(tuple(marshal.dumps(["a list"]) for _ in stored))
    assert wrong_type is not None
    with pytest.raises(ValueError):
        wrong_type.get("k1")

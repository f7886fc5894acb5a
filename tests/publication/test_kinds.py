"""The candidate-kind table (publication/kinds.py) and the trailer schema (publication/trailers.py):
every function a row names exists, every kind is documented, nothing outside the table
dispatches on a kind's name, and every trailer key round-trips through the schema."""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace

import pytest

from llmwiki_git.publication import kinds
from llmwiki_git.publication.trailers import (
    SCHEMA,
    FileTrailer,
    Recorded,
    Trailers,
    parse,
    with_files,
)

from ..conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "llmwiki_git"
#: The names the table exports for the code that stages each kind.
KIND_NAMES = {
    "KIND",
    "PAGE_KIND",
    "COMPILE_KIND",
    "MOVE_KIND",
    "MERGE_KIND",
    "RETRACT_KIND",
    "MULTI_KINDS",
    "REWRITE_KINDS",
    "KINDS",
}


@pytest.mark.parametrize("row", kinds.KIND_ROWS, ids=lambda r: r.name)
def test_every_function_a_row_names_exists(row: kinds.KindRow) -> None:
    for path in (row.stager, row.check, row.planner):
        if path:
            assert callable(kinds.call(path)), path
    assert row.policy in (kinds.ANSWER, kinds.PAGE, kinds.FILES)
    assert row.status in (kinds.CITATIONS, kinds.LINKS)
    assert not row.rewrites_links or (row.planner and row.subject and row.summary), row
    assert row.retracts <= row.files and row.rewrites_links <= row.files


def test_every_kind_is_documented_with_its_promise() -> None:
    review = (REPO_ROOT / "docs" / "review.md").read_text(encoding="utf-8")
    formats = (REPO_ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    for row in kinds.KIND_ROWS:
        assert f"`{row.name}`" in review, f"docs/review.md does not describe {row.name}"
        assert f"`{row.name}`" in formats, f"docs/formats.md does not describe {row.name}"
    for key in SCHEMA:
        assert f"`{key.key}`" in formats, f"docs/formats.md does not list the key {key.key}"


def _dispatches(tree: ast.AST) -> list[int]:
    """Lines comparing something with a kind's name (a constant of the table, or a string
    that is a kind): ``t.kind == MOVE_KIND``, ``kind in MULTI_KINDS``, ``== "merge/1"``."""

    def named(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in KIND_NAMES
        if isinstance(node, ast.Attribute):  # kinds.MOVE_KIND, not notes.KIND ("source-note")
            module = node.value.id if isinstance(node.value, ast.Name) else ""
            return node.attr in KIND_NAMES and module in ("kinds", "trailers")
        return isinstance(node, ast.Constant) and node.value in kinds.KINDS

    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and any(map(named, [node.left, *node.comparators]))
    ]


def test_no_module_dispatches_on_a_kind_name() -> None:
    """What differs between kinds is a field of their row: a comparison with a kind's name
    anywhere else (29 sites in 7 modules before the table) fails here."""
    found = [
        f"{path.relative_to(PACKAGE).as_posix()}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "kinds.py" or path.parent.name != "publication"
        for line in _dispatches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_the_dispatch_scan_finds_a_dispatch() -> None:
    """The scan above is not vacuous: it sees each form the old code used."""
    code = inspect.cleandoc(
        """
        if t.kind == MOVE_KIND: pass
        if kind in kinds.MULTI_KINDS: pass
        if plan.get("kind") == "merge/1": pass
        """
    )
    assert _dispatches(ast.parse(code)) == [1, 2, 3]


def test_every_schema_key_round_trips() -> None:
    """A block with every key (a retraction carries no move, a move no retracted source):
    parse(block) is the trailers back, and each key is written in schema order."""
    files = [
        FileTrailer("wiki/a.md", "absent", "sha256:01"),
        FileTrailer("b c.md", "absent", "absent"),
    ]
    recorded = Recorded(
        (("sources/x.md", "0" * 40), ("sources/y z.md", "1" * 40)), "openai/m", "p/1"
    )
    for kind, extra in (
        (kinds.RETRACT_KIND, {"retracts": "sources/x.md"}),
        (kinds.MOVE_KIND, {"move_from": "a.md", "move_to": "b.md"}),
    ):
        t = with_files("c-0123abcd", kind, files, "c0ffee", replace(recorded, **extra))
        found: dict[str, list[str]] = {}
        order = []
        for line in t.block().splitlines():
            key, _, value = line.partition(": ")
            found.setdefault(key, []).append(value)
            order.append(key)
        assert parse(found) == t
        ranks = {k.key: i for i, k in enumerate(SCHEMA)}
        file_group = [k.key for k in SCHEMA if k.count == "per-file"]
        flat = [k for k in order if k not in file_group]
        assert flat == sorted(flat, key=ranks.__getitem__)
        # a key the kind does not carry is refused, as is a missing one it does
        other = {**found, "Llmwiki-Retracts": ["sources/x.md"], "Llmwiki-Move-From": ["a.md"]}
        assert parse(other) is None
    assert isinstance(parse(found), Trailers)
    assert parse({**found, "Llmwiki-Move-To": []}) is None
    assert parse({**found, "Llmwiki-Model": ["a", "b"]}) is None
    assert parse({**found, "Llmwiki-Kind": ["page/1", "page/1"]}) is None


def test_docs_name_only_kinds_that_exist() -> None:
    """A kind the docs name (``kind `x/1```, ``Llmwiki-Kind: x/1``, a row of the kind tables)
    is a row of the table: a renamed or removed kind cannot linger in the docs."""
    import re

    form = re.compile(r"kind `([a-z-]+/\d+)`|Llmwiki-Kind: ([a-z-]+/\d+)|^\| `([a-z-]+/\d+)` \|")
    named = {
        f"{path.name}: {hit}"
        for path in sorted((REPO_ROOT / "docs").glob("*.md"))
        for line in path.read_text(encoding="utf-8").splitlines()
        for match in form.finditer(line)
        for hit in match.groups()
        if hit
    }
    assert len(named) >= len(kinds.KINDS)  # the scan sees the docs' kinds
    assert sorted(n for n in named if n.split(": ")[1] not in kinds.KINDS) == []


def test_the_mcp_review_list_names_every_kind() -> None:
    from llmwiki_git.mcptools.status import REVIEW_LIST

    for row in kinds.KIND_ROWS:
        assert row.name in REVIEW_LIST.description

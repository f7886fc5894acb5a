"""The page-table sidecar ``.llmwiki/embeddings.pages`` (issue 15: a fresh `context` reads
10,000 pages in milliseconds). It is a derived copy of ``embeddings.json``: used only while it
was written with exactly that json and is intact; otherwise the json is read (and checked
entry by entry, as before) and the sidecar rewritten. Real git repositories, both layouts,
the real CLI; the lexical-only index (``LLMWIKI_EMBEDDING_PROVIDER=none``) needs no model.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmwiki_git.retrieval import store as S

from ..conftest import Repo, page
from .test_follow_wiki import FAST, LAYOUTS


@pytest.fixture(params=sorted(LAYOUTS))
def indexed(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    build, prefix = LAYOUTS[request.param]
    build(repo)
    result = repo.llmwiki("index", "--fast", env=FAST)
    assert result.returncode == 0, result.stderr
    return repo, prefix


def state(repo: Repo) -> Path:
    return repo.root / ".llmwiki"


def entries(store: S.Store) -> list[tuple]:
    return [tuple(e[:6]) + tuple(tuple(x) for x in e[6:]) for e in store.pages]


def from_json(folder: Path) -> list[tuple]:
    """The page table as the json says (the sidecar is not consulted)."""
    meta = json.loads((folder / S.JSON_NAME).read_bytes())
    return [
        (
            p["pageId"],
            p["path"],
            p["blob"],
            p["title"],
            p["summary"],
            p["firstRow"],
            tuple(p["hashes"]),
            tuple(p["links"]),
            tuple(p["dangling"]),
        )
        for p in meta["pages"]
    ]


def context(repo: Repo, question: str) -> dict:
    result = repo.llmwiki_process("context", question, "--json", env=FAST)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_index_writes_a_sidecar_that_matches_the_json(indexed: tuple[Repo, str]) -> None:
    repo, _ = indexed
    folder = state(repo)
    assert (folder / S.SIDE_NAME).is_file()
    assert S._read_sidecar(folder) is not None  # fresh: it is used
    store = S.load(folder)
    assert entries(store) == from_json(folder)
    assert store.path_blobs() == {e[1]: e[2] for e in from_json(folder)}
    owner = store.row_owner()
    assert [store.pages[owner[row]].page_id for row in range(store.rows)] == [
        e[0] for e in from_json(folder) for _ in e[6]
    ]
    targets = {t for e in from_json(folder) for t in (e[0], *e[7])}
    from_entries = S.PageTable([S.PageEntry(*e) for e in from_json(folder)])
    assert store.pages.linking_to(targets) == from_entries.linking_to(
        targets
    )  # links searched in place
    assert any(store.pages.linking_to(targets).values()) == any(e[7] for e in from_json(folder))
    one_by_one = S.load(folder).pages  # entries made page by page equal entries made all at once
    assert [one_by_one[i] for i in range(len(one_by_one))] == list(S.load(folder).pages)


def _rewrite_sidecar(folder: Path, change: object) -> None:
    """Re-pack the sidecar after ``change(head, sections)`` with valid digests: a forged file."""
    data = (folder / S.SIDE_NAME).read_bytes()
    _, stamp, _, head_size = S.SIDE_HEADER.unpack_from(data)
    body = data[S.SIDE_HEADER.size :]
    head = json.loads(body[:head_size])
    sections, offset = {}, head_size
    for name, size in head["sections"]:
        sections[name] = body[offset : offset + size]
        offset += size
    change(head, sections)  # type: ignore[operator]
    head["sections"] = [[name, len(sections[name])] for name, _ in head["sections"]]
    head_bytes = json.dumps(head).encode()
    new_body = head_bytes + b"".join(sections[name] for name, _ in head["sections"])
    (folder / S.SIDE_NAME).write_bytes(
        S.SIDE_HEADER.pack(S.SIDE_MAGIC, stamp, hashlib.sha256(new_body).digest(), len(head_bytes))
        + new_body
    )


@pytest.mark.parametrize(
    "damage",
    [
        "flipped-byte",
        "truncated",
        "garbage",
        "empty",
        "folder",
        "forged-counts",
        "forged-offsets",
        "forged-paths",
        "forged-backlinks",
    ],
)
def test_a_damaged_sidecar_is_not_used_and_is_rewritten(
    indexed: tuple[Repo, str], damage: str
) -> None:
    repo, _ = indexed
    folder = state(repo)
    side = folder / S.SIDE_NAME
    good = side.read_bytes()
    expected = from_json(folder)
    before = context(repo, "pruning apple trees")
    if damage == "flipped-byte":
        data = bytearray(good)
        data[-10] ^= 0x01
        side.write_bytes(bytes(data))
    elif damage == "truncated":
        side.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        side.write_bytes(b"LLMWPGS1" + b"\x00" * 200)
    elif damage == "empty":
        side.write_bytes(b"")
    elif damage == "folder":
        side.unlink()
        side.mkdir()
    else:  # digests recomputed over columns that do not fit together

        def forge(head: dict, sections: dict) -> None:
            if damage == "forged-counts":  # one title offset too few
                sections["titlesEnds"] = sections["titlesEnds"][:-8]
            elif damage == "forged-offsets":  # offsets past the end of the text
                ends = bytearray(sections["linksEnds"])
                ends[-8:] = (int.from_bytes(ends[-8:], "little") + 5).to_bytes(8, "little")
                sections["linksEnds"] = bytes(ends)
            elif damage == "forged-backlinks":  # a link from a page that does not exist
                sections["linkSources"] = (10**6).to_bytes(8, "little") + sections["linkSources"][
                    8:
                ]
            else:  # one path too few
                sections["paths"] = sections["paths"].rsplit(b"\0", 1)[0]

        _rewrite_sidecar(folder, forge)
    assert S._read_sidecar(folder) is None
    assert entries(S.load(folder)) == expected  # read from the json instead
    assert S._read_sidecar(folder) is not None  # rewritten
    assert side.read_bytes() == good
    if damage == "folder":  # moved aside, as for the store's other files, not deleted
        assert any(
            p.name.startswith(f"{S.SIDE_NAME}.bad-") and p.is_dir() for p in folder.iterdir()
        )
    assert context(repo, "pruning apple trees") == before


def test_a_hand_edited_json_wins_over_its_sidecar(indexed: tuple[Repo, str]) -> None:
    repo, _ = indexed
    folder = state(repo)
    path = folder / S.JSON_NAME
    before = path.stat()
    text = path.read_text()
    title = json.loads(text)["pages"][0]["title"]
    edited = text.replace(f'"title":"{title}"', f'"title":"{title[::-1]}"', 1)  # same size
    assert len(edited) == len(text) and edited != text
    with open(path, "r+", encoding="utf-8") as handle:  # in place: same inode
        handle.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old modification time
    store = S.load(folder)
    assert (
        store.pages[0].title == title[::-1]
    )  # the change time gave it away: the sidecar was not used
    assert S._read_sidecar(folder) is not None  # and now matches again
    meta = json.loads(path.read_bytes())
    meta["pages"][0]["title"] = "Edited by hand"
    (folder / S.JSON_NAME).write_text(json.dumps(meta))
    store = S.load(folder)
    assert store.pages[0].title == "Edited by hand"  # the stale sidecar was not used
    assert S._read_sidecar(folder) is not None  # and now matches again
    meta["pages"][0]["firstRow"] = (
        "zero"  # a hand edit that breaks the store: the json's checks still apply
    )
    (folder / S.JSON_NAME).write_text(json.dumps(meta))
    with pytest.raises(S.StoreError) as corrupt:
        S.load(folder)
    assert corrupt.value.code == "embedding-store-corrupt"
    result = repo.llmwiki_process("context", "pruning apple trees", "--json", env=FAST)
    assert result.returncode == 0, result.stderr  # ranked from the live pages, with a warning
    assert "embedding-store-corrupt" in result.stdout and "llmwiki index" in result.stdout
    assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0  # the rebuild path
    assert entries(S.load(folder)) == from_json(folder)
    assert S._read_sidecar(folder) is not None


def test_a_store_from_before_the_sidecar_is_read_and_upgraded(indexed: tuple[Repo, str]) -> None:
    repo, _ = indexed
    folder = state(repo)
    before = context(repo, "pruning apple trees")
    (folder / S.SIDE_NAME).unlink()  # what an older version wrote: the json and the bin only
    assert context(repo, "pruning apple trees") == before
    assert S._read_sidecar(folder) is not None


def test_a_sidecar_of_another_write_is_not_used(indexed: tuple[Repo, str]) -> None:
    """A reader that finds the json of one write beside the sidecar of another (a writer
    between the two renames, or files copied from elsewhere) reads the json."""
    repo, prefix = indexed
    folder = state(repo)
    old_side = (folder / S.SIDE_NAME).read_bytes()
    repo.write(f"{prefix}trees/quince.md", page("Quince", "Quinces are bletted like medlars."))
    repo.commit("a new page")
    assert "quince" in json.dumps(
        context(repo, "bletted quinces")
    )  # refreshed and saved by the read
    (folder / S.SIDE_NAME).write_bytes(old_side)
    store = S.load(folder)
    assert any(e.path.endswith("trees/quince.md") for e in store.pages)
    assert entries(store) == from_json(folder)


def test_any_text_round_trips_and_a_nul_in_a_path_means_no_sidecar(tmp_path: Path) -> None:
    import numpy as np

    odd = "odd\0title é \U0001f600"  # a NUL, accents, an emoji
    pages = [
        S.PageEntry("a", "a.md", "b" * 40, odd, odd, 0, ("0" * 16,), ("", odd), (odd,)),
        S.PageEntry("b", "b.md", "c" * 40, "", "", 1, (), (), ()),
    ]
    S.save(
        tmp_path, S.build("none", "none", "none", 0, pages, np.zeros((1, 0), dtype=np.float32), "")
    )
    assert S._read_sidecar(tmp_path) is not None
    store = S.load(tmp_path)
    assert entries(store) == [
        ("a", "a.md", "b" * 40, odd, odd, 0, ("0" * 16,), ("", odd), (odd,)),
        ("b", "b.md", "c" * 40, "", "", 1, (), (), ()),
    ]
    assert store.linked_from({odd, ""}) == {odd: ["a"], "": []}
    pages[1] = pages[1]._replace(
        path="b\0.md"
    )  # never from git, but the store must not mis-split it
    S.save(
        tmp_path, S.build("none", "none", "none", 0, pages, np.zeros((1, 0), dtype=np.float32), "")
    )
    assert not (tmp_path / S.SIDE_NAME).exists()
    assert S.load(tmp_path).pages[1].path == "b\0.md"


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import numpy as np
    from llmwiki_git.retrieval import store as S

    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    for i in range(rounds):
        v = i % 2
        pages = [S.PageEntry(f"p{n}", f"p{n}.md", f"{v}" * 40, f"title {v}", "", 2 * n,
                             (f"{v}{n:015x}", f"{v}{n:014x}x"), (f"p{(n + 1) % 50}",), ())
                 for n in range(50)]
        S.save(folder, S.build("none", "none", "none", 0, pages, np.zeros((100, 0), dtype=np.float32), ""))
""")


def test_reads_during_a_concurrent_writer_never_mix_two_writes(tmp_path: Path) -> None:
    """Another process saves two alternating stores over and over; every load in between is
    one of them whole (its paths, blobs, titles and hashes agree), never a mix."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    folder = tmp_path / "state"
    subprocess.run([sys.executable, str(script), str(folder), "1"], check=True)
    writer = subprocess.Popen([sys.executable, str(script), str(folder), "400"])
    seen: set[str] = set()
    try:
        while writer.poll() is None:
            try:
                store = S.load(folder)
            except S.StoreError as exc:  # only ever "between two renames": never a wrong answer
                assert exc.code == "embedding-store-corrupt", exc
                continue
            version = store.pages[0].blob[0]
            assert set(store.path_blobs().values()) == {version * 40}
            assert {e.title for e in store.pages} == {f"title {version}"}
            assert all(h[0] == version for e in store.pages for h in e.hashes)
            assert store.linked_from({"p1"}) == {"p1": ["p0"]}
            seen.add(version)
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert seen  # at least one load landed while the writer ran

"""`llmwiki compile`, offline (no provider configured): a deterministic source note per
changed source, all on ONE compile/1 candidate; incremental by source blob; provenance in
the page and in the trailers. Both layouts."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
USER_INDEX = "# My vault\n\nMy own home page. See [[alpha]].\n"
USER_LOG = "# My journal\n"

PAPER = """# Merkle trees in practice

A Merkle tree hashes every leaf and then every pair of hashes, so one root hash commits to all the data.
Git stores its history this way.

## Details

- Each Blob holds the bytes of one file, and its id is the hash of those bytes.
- A tree lists blobs and other trees by name, with their modes.

Alpha readers will notice that changing one byte changes every hash up to the root of the tree.
```
code that must never be quoted
```
"""
OTHER = "Notes on the Beta protocol: it sends messages in rounds and waits for a quorum before it commits anything.\n"


@pytest.fixture(params=["wiki", "root"])
def wiki(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    repo.write(f"{prefix}concepts/blob.md", page("Blob", "A blob holds bytes.", aliases="[Blobs]"))
    if not prefix:
        repo.write("index.md", USER_INDEX)
        repo.write("log.md", USER_LOG)
    repo.write("inbox/merkle.md", PAPER)
    repo.write("inbox/beta.txt", OTHER)
    repo.commit("wiki and inbox")
    assert run(repo, "ingest", "inbox/merkle.md", "inbox/beta.txt").returncode == 0
    repo.git(
        "rm", "-q", "-r", "inbox"
    )  # ingested: the originals go (in a vault they would be pages)
    repo.commit("inbox emptied")
    return repo, prefix


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def compile_json(repo: Repo, *args: str) -> dict[str, object]:
    proc = run(repo, "compile", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert isinstance(out, dict)
    return out


def branches(repo: Repo) -> list[str]:
    return repo.git("branch", "--list", "llmwiki/review/*", "--format=%(refname:short)").split()


def meta_of(text: str) -> dict[str, object]:
    loaded = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(loaded, dict)
    return loaded


def test_offline_compile_stages_one_run_of_source_notes_and_approves_it(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    base = repo.git("rev-parse", "HEAD").strip()
    proc = run(repo, "compile")
    assert proc.returncode == 0, proc.stderr
    cid = re.search(r"Staged (compile-[0-9a-f]{8}): 2 pages from 2 sources", proc.stdout)
    assert cid, proc.stdout
    candidate = cid.group(1)
    assert branches(repo) == [f"llmwiki/review/{candidate}"]
    assert repo.git("rev-parse", "HEAD").strip() == base and repo.git("status", "--porcelain") == ""

    note_path = f"{prefix}concepts/merkle.md"
    note = repo.git("show", f"llmwiki/review/{candidate}:{note_path}")
    meta = meta_of(note)
    blob = repo.git("rev-parse", f"{base}:sources/merkle.md").strip()
    assert meta["title"] == "Merkle trees in practice" and meta["kind"] == "source-note"
    assert meta["sources"] == ["sources/merkle.md"] and meta["sourceBlobs"] == {
        "sources/merkle.md": blob
    }
    assert str(meta["summary"]).startswith("A Merkle tree hashes every leaf")
    assert "code that must never be quoted" not in note
    assert (
        "[[alpha]]" in note and "[[blob]]" in note
    )  # the pages the source mentions (a title, an alias)
    source_lines = (repo.root / "sources/merkle.md").read_text().splitlines()
    cited = re.findall(r"^(?:- )?(.+?) \^\[merkle\.md:(\d+)-(\d+)\]$", note, re.MULTILINE)
    assert len(cited) >= 3
    for quoted, start, end in cited:  # every citation points at the lines the quote comes from
        window = " ".join(
            line.lstrip("- ").strip() for line in source_lines[int(start) - 1 : int(end)]
        )
        assert quoted.split(". ")[0].rstrip(".") in window, (quoted, start, end)

    trailers = repo.git(
        "log", "-1", "--format=%(trailers:only,unfold)", f"llmwiki/review/{candidate}"
    ).splitlines()
    assert f"Llmwiki-Source: sources/merkle.md {blob}" in trailers
    assert (
        "Llmwiki-Model: offline/source-notes" in trailers
        and "Llmwiki-Prompt: source-note/1" in trailers
    )
    assert "Llmwiki-Kind: compile/1" in trailers

    check = run(
        repo, "check", "--base", "main", "--head", f"llmwiki/review/{candidate}"
    )  # the gate accepts the run
    assert check.returncode == 0, check.stdout + check.stderr
    done = run(repo, "review", "approve", candidate)
    assert done.returncode == 0, done.stderr
    assert (repo.root / note_path).read_text() == note
    assert run(repo, "check").returncode == 0
    if prefix:
        assert "[[merkle|Merkle trees in practice]]" in (repo.root / "wiki/index.md").read_text()
    else:
        assert (repo.root / "index.md").read_text() == USER_INDEX
        assert (repo.root / "log.md").read_text() == USER_LOG


def test_a_rerun_with_nothing_changed_makes_no_branch_and_one_change_recompiles_only_its_pages(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    first = compile_json(repo, "--publish")
    assert first["approved"] and len(first["pages"]) == 2  # type: ignore[arg-type]
    head = repo.git("rev-parse", "HEAD").strip()
    again = run(repo, "compile")
    assert again.returncode == 0 and again.stdout.startswith(
        "Nothing to compile: 2 sources up to date"
    ), again.stdout
    assert branches(repo) == [] and repo.git("rev-parse", "HEAD").strip() == head

    repo.write(
        "inbox/beta.txt",
        OTHER + "\nA second paragraph: the Beta protocol also retries lost messages.\n",
    )
    assert run(repo, "ingest", "inbox/beta.txt").returncode == 0
    (repo.root / "inbox/beta.txt").unlink()
    rerun = compile_json(repo)
    assert rerun["compiled"] == ["sources/beta.md"] and rerun["upToDate"] == ["sources/merkle.md"]
    pages = [{k: p[k] for k in ("target", "sources", "change")} for p in rerun["pages"]]
    assert pages == [
        {"target": f"{prefix}concepts/beta.md", "sources": ["sources/beta.md"], "change": "replace"}
    ]
    candidate = rerun["candidate"]
    assert isinstance(candidate, dict) and [p["target"] for p in candidate["pages"]] == [
        f"{prefix}concepts/beta.md"
    ]

    # while that run is open, another compile finds the source staged already
    staged = run(repo, "compile")
    assert staged.stdout.startswith("Nothing to compile") and candidate["id"] in staged.stderr
    assert len(branches(repo)) == 1


def test_the_same_source_gives_the_same_note(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    first = compile_json(repo)
    first_commit = first["candidate"]["commit"]  # type: ignore[index]
    assert run(repo, "review", "reject", first["candidate"]["id"]).returncode == 0  # type: ignore[index]
    second = compile_json(repo)
    second_commit = second["candidate"]["commit"]  # type: ignore[index]
    assert repo.git("rev-parse", f"{first_commit}^{{tree}}") == repo.git(
        "rev-parse", f"{second_commit}^{{tree}}"
    )


def test_a_note_never_takes_the_name_of_an_existing_page(repo: Repo) -> None:
    repo.write(
        "wiki/guides/merkle.md", page("Merkle", "A hand-written page that [[merkle]] links reach.")
    )
    repo.write("wiki/concepts/alpha.md", page("Alpha", "See [[merkle]]."))
    repo.write("inbox/merkle.md", PAPER)
    repo.commit("wiki")
    assert run(repo, "ingest", "inbox/merkle.md").returncode == 0
    out = compile_json(repo, "--publish")
    assert [p["target"] for p in out["pages"]] == ["wiki/concepts/merkle-2.md"]  # type: ignore[index]
    links = json.loads(run(repo, "links", "--json", "wiki/concepts/alpha.md").stdout)["citations"]
    assert links == [{"target": "merkle", "status": "resolved", "pageId": "guides/merkle"}]


def test_nothing_to_compile_without_committed_sources(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    repo.write("sources/draft.markdown", "# Draft\n\nNot committed yet.\n")
    proc = run(repo, "compile")
    assert proc.returncode == 0 and proc.stdout.startswith("Nothing to compile: 0 sources"), (
        proc.stdout
    )
    assert "1 uncommitted change(s) in sources/ are not compiled" in proc.stderr
    assert branches(repo) == []
    repo.commit("the draft")
    staged = compile_json(repo)  # a .markdown source is named after its file, without the extension
    assert [p["target"] for p in staged["pages"]] == ["wiki/concepts/draft.md"]  # type: ignore[index]

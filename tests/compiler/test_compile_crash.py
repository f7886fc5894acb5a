"""kill -9 during `llmwiki compile` and during the approval of a compile candidate, and two
compiles racing: real processes (LLMWIKI_TEST_KILL_AT makes one SIGKILL itself at a named
point), then the next real command must leave either the old state or the complete new one:
refs consistent, `git fsck` clean, `git status` clean, every page of the run or none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
SOURCES = {
    "sources/merkle.md": "# Merkle trees\n\nA Merkle tree hashes every leaf, then every pair of hashes, up to one root.\n",
    "sources/raft.md": "# Raft\n\nRaft elects a leader that replicates the log; followers that hear nothing vote.\n",
    "sources/blobs.md": "# Blobs\n\nA blob holds the bytes of one file; its id is the hash of those bytes. See Alpha.\n",
}


@pytest.fixture
def wiki(repo: Repo) -> Repo:
    repo.write(".gitignore", ".llmwiki/\n")
    repo.write("wiki/concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    for path, text in SOURCES.items():
        repo.write(path, text)
    repo.commit("wiki and sources")
    return repo


def cli(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST, **(env or {})},
    )


def candidates(repo: Repo) -> list[str]:
    return repo.git("branch", "--list", "llmwiki/review/*", "--format=%(refname:short)").split()


def assert_sound(repo: Repo) -> None:
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=repo.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0 and all(
        line.startswith("dangling ") for line in fsck.stdout.splitlines()
    ), fsck.stdout
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not list(repo.root.rglob(".llmwiki-*.tmp"))
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()


def test_killed_while_staging_a_run_leaves_nothing_and_the_next_run_stages_it(wiki: Repo) -> None:
    head = wiki.git("rev-parse", "HEAD").strip()
    killed = cli(wiki.root, "compile", env={"LLMWIKI_TEST_KILL_AT": "stage"})
    assert killed.returncode == -9, killed.stderr
    assert candidates(wiki) == [] and wiki.git("rev-parse", "HEAD").strip() == head
    assert_sound(wiki)
    again = cli(wiki.root, "compile", "--json")  # the dead writer's lock is reclaimed
    assert again.returncode == 0, again.stderr
    assert len(json.loads(again.stdout)["pages"]) == 3 and len(candidates(wiki)) == 1


@pytest.mark.parametrize("point", ["journal", "ref", "file:3", "index"])
def test_killed_while_approving_a_run_leaves_all_of_it_or_none(wiki: Repo, point: str) -> None:
    staged = cli(wiki.root, "compile", "--json")
    assert staged.returncode == 0, staged.stderr
    run = json.loads(staged.stdout)["candidate"]
    head = wiki.git("rev-parse", "HEAD").strip()
    killed = cli(wiki.root, "review", "approve", run["id"], env={"LLMWIKI_TEST_KILL_AT": point})
    assert killed.returncode == -9, killed.stderr
    after = cli(wiki.root, "review", "list")  # any command finishes or rolls back the write first
    assert after.returncode == 0, after.stderr
    targets = [p["target"] for p in run["pages"]]
    if "rolled it back" in after.stderr:
        assert point == "journal"
        assert wiki.git("rev-parse", "HEAD").strip() == head and candidates(wiki) == [run["branch"]]
        assert not any((wiki.root / t).exists() for t in targets)
        assert (
            cli(wiki.root, "review", "approve", run["id"]).returncode == 0
        )  # and it can be approved again
    else:
        assert "completed an interrupted approval" in after.stderr, after.stderr
        assert candidates(wiki) == []
    for target in targets:  # every page of the run, as staged
        assert (wiki.root / target).read_bytes() == wiki.git(
            "show", f"{run['commit']}:{target}"
        ).encode()
    assert wiki.git("merge-base", "--is-ancestor", run["commit"], "HEAD", check=False) == ""
    assert_sound(wiki)


@pytest.mark.parametrize("publish", [False, True])
def test_two_compiles_racing_stage_the_run_once(wiki: Repo, publish: bool) -> None:
    args = [
        sys.executable,
        "-m",
        "llmwiki_git",
        "compile",
        "--json",
        *(["--publish"] if publish else []),
    ]
    env = {**os.environ, **FAST}
    racers = [
        subprocess.Popen(
            args, cwd=wiki.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    streams = [p.communicate(timeout=120) for p in racers]
    results = [(p.returncode, out, err) for p, (out, err) in zip(racers, streams)]
    for code, _, err in results:
        assert code == 0, err
    outs = [json.loads(out) for _, out, _ in results]
    staged = [o for o in outs if o["candidate"]]
    assert len(staged) == 1, outs  # exactly one run; the other found its sources recorded or staged
    other = next(o for o in outs if not o["candidate"])
    assert other["raced"] or other["stagedElsewhere"] or not other["compiled"]
    runs = wiki.git("log", "--format=%s", "--grep=^llmwiki: compile").splitlines()
    if publish:
        assert candidates(wiki) == [] and len(runs) == 1
    else:
        assert candidates(wiki) == [staged[0]["candidate"]["branch"]] and runs == []
    assert_sound(wiki)

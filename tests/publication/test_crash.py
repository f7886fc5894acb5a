"""kill -9 in the middle of ``review approve`` and ``query --save`` (issue 10, Deliver 7).

The killed command is the real CLI in a subprocess; ``LLMWIKI_TEST_KILL_AT=<point>[:n]``
makes it SIGKILL itself at a randomly chosen point of the write transaction (before the
journal, while writing the journal, after it, after the ref moved, inside a work-tree file
write, after the files, after the index, after the ref deletions). The following command (a
real CLI command) must leave either the old state or the complete new state, ``git fsck``
without errors and ``git status`` clean. 30 rounds each, in three shards of 10 with seeds of
their own, so that a parallel run (``pytest -n``) spreads them over the cores."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from llmwiki_git.cli import cli as main_cli
from llmwiki_git.review.stage import Staged, stage_candidate
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, copy_demo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
ROUNDS = 30
SHARDS = 3  # ROUNDS // SHARDS rounds each, on a fresh wiki each
POINTS = [
    "built",
    "file:1",
    "journal",
    "ref",
    "file:2",
    "file:3",
    "file:4",
    "files",
    "index",
    "refs",
    None,
]


def cli(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process (the one that gets killed)."""
    return subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST, **(env or {})},
    )


def in_process(root: Path, *args: str) -> tuple[int, str]:
    """The real CLI run in this process (cheaper under load): exit code and stderr."""
    result = CliRunner().invoke(main_cli, ["-C", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.stderr


def stage(root: Path, question: str) -> str:
    staged = stage_candidate(
        Workspace.open(root), question, f"A blob holds bytes [[blobs]] ({question}).", None
    )
    assert isinstance(staged, Staged), staged
    return staged.candidate_id


@pytest.fixture
def wiki(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("demo wiki")
    assert cli(repo.root, "index").returncode == 0
    assert repo.git("status", "--porcelain") == ""
    return repo


def tracked_bytes(repo: Repo) -> dict[str, bytes]:
    names = repo.git("ls-files", "-z").split("\0")
    return {n: (repo.root / n).read_bytes() for n in names if n and (repo.root / n).exists()}


def assert_sound(repo: Repo) -> None:
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=repo.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert all(line.startswith("dangling ") for line in fsck.stdout.splitlines()), fsck.stdout
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not list(repo.root.rglob(".llmwiki-*.tmp"))
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()
    assert not (repo.root / ".git" / "index.lock").exists()


def rounds(shard: int) -> range:
    """The rounds one shard plays: together the shards play ``range(ROUNDS)``, once each."""
    size = ROUNDS // SHARDS
    return range(shard * size, (shard + 1) * size)


def test_the_shards_play_every_round_once() -> None:
    played = [r for shard in range(SHARDS) for r in rounds(shard)]
    assert sorted(played) == list(range(ROUNDS))


def outcome(message: str) -> str:
    if "completed an interrupted" in message:
        return "completed"
    if "rolled it back" in message:
        return "rolled back"
    return "nothing to do"


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_kill_9_during_approve_leaves_old_or_complete_new_state(wiki: Repo, shard: int) -> None:
    rng = random.Random(1010 + 100 * shard)
    tally: Counter[tuple[str, str]] = Counter()
    for round_ in rounds(shard):
        cid = stage(wiki.root, f"what is a blob, question {round_}?")
        old_tip, old_files = wiki.git("rev-parse", "HEAD").strip(), tracked_bytes(wiki)
        candidate = wiki.git("rev-parse", f"llmwiki/review/{cid}").strip()
        point = rng.choice(POINTS)
        env = {"LLMWIKI_TEST_KILL_AT": point} if point else {}
        killed = cli(wiki.root, "review", "approve", cid, env=env)
        assert killed.returncode == (0 if point is None else -9), (point, killed.stderr)
        code, said = in_process(wiki.root, "review", "list")  # any following command
        assert code == 0, said
        assert_sound(wiki)
        tip = wiki.git("rev-parse", "HEAD").strip()
        open_ = wiki.git(
            "for-each-ref", "--format=%(objectname)", f"refs/heads/llmwiki/review/{cid}"
        ).strip()
        if tip == old_tip:  # the old state, exactly
            state = "old"
            assert open_ == candidate and tracked_bytes(wiki) == old_files
            assert (
                in_process(wiki.root, "review", "approve", cid)[0] == 0
            )  # and it can still be approved
            assert_sound(wiki)
        else:  # the complete new state
            state = "new"
            assert open_ == "" and wiki.git("rev-parse", "HEAD~2").strip() == old_tip
            target = f"wiki/queries/what-is-a-blob-question-{round_}.md"
            assert (wiki.root / target).read_bytes() == wiki.git("show", f"HEAD:{target}").encode()
            assert f"Candidate: {cid}" in (wiki.root / "log.md").read_text()
        tally[(str(point), f"{state}/{outcome(said)}")] += 1
    print("approve kill -9 tally:", dict(sorted(tally.items())))
    assert sum(tally.values()) == ROUNDS // SHARDS


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_kill_9_during_save_leaves_old_or_complete_new_state(wiki: Repo, shard: int) -> None:
    rng = random.Random(1011 + 100 * shard)
    tally: Counter[tuple[str, str]] = Counter()
    for round_ in rounds(shard):
        old_tip, old_files = wiki.git("rev-parse", "HEAD").strip(), tracked_bytes(wiki)
        point = rng.choice(POINTS)
        env = {"LLMWIKI_TEST_KILL_AT": point} if point else {}
        question = f"what is a tree, question {round_}?"
        killed = cli(wiki.root, "query", question, "--save", env=env)
        assert killed.returncode == (0 if point is None else -9), (point, killed.stderr)
        code, said = in_process(wiki.root, "check")  # any following command (the hook's, even)
        assert code == 0, said
        assert_sound(wiki)
        tip = wiki.git("rev-parse", "HEAD").strip()
        target = f"wiki/queries/what-is-a-tree-question-{round_}.md"
        if tip == old_tip:
            state = "old"
            assert tracked_bytes(wiki) == old_files and not (wiki.root / target).exists()
        else:
            state = "new"
            assert wiki.git("rev-parse", "HEAD~1").strip() == old_tip
            assert wiki.git("show", "--name-only", "--format=", "HEAD").split() == [
                "log.md",
                "wiki/index.md",
                target,
            ]
            assert (wiki.root / target).is_file() and question in (wiki.root / "log.md").read_text()
        tally[(str(point), f"{state}/{outcome(said)}")] += 1
    print("save kill -9 tally:", dict(sorted(tally.items())))
    assert sum(tally.values()) == ROUNDS // SHARDS

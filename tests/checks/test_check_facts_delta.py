"""The hook's facts stored as a delta in the tree record (checks/delta.py `Extras`): what a
branch switch derives must say what an uncached check says, and the cache files must survive
corruption, another version's files, concurrent hooks and a writer killed with -9."""

from __future__ import annotations

import json
import marshal
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmwiki_git.checks.cache import store, stored
from llmwiki_git.checks.version import CACHE_VERSION

from ..conftest import Repo, page

HOOK = ("--staged", "--base", "HEAD")


def problems(repo: Repo, *args: str) -> tuple[int, list[dict]]:
    proc = repo.llmwiki("check", "--json", *args)
    return proc.returncode, json.loads(proc.stdout)["problems"]


def agrees(repo: Repo, *args: str) -> bool:
    """The cached (derived) answer is the uncached full check's."""
    return problems(repo, *args) == problems(repo, *args, "--no-cache")


def cache_dir(repo: Repo) -> Path:
    return repo.root / ".git" / "llmwiki" / "check"


def facts_files(repo: Repo) -> list[Path]:
    return sorted(cache_dir(repo).glob("facts-*.marshal"))


def tree_records(repo: Repo) -> dict[str, tuple]:
    version, trees = stored(cache_dir(repo) / "trees.marshal")
    assert version == CACHE_VERSION
    return trees


def build(repo: Repo, root: str, pages: int = 40) -> str:
    """A wiki on main and a branch ``feature`` that deletes, renames, adds pages and
    changes an alias; returns the page folder prefix."""
    at = f"{root}/" if root else ""
    if not root:  # a vault at the repository root, beside the user's own index and log
        repo.write("index.md", "# My own index\n\n[[p1]] [[moved]]\n")
        repo.write("log.md", "# Log\n\n- [[p2]]\n")
    for i in range(pages):
        repo.write(
            f"{at}concepts/p{i}.md",
            page(f"P{i}", f"# P{i}\n\n[[p{(i + 1) % pages}]] [[moved#usage]] [[old-alias]]\n"),
        )
    repo.write(f"{at}concepts/moved.md", page("Moved", "## Usage\n[[p0]]\n", aliases=["Old Alias"]))
    repo.write(f"{at}concepts/gone.md", page("Gone", "[[p3]]\n"))
    repo.write(f"{at}notes/other.md", "[[gone]] [[never]] [[p5#nowhere]]\n")
    repo.commit("main wiki")
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", f"{at}concepts/gone.md")
    repo.git("mv", f"{at}concepts/moved.md", f"{at}concepts/moved-away.md")
    repo.write(
        f"{at}concepts/moved-away.md", page("Moved", "## Usage\n[[p0]]\n", aliases=["New Alias"])
    )
    repo.write(
        f"{at}concepts/fresh.md",
        page("Fresh", "# Fresh\n[[moved-away#usage]] [[gone]] [[new-alias]]\n"),
    )
    repo.commit("feature wiki")
    repo.git("checkout", "-q", "main")
    return at


@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_branch_switch_stores_a_delta_not_a_new_facts_file(repo: Repo, root: str) -> None:
    at = build(repo, root)
    assert repo.llmwiki("check", *HOOK).returncode == 0  # main's hook: a full check, one facts file
    written = facts_files(repo)
    assert len(written) == 1
    repo.git("checkout", "-q", "feature")  # HEAD never checked
    repo.write(f"{at}concepts/p7.md", page("P7", "# P7\n[[fresh]] [[gone]] [[missing-here]]\n"))
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)
    assert agrees(repo, "--staged")
    assert facts_files(repo) == written  # the names changed, yet no 5 MB file was written
    head_tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    record = next(r for key, r in tree_records(repo).items() if key.startswith(head_tree))
    names_changed = record[3][2]
    assert (
        f"{at}concepts/moved-away.md" in names_changed
        and names_changed[f"{at}concepts/gone.md"] is None
    )
    # A chain: a branch from feature changes names again; its delta is merged with feature's.
    repo.git("commit", "-q", "--no-verify", "-m", "p7")
    repo.git("checkout", "-q", "-b", "third")
    repo.git("mv", f"{at}concepts/fresh.md", f"{at}concepts/fresh-again.md")
    repo.write(
        f"{at}concepts/p9.md",
        page("P9", "[[fresh]] [[fresh-again]] [[old-alias]]\n", aliases=["Old Alias"]),
    )
    repo.commit("third")
    repo.git("checkout", "-q", "main")
    assert agrees(repo, *HOOK)
    repo.git("checkout", "-q", "third")
    repo.write(f"{at}concepts/p11.md", "[[p9]] [[new-alias]] [[old-alias]]\n")
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)
    assert agrees(repo, "--rev", "HEAD~1")
    assert facts_files(repo) == written


@pytest.mark.parametrize("root", ["wiki", ""])
def test_corrupt_cache_files_are_ignored_and_written_again(repo: Repo, root: str) -> None:
    at = build(repo, root)
    assert repo.llmwiki("check", *HOOK).returncode == 0
    (facts,) = facts_files(repo)
    facts.write_bytes(b"\x00not marshal at all")
    (cache_dir(repo) / "trees.marshal").write_bytes(
        marshal.dumps((CACHE_VERSION, {"k": ("torn",)}))[:-3]
    )
    repo.git("checkout", "-q", "feature")
    repo.write(f"{at}concepts/p2.md", "[[fresh]] [[nope]]\n")
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)
    repo.git("checkout", "-q", "-f", "main")
    assert agrees(repo, *HOOK)  # main again: derived from feature's check
    for record in tree_records(repo).values():  # every record starts from facts that load
        (used,) = cache_dir(repo).glob(f"facts-{record[2]}-*.marshal")
        assert marshal.loads(used.read_bytes())[0] == CACHE_VERSION
    (cache_dir(repo) / "trees.marshal").unlink()
    assert agrees(repo, *HOOK)  # a full check of main writes its damaged facts file anew
    assert marshal.loads(facts.read_bytes())[0] == CACHE_VERSION


@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_damaged_part_inside_sound_facts_falls_back_to_the_full_check(
    repo: Repo, root: str
) -> None:
    at = build(repo, root)
    assert repo.llmwiki("check", *HOOK).returncode == 0
    (facts,) = facts_files(repo)
    version, records = stored(facts)
    ((key, record),) = records.items()
    damaged = tuple(
        tuple(blob[: len(blob) // 2] for blob in part) if isinstance(part, tuple) else part
        for part in record
    )  # every parted map cut short: the file itself still loads
    store(facts, (version, {key: damaged}))  # a sound file (its digest right) holding damaged parts
    repo.git("checkout", "-q", "feature")
    repo.write(f"{at}concepts/p6.md", "[[moved-away]] [[moved]] [[new-alias]]\n")
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)
    assert agrees(repo, "--staged")


@pytest.mark.parametrize("root", ["wiki", ""])
def test_facts_of_another_version_or_gone_are_not_trusted(repo: Repo, root: str) -> None:
    """Regression: facts another version of the code left under the same name counted as
    present, so the full check never rewrote them and every later hook fell back to it."""
    at = build(repo, root)
    assert repo.llmwiki("check", *HOOK).returncode == 0
    (facts,) = facts_files(repo)
    store(facts, ("0123456789abcdef", *stored(facts)[1:]))
    (cache_dir(repo) / "trees.marshal").unlink()
    assert agrees(repo, *HOOK)
    assert (
        marshal.loads(facts.read_bytes())[0] == CACHE_VERSION
    )  # written again, so deltas can start from it
    # A tree record whose facts file is gone (pruned): derivation falls back to a full check.
    facts.unlink()
    repo.git("checkout", "-q", "feature")
    repo.write(f"{at}concepts/p4.md", "[[moved-away]] [[moved]]\n")
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)


def _switch_with_edit(repo: Repo, at: str, branch: str, text: str) -> None:
    repo.git("checkout", "-q", "-f", branch)
    repo.write(f"{at}concepts/p1.md", text)
    repo.git("add", "-A")


@pytest.mark.parametrize("root", ["wiki", ""])
def test_concurrent_hooks_after_a_switch_agree_and_leave_a_sound_cache(
    repo: Repo, root: str
) -> None:
    at = build(repo, root, pages=120)
    assert repo.llmwiki("check", *HOOK).returncode == 0
    _switch_with_edit(repo, at, "feature", "[[fresh]] [[gone]] [[concurrent-missing]]\n")
    expect = problems(repo, *HOOK, "--no-cache")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", "check", "--json", *HOOK],
            cwd=repo.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, json.loads(out)["problems"]) == expect, err
    for path in cache_dir(repo).iterdir():
        assert not path.name.startswith("."), path  # no temporary file left behind
        assert marshal.loads(path.read_bytes())[0] == CACHE_VERSION
    assert problems(repo, *HOOK) == expect
    _switch_with_edit(repo, at, "main", "[[moved]] [[after-the-race]]\n")
    assert agrees(repo, *HOOK)


@pytest.mark.slow
@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_hook_killed_mid_write_leaves_a_usable_cache(repo: Repo, root: str) -> None:
    """kill -9 inside cache writes of cold checks and of branch-switch hooks (between a
    file's write and its rename, the n-th write of the run): the next hook still says what a
    full check says, and stale temporary files are swept."""
    at = build(repo, root, pages=400)
    for attempt in range(6):
        branch = "feature" if attempt % 2 else "main"
        _switch_with_edit(repo, at, branch, f"[[fresh]] [[moved]] [[killed-{attempt}]]\n")
        if attempt % 3 == 0:
            for path in cache_dir(repo).glob("*.marshal"):
                path.unlink()  # a cold check: the longest write (every scan)
        env = {**os.environ, "LLMWIKI_TEST_KILL_AT": f"cache:{attempt % 3 + 1}"}
        proc = subprocess.run(
            [sys.executable, "-m", "llmwiki_git", "check", *HOOK],
            cwd=repo.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if attempt % 3 == 0:
            assert proc.returncode == -signal.SIGKILL, (
                f"attempt {attempt}: the cold check wrote no cache"
            )
        assert agrees(repo, *HOOK), f"attempt {attempt}"
    leftover = cache_dir(repo) / ".facts-left.marshal.1.abc"
    leftover.write_bytes(b"half a file")
    old = time.time() - 2 * 3600
    os.utime(leftover, (old, old))
    repo.write(f"{at}concepts/p3.md", "[[sweep]]\n")
    repo.git("add", "-A")
    assert agrees(repo, *HOOK)  # a hook that writes the cache sweeps what killed writers left
    assert not leftover.exists()

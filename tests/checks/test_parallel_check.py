"""The cold check on every core (wiki/parallel.py): forked workers read and scan shares of
the pages, then compute shares of the page problems; results must be exactly one process's,
workers must die with their parent, and a failed worker's share is redone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmwiki_git.checks.cache import stored
from llmwiki_git.wiki.parallel import MIN_PAGES, in_shares

from ..conftest import Repo, page

SERIAL = {"LLMWIKI_SERIAL_SCAN": "1"}


def _many_pages(repo: Repo, root: str) -> None:
    """More than MIN_PAGES pages with every kind of problem and name: aliases, headings,
    block ids, an attachment, pages of one name in two folders, fenced and inline code,
    frontmatter errors; a root vault also has the user's own index.md and log.md."""
    at = f"{root}/" if root else ""
    if not root:
        repo.write("index.md", "# My index\n\n- [[p1]] [[not-a-page]]\n")
        repo.write("log.md", "# My log\n\n- 2026-01-01 [[p2#P 2]]\n")
    repo.write(f"{at}assets/diagram.png", b"\x89PNG\r\n")
    for i in range(MIN_PAGES + 60):
        folder = "concepts" if i % 3 else "queries"
        nxt = (i + 1) % (MIN_PAGES + 60)
        body = (
            f"# P {i}\n\nSee [[p{nxt}#P {nxt}]], [[P{nxt} alias]], [[gone-{i % 7}]] and "
            f"[[p{nxt}#No Such]] `[[in-code]]` ![[diagram.png]] [[#P {i}]] [[ ]].\n\n"
            f"para ^blk{i}\n\n```\n[[fenced-{i}]]\n```\n\n[[twin]] [[p{i}#^blk{i}]]\n"
        )
        meta = {"aliases": f"[P{i} alias]"}
        if i % 97 == 5:
            repo.write(f"{at}{folder}/p{i}.md", f"---\ntitle: [unclosed\n---\n{body}")
        else:
            repo.write(f"{at}{folder}/p{i}.md", page(f"P {i}", body, **meta))
    repo.write(f"{at}concepts/deep/twin.md", "# Twin\n")
    repo.write(f"{at}concepts/other/twin.md", "# Twin too\n")
    repo.commit("many pages")


def _facts(repo: Repo) -> list[object]:
    folder = repo.root / ".git" / "llmwiki" / "check"
    return [stored(p)[1:] for p in sorted(folder.glob("*.marshal"))]


@pytest.mark.slow
@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_cold_check_on_every_core_says_what_one_process_says(repo: Repo, root: str) -> None:
    """Fresh processes (the in-process runner may have other threads, which turn workers
    off): the report, the exit code and every cache file of a cold check in workers equal
    a serial run's; the hook after it agrees with an uncached check."""
    _many_pages(repo, root)
    cache = repo.root / ".git" / "llmwiki"
    for args in (("--no-cache",), (), ("--rev", "HEAD")):
        shutil.rmtree(cache, ignore_errors=True)
        parallel = repo.llmwiki_process("check", "--json", *args)
        parallel_files = _facts(repo) if args != ("--no-cache",) else []
        shutil.rmtree(cache, ignore_errors=True)
        serial = repo.llmwiki_process("check", "--json", *args, env=SERIAL)
        assert parallel.returncode == serial.returncode == 1, parallel.stderr
        assert parallel.stdout == serial.stdout
        assert parallel_files == (_facts(repo) if args != ("--no-cache",) else [])
    report = json.loads(parallel.stdout)
    assert report["checked"] == MIN_PAGES + 62 + (
        0 if root else 2
    )  # a root vault: index.md and log.md are pages
    codes = {p["code"] for p in report["problems"]}
    assert codes >= {
        "broken-link",
        "missing-heading",
        "ambiguous-link",
        "empty-link",
        "malformed-frontmatter",
    }
    assert not any(
        "fenced-" in p["message"] or "in-code" in p["message"] for p in report["problems"]
    )
    if not root:
        assert any(
            p["path"] == "index.md" and p["target"] == "not-a-page" for p in report["problems"]
        )
    at = f"{root}/" if root else ""
    repo.write(
        f"{at}concepts/p1.md",
        page("P 1", "# P 1\n\n[[p2]] [[brand-new-missing]]\n", aliases="[P1 alias]"),
    )
    repo.git("add", "-A")
    hook = repo.llmwiki_process("check", "--staged", "--base", "HEAD", "--json")
    uncached = repo.llmwiki_process("check", "--staged", "--base", "HEAD", "--json", "--no-cache")
    assert hook.returncode == uncached.returncode == 1
    assert hook.stdout == uncached.stdout
    assert [p["target"] for p in json.loads(hook.stdout)["problems"]] == ["brand-new-missing"]


def _square_all(share: list[int]) -> list[int]:
    return [n * n for n in share]


def test_shares_come_back_in_order_from_real_workers() -> None:
    items = list(range(1000))
    shares = in_shares(_square_all, items, workers=3)
    assert len(shares) == 3
    assert [n for share in shares for n in share] == [n * n for n in items]


def test_a_failed_worker_s_share_is_redone_here() -> None:
    """A worker that dies (here: exits at once) or sends what marshal cannot carry costs
    its share a second computation in the parent, never a wrong or missing result."""
    parent = os.getpid()

    def dies(share: list[int]) -> list[int]:
        if os.getpid() != parent:
            os._exit(3)
        return _square_all(share)

    def unmarshallable(share: list[int]) -> object:
        return _square_all(share) if os.getpid() == parent else [object()]

    items = list(range(500))
    assert [n for share in in_shares(dies, items, workers=2) for n in share] == _square_all(items)
    assert [
        n for share in in_shares(unmarshallable, items, workers=2) for n in share
    ] == _square_all(items)  # type: ignore[union-attr]


_SLEEPER = """
import os, sys, time
from llmwiki_git.wiki.parallel import in_shares

parent = os.getpid()

def work(share):
    if os.getpid() != parent:
        print(os.getpid(), flush=True)
        time.sleep(60)
    else:
        time.sleep(60)
    return share

in_shares(work, list(range(10)), workers=2)
"""


def test_workers_end_with_the_process_that_forked_them() -> None:
    """A check killed with -9 while its workers run must not leave them running."""
    from llmwiki_git.gitstore.lock import pid_alive

    parent = subprocess.Popen([sys.executable, "-c", _SLEEPER], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    try:
        assert pid_alive(worker)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while pid_alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(worker)
    finally:
        parent.stdout.close()
        try:
            os.kill(worker, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_scan_workers_read_their_own_files(tmp_path: Path) -> None:
    """Workers read their share from the snapshot themselves: an unreadable page and a
    binary one give the same records as a serial read, in order."""
    from llmwiki_git.wiki.parallel import read_and_scan
    from llmwiki_git.wiki.snapshots import SourceFile, WorktreeSnapshot

    for i in range(MIN_PAGES + 10):
        (tmp_path / f"p{i}.md").write_text(f"# P{i}\n[[p{i + 1}]] `[[x]]`\n", encoding="utf-8")
    (tmp_path / "bin.md").write_bytes(b"\x00binary")
    (tmp_path / "big.md").write_bytes(b"[[x]]" * 1000)
    snapshot = WorktreeSnapshot(tmp_path, None)
    items = [SourceFile(f"p{i}.md") for i in range(MIN_PAGES + 10)] + [
        SourceFile("bin.md"),
        SourceFile("big.md"),
        SourceFile("missing.md"),
    ]
    parallel = read_and_scan(snapshot, items, max_bytes=4000)
    os.environ["LLMWIKI_SERIAL_SCAN"] = "1"
    try:
        serial = read_and_scan(snapshot, items, max_bytes=4000)
    finally:
        del os.environ["LLMWIKI_SERIAL_SCAN"]
    assert parallel == serial
    assert [path for path, *_ in parallel] == [item.path for item in items]
    by_path = {path: record for path, _, record, _ in parallel}
    assert by_path["bin.md"][4][0][0] == "unreadable-page"
    assert by_path["big.md"][4][0][0] == "page-too-large"
    assert by_path["missing.md"][4][0][0] == "unreadable-page"

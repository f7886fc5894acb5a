#!/usr/bin/env python3
"""kill -9 trials timed right after the write journal appears (issue 22, item 3).

    python benchmarks/crash_trials.py [--trials 30] [--what approve,save] [--pid-only] [--work DIR]
                                      [--package DIR]

``--package DIR`` runs the ``llmwiki_git`` package found in DIR (e.g. ``git archive main
llmwiki_git | tar -x -C DIR``) instead of the installed one: the "before" column.

Each trial builds a fresh repository holding the demo wiki (``examples/demo``), then runs the
real ``llmwiki review approve <id>`` (a candidate staged with ``query --save --review``) or
``llmwiki query … --save`` in its own process group, polls for ``.llmwiki/transaction.json``
and, the moment it appears plus a delay that walks 0-14.5 ms across the trials (so the kill
lands in ``update-ref``, the work-tree follow, ``update-index`` and the candidate's
deletion), sends SIGKILL to the whole process group (as a killed CI step or a closed terminal
does; ``--pid-only`` kills only llmwiki's own process). Then one ``llmwiki review list``
recovers, and the trial counts as recovered only when:

* the command exits 0 and no journal or ``.llmwiki-*.tmp`` file is left;
* no git lock file is left (``index.lock``, ``HEAD.lock``, ``packed-refs.lock``, any
  ``refs/**.lock``);
* ``git status`` is clean and ``git fsck --connectivity-only`` passes;
* the repository is wholly old (branch at its old tip, the candidate branch still there, no
  page) or wholly new (branch moved, the page in HEAD and the work tree, the candidate gone).

Prints a markdown table per command and the tally; always exits 0 (a measurement, not a test;
``tests/publication/test_crash.py`` holds the deterministic crash tests).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "LLMWIKI_EMBEDDING_PROVIDER": "none",
    "GIT_AUTHOR_NAME": "Trial",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "Trial",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
QUESTION = "what is a blob?"
PAGE = "wiki/queries/what-is-a-blob.md"
LLMWIKI = [sys.executable, "-m", "llmwiki_git"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, env=ENV
    ).stdout


def setup(work: Path, what: str) -> tuple[Path, str, str | None]:
    """A repository with the demo wiki; for an approval, a staged candidate. (root, tip, id)"""
    root = Path(tempfile.mkdtemp(prefix=f"{what}-", dir=work))
    shutil.copytree(ROOT / "examples" / "demo", root, dirs_exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "demo")
    cid = None
    if what == "approve":
        subprocess.run(
            [*LLMWIKI, "query", QUESTION, "--save", "--review"],
            cwd=root,
            env=ENV,
            capture_output=True,
            check=True,
        )
        cid = git(
            root, "for-each-ref", "--format=%(refname:lstrip=4)", "refs/heads/llmwiki/review/"
        ).split()[0]
    return root, git(root, "rev-parse", "HEAD").strip(), cid


def locks(root: Path) -> list[str]:
    found = [
        p for p in ("index.lock", "HEAD.lock", "packed-refs.lock") if (root / ".git" / p).exists()
    ]
    found += [str(p.relative_to(root / ".git")) for p in (root / ".git" / "refs").rglob("*.lock")]
    return found


def trial(work: Path, what: str, delay: float, pid_only: bool) -> dict[str, object]:
    root, tip, cid = setup(work, what)
    args = ["review", "approve", cid] if cid else ["query", QUESTION, "--save"]
    journal = root / ".llmwiki" / "transaction.json"
    proc = subprocess.Popen(
        [*LLMWIKI, *args],
        cwd=root,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    seen = False
    while proc.poll() is None:
        if journal.exists():
            seen = True
            break
    if seen:
        end = time.perf_counter() + delay
        while time.perf_counter() < end:
            pass
        try:
            (os.kill if pid_only else os.killpg)(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    code = proc.wait()
    killed = code == -signal.SIGKILL
    time.sleep(
        0.05
    ) if pid_only else None  # an orphaned git child of a pid-only kill finishes on its own
    recovery = subprocess.run(
        [*LLMWIKI, "review", "list"], cwd=root, env=ENV, capture_output=True, text=True
    )
    said = next((line for line in recovery.stderr.splitlines() if line.startswith("llmwiki:")), "")
    head = git(root, "rev-parse", "HEAD").strip()
    candidate_left = bool(cid) and bool(
        git(root, "for-each-ref", f"refs/heads/llmwiki/review/{cid}").strip()
    )
    in_head = (
        subprocess.run(
            ["git", "cat-file", "-e", f"HEAD:{PAGE}"], cwd=root, env=ENV, capture_output=True
        ).returncode
        == 0
    )
    problems = []
    if recovery.returncode != 0:
        problems.append(f"review list exit {recovery.returncode}: {recovery.stderr.strip()[:200]}")
    if journal.exists() or list(root.rglob(".llmwiki-*.tmp")):
        problems.append("journal or temp file left")
    if locks(root):
        problems.append(f"git locks left: {', '.join(locks(root))}")
    if git(root, "status", "--porcelain", "--untracked-files=all").strip():
        problems.append("work tree or index not clean")
    if subprocess.run(
        ["git", "fsck", "--connectivity-only"], cwd=root, env=ENV, capture_output=True
    ).returncode:
        problems.append("fsck failed")
    old = head == tip and not in_head and (candidate_left or not cid)
    new = head != tip and in_head and (root / PAGE).is_file() and not candidate_left
    if not (old or new):
        problems.append("neither the old nor the new state")
    shutil.rmtree(root, ignore_errors=True)
    return {
        "delay": delay,
        "killed": killed,
        "state": "old" if old else "new" if new else "mixed",
        "said": said,
        "ok": not problems,
        "problems": "; ".join(problems),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--what", default="approve,save")
    parser.add_argument(
        "--pid-only", action="store_true", help="kill only llmwiki's process, not its group"
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--package", type=Path, default=None, help="a folder holding the llmwiki_git package to run"
    )
    opts = parser.parse_args()
    if opts.package is not None:
        ENV["PYTHONPATH"] = str(opts.package.resolve())
    work = opts.work or Path(tempfile.mkdtemp(prefix="llmwiki-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    print(
        f"kill -9 ({'pid only' if opts.pid_only else 'process group'}) right after the journal appears; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
    )
    for what in opts.what.split(","):
        rows = [trial(work, what, (i % 30) * 0.0005, opts.pid_only) for i in range(opts.trials)]
        print(
            f"### {what}\n\n| # | delay ms | killed | state after recovery | recovery said | recovered |"
        )
        print("|---|---|---|---|---|---|")
        for i, row in enumerate(rows, 1):
            said = str(row["said"]).replace("|", "/")[:90]
            verdict = "yes" if row["ok"] else f"NO: {row['problems']}"
            print(
                f"| {i} | {float(row['delay']) * 1000:.1f} | {'yes' if row['killed'] else 'no (had finished)'} "
                f"| {row['state']} | {said} | {verdict} |"
            )
        good = sum(1 for r in rows if r["ok"])
        killed = sum(1 for r in rows if r["killed"])
        print(
            f"\n{what}: recovered {good}/{len(rows)} ({killed} killed mid-write, {len(rows) - killed} had finished)\n"
        )
    shutil.rmtree(work, ignore_errors=True) if opts.work is None else None
    return 0


if __name__ == "__main__":
    sys.exit(main())

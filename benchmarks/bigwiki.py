#!/usr/bin/env python3
"""The first hour on a big wiki (issue 23, item 15): what a user meets on a 10,000-page wiki
built by ``mkbigwiki.py``, each in fresh processes, for this tree and optionally others.

    python ../shared/tools/mkbigwiki.py /tmp/big 10000     # 40 MB of real prose, committed
    python benchmarks/bigwiki.py /tmp/big [--repeat 5] [--code LABEL=DIR ...] [--only ROW,...]

Rows (each a fresh process, wall clock around ``subprocess.run``, and its CPU: user + system
of the process and its children, git included):

* ``cold check``: ``llmwiki check`` with no cache at all (a fresh clone's first check);
* ``first --staged after a whole-tree check``: a whole-tree ``check`` (unmeasured), then one
  page edited and staged, then ``check --staged --base HEAD``: the pre-commit hook's first run;
* ``first --staged after checking the edit``: the usual order: one page edited, a whole-tree
  ``check`` of that changed work tree (unmeasured), the page staged, ``check --staged --base
  HEAD`` (issue 39);
* ``next --staged``: the same page edited again and staged (the hook's usual run);
* ``index --fast``: from no store (``.llmwiki/`` removed), the checker's scan cache present
  (as after any ``check``: index reads the wiki's link graph through it);
* ``index --fast, no scan cache``: the same on a fresh clone that was never checked;
* ``fresh context``: ``context "<a page title>" --json`` on that ``--fast`` index, nothing changed;
* ``read one page``: a fresh process reading one page as MCP ``read_page`` does
  (``pages.service.read_page``), the scan cache warm (issue 39);
* ``index --fast after one edit``: a current ``--fast`` index (built unmeasured if absent),
  one page's body edited, ``index --fast`` (issue 39);
* ``first context after that index``: the same, then ``context`` measured (issue 39).
* ``mv one page``: a whole-tree ``check`` of the clean tree (unmeasured), then ``llmwiki mv``
  of one concept page to a new name, committed (then moved back, unmeasured); the pages
  linking to it reach it by its alias, so the commit is the move and the table of contents
  (llmwiki's own copy in ``.llmwiki/``: the wiki's ``index.md`` is the user's) (issue 39);
* ``merge-pages --suggest``: a whole-tree ``check`` (unmeasured), then ``merge-pages
  --suggest --json`` (issue 39).

Targets: cold < 1.5 s, first and next ``--staged`` < 0.3 s, ``index --fast`` < 5 s, fresh
``context`` < 0.3 s. Every revision works on its own copy of the wiki (``cp -a``, then ``git
update-index --refresh``: a copied work tree has stale stat data until any ``git status``);
runs of the revisions are interleaved, so load changes hit them alike, and the load average
is printed before each row. ``--code LABEL=DIR`` times the ``llmwiki_git`` package found in
DIR (``git archive REV llmwiki_git | tar -x -C DIR``) beside this tree. ``PYTHONDONTWRITEBYTECODE``
is dropped: with it every run compiles the package (~0.1 s), which an installed package never
does. Standard library only; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {
    "cold check": 1.5,
    "first --staged after a whole-tree check": 0.3,
    "first --staged after checking the edit": 0.3,
    "next --staged": 0.3,
    "index --fast": 5.0,
    "index --fast, no scan cache": 5.0,
    "fresh context": 0.3,
    "read one page": 1.0,
    "index --fast after one edit": 1.0,
    "first context after that index": 1.0,
    "mv one page": 1.0,
    "merge-pages --suggest": 1.0,
}
# One page read as MCP `read_page` reads it, in a fresh process (no CLI command reads a page).
READ_PAGE = (
    "import json, sys; from llmwiki_git.workspace import Workspace; "
    "from llmwiki_git.pages.service import read_page; "
    "print(json.dumps(read_page(Workspace.open(), path=sys.argv[1]).to_json()))"
)


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def env_for(code: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("LLMWIKI_")
    }
    env.update(
        {
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }
    )
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def run(
    cmd: list[str], cwd: Path, env: dict[str, str]
) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


class Copy:
    """One revision's copy of the wiki, and the steps of each row."""

    def __init__(self, label: str, source: Path, work: Path, code: Path | None) -> None:
        self.label = label
        self.root = work / label.replace(" ", "-").replace("/", "-")
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(source, self.root, symlinks=True)
        self.env = env_for(code)
        git(self.root, self.env, "update-index", "-q", "--refresh")
        self.llmwiki = [sys.executable, "-m", "llmwiki_git"]
        pages = sorted((self.root / "wiki" / "concepts").glob("*.md"))
        self.page = pages[len(pages) // 3]
        self.original = self.page.read_bytes()
        self.edits = 0
        title = next(
            line
            for line in pages[0].read_text(encoding="utf-8").splitlines()
            if line.startswith("title:")
        )
        self.question = title.split(":", 1)[1].strip().strip('"').lower()
        self.cache = self.root / ".git" / "llmwiki"

    def check(self, *args: str) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
        return run([*self.llmwiki, "check", *args], self.root, self.env)

    def stage_edit(self) -> None:
        self.edits += 1
        self.page.write_bytes(
            self.original + f"\n\nEdit {self.edits}: now also [[missing-{self.edits}]].\n".encode()
        )
        git(self.root, self.env, "add", "--", str(self.page.relative_to(self.root)))

    def restore(self) -> None:
        self.page.write_bytes(self.original)
        git(self.root, self.env, "add", "--", str(self.page.relative_to(self.root)))

    # -- the rows: each returns (wall, cpu) of the measured command -------------------------

    def cold(self) -> tuple[float, float]:
        shutil.rmtree(self.cache, ignore_errors=True)
        wall, cpu, proc = self.check()
        assert proc.returncode == 1, proc.stderr  # the generated wiki has broken links
        return wall, cpu

    def first_staged(self) -> tuple[float, float]:
        shutil.rmtree(self.cache, ignore_errors=True)
        self.restore()
        self.check()  # the whole-tree check a user ran before committing
        self.stage_edit()
        wall, cpu, proc = self.check("--staged", "--base", "HEAD")
        assert proc.returncode == 1 and b"missing-" in proc.stdout, proc.stdout + proc.stderr
        return wall, cpu

    def first_staged_dirty(self) -> tuple[float, float]:
        shutil.rmtree(self.cache, ignore_errors=True)
        self.restore()
        self.edits += 1
        self.page.write_bytes(
            self.original + f"\n\nEdit {self.edits}: now also [[missing-{self.edits}]].\n".encode()
        )
        self.check()  # the whole-tree check of the edited work tree, before `git add`
        git(self.root, self.env, "add", "--", str(self.page.relative_to(self.root)))
        wall, cpu, proc = self.check("--staged", "--base", "HEAD")
        assert proc.returncode == 1 and b"missing-" in proc.stdout, proc.stdout + proc.stderr
        return wall, cpu

    def next_staged(self) -> tuple[float, float]:
        self.stage_edit()
        wall, cpu, proc = self.check("--staged", "--base", "HEAD")
        assert proc.returncode == 1 and b"missing-" in proc.stdout, proc.stdout + proc.stderr
        return wall, cpu

    def index_fast(self) -> tuple[float, float]:
        self.restore()
        shutil.rmtree(self.root / ".llmwiki", ignore_errors=True)
        wall, cpu, proc = run([*self.llmwiki, "index", "--fast"], self.root, self.env)
        assert proc.returncode == 0, proc.stderr
        return wall, cpu

    def index_fast_cold(self) -> tuple[float, float]:
        shutil.rmtree(self.cache, ignore_errors=True)
        return self.index_fast()

    def fresh_context(self) -> tuple[float, float]:
        if not (self.root / ".llmwiki" / "embeddings.json").exists():
            run([*self.llmwiki, "index", "--fast"], self.root, self.env)
        wall, cpu, proc = run(
            [*self.llmwiki, "context", self.question, "--json"], self.root, self.env
        )
        assert proc.returncode == 0 and b'"primary"' in proc.stdout, proc.stderr
        return wall, cpu

    def read_one_page(self) -> tuple[float, float]:
        self.restore()
        rel = self.page.relative_to(self.root).as_posix()
        wall, cpu, proc = run([sys.executable, "-c", READ_PAGE, rel], self.root, self.env)
        assert proc.returncode == 0 and b'"pageId"' in proc.stdout, proc.stderr
        return wall, cpu

    def index_after_edit(self) -> tuple[float, float]:
        if not (self.root / ".llmwiki" / "embeddings.json").exists():
            run([*self.llmwiki, "index", "--fast"], self.root, self.env)
        self.edits += 1
        self.page.write_bytes(self.original + f"\n\nEdit {self.edits}: quince.\n".encode())
        wall, cpu, proc = run([*self.llmwiki, "index", "--fast"], self.root, self.env)
        assert proc.returncode == 0 and b"(1 read" in proc.stdout, proc.stdout + proc.stderr
        return wall, cpu

    def context_after_index(self) -> tuple[float, float]:
        self.index_after_edit()
        wall, cpu, proc = run(
            [*self.llmwiki, "context", self.question, "--json"], self.root, self.env
        )
        assert proc.returncode == 0 and b'"primary"' in proc.stdout, proc.stderr
        return wall, cpu

    def mv_one_page(self) -> tuple[float, float]:
        self.restore()
        self.check()  # the whole-tree check a user ran before
        rel = self.page.relative_to(self.root).as_posix()
        moved = rel[:-3] + "-moved.md"
        wall, cpu, proc = run([*self.llmwiki, "mv", rel, moved], self.root, self.env)
        assert proc.returncode == 0 and b"Moved " in proc.stdout, proc.stderr
        # moved back (unmeasured): the same tree as before, llmwiki's own index.md with it
        back = run([*self.llmwiki, "mv", moved, rel], self.root, self.env)[2]
        assert back.returncode == 0, back.stderr
        return wall, cpu

    def suggest(self) -> tuple[float, float]:
        self.restore()
        self.check()
        wall, cpu, proc = run(
            [*self.llmwiki, "merge-pages", "--suggest", "--json"], self.root, self.env
        )
        assert proc.returncode == 0 and b'"groups"' in proc.stdout, proc.stderr
        return wall, cpu


ROWS = {
    "cold check": Copy.cold,
    "first --staged after a whole-tree check": Copy.first_staged,
    "first --staged after checking the edit": Copy.first_staged_dirty,
    "next --staged": Copy.next_staged,
    "index --fast": Copy.index_fast,
    "index --fast, no scan cache": Copy.index_fast_cold,
    "fresh context": Copy.fresh_context,
    "read one page": Copy.read_one_page,
    "index --fast after one edit": Copy.index_after_edit,
    "first context after that index": Copy.context_after_index,
    "mv one page": Copy.mv_one_page,
    "merge-pages --suggest": Copy.suggest,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "wiki", type=Path, help="a wiki built by mkbigwiki.py (a committed git repository)"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed runs per row and revision (default 5)"
    )
    parser.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also time the llmwiki_git package in DIR, labelled LABEL (repeatable)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/llmwiki-bigwiki-bench"),
        help="where the copies of the wiki go (default /tmp/llmwiki-bigwiki-bench)",
    )
    parser.add_argument(
        "--only", default="", help="comma-separated row names to run (default: all)"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    pages = len(list((args.wiki / "wiki" / "concepts").glob("*.md")))
    copies = [
        Copy(label, args.wiki, args.work, Path(code).resolve())
        for label, _, code in (spec.partition("=") for spec in args.code)
    ]
    copies.append(Copy("this tree", args.wiki, args.work, None))
    wanted = [r.strip() for r in args.only.split(",") if r.strip()] or list(ROWS)
    print(f"# The first hour on a {pages:,}-page wiki ({args.wiki})\n")
    print(
        f"- machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; runs per row and revision: {args.repeat}, interleaved"
    )
    print(
        f"- revisions: {', '.join(c.label + (' (' + c.env['PYTHONPATH'] + ')' if 'PYTHONPATH' in c.env else '') for c in copies)}\n"
    )
    print(
        "| row | revision | wall median (min) | CPU median | target | load avg (1/5/15 min) before the row |"
    )
    print("|---|---|---|---|---|---|")
    for name in wanted:
        row = ROWS[name]
        before = load()
        times: dict[str, list[tuple[float, float]]] = {c.label: [] for c in copies}
        for copy in copies:  # one unmeasured run each: files cached, bytecode written
            row(copy)
        for _ in range(args.repeat):
            for copy in copies:
                times[copy.label].append(row(copy))
        for copy in copies:
            walls = [w for w, _ in times[copy.label]]
            cpu = statistics.median(c for _, c in times[copy.label])
            wall = statistics.median(walls)
            verdict = "met" if wall < TARGETS[name] else "missed"
            print(
                f"| {name} | {copy.label} | {wall:.3f} ({min(walls):.3f}) s | {cpu:.3f} s | "
                f"< {TARGETS[name]:g} s: {verdict} | {before} |",
                flush=True,
            )
    for copy in copies:
        copy.restore()
    print(f"\nload average at end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Issue 39's cost table: what one change costs at 1,000 to 100,000 pages, each operation in
a fresh process, as CPU s / wall s / peak MB, with the load average beside each row.

    python benchmarks/cost.py [--sizes 1000,10000,50000] [--only ROW,...] [--repeat 1]
                              [--wiki N=DIR ...] [--code LABEL=DIR ...] [--work DIR]

Wikis come from ``mkbigwiki.py`` (``../shared/tools/`` beside the repository, or
``--mkbigwiki``): a missing one is generated into ``--cache`` (default
``/tmp/llmwiki-cost-wikis/bigN``); ``--wiki N=DIR`` names one already built (never
modified: every revision works on its own ``cp -a`` copy under ``--work``, removed after its
size). Rows (``--only`` takes their keys):

* ``edit-index``: one page edited (not committed), then ``index --fast`` on the index
  built before the edit;
* ``edit-context``: the first fresh ``context --json`` after that index;
* ``staged``: a whole-tree ``check``, one page edited and staged, then the first
  ``check --staged --base HEAD`` (the pre-commit hook's first run);
* ``full-index``: ``index --fast`` with no ``.llmwiki/`` (the checker's scan cache present);
* ``cold-check``: ``check`` with no cache at all;
* ``mv``: ``llmwiki mv`` of one page (a commit; reset afterwards);
* ``suggest``: ``merge-pages --suggest --json``;
* ``clone-context``: a store of synthetic vectors under the local model's fingerprint (as
  ``benchmarks/indexref.py`` builds it: the model itself would take hours), ``index
  --publish``, a local ``git clone`` and fetch of ``refs/llmwiki/index``, then the clone's
  first ``context --json`` (measured alone; the local model embeds the question).

CPU is user + system of the measured process and every child it waited for (git included),
peak MB the largest resident set among them (``os.wait4``), wall the clock around it.
``--code LABEL=DIR`` also times the ``llmwiki_git`` package in DIR (``git archive REV
llmwiki_git | tar -x -C DIR``); this tree is always timed (its own directory on
``PYTHONPATH``). Revisions' runs are interleaved, so load changes hit them alike.
``PYTHONDONTWRITEBYTECODE`` and ``LLMWIKI_*`` are dropped from the environment (an installed
package has its bytecode; settings would change what is measured). A row that fails prints
``failed`` and the error's last line, and the others go on. Standard library only; always
exits 0 (a measurement, not a test). The synthetic store is built in a subprocess that
imports numpy and ``benchmarks/indexref.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIMEOUT = 3 * 3600  # seconds: any one command; 100,000 pages' full index takes minutes


@dataclass(frozen=True)
class Sample:
    cpu: float  # seconds, user + system, children included
    wall: float  # seconds
    peak_mb: float  # the largest resident set of the process and its children


class RowFailed(Exception):
    """A command of a row did not do what the row needs (its message: what happened)."""


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def env_for(code: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith(("LLMWIKI_", "GIT_"))
    }
    env.update(
        {
            "PYTHONPATH": str(code),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }
    )
    return env


def measure(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[Sample, int, str, str]:
    """Run ``cmd`` to its end; its sample, exit code, stdout and stderr. ``os.wait4`` gives
    the rusage of this one child (and the children it waited for), not of every child so far
    as ``RUSAGE_CHILDREN`` would (whose peak is the largest ever)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        deadline = started + TIMEOUT
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
            time.sleep(0.005)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        sample = Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)
        return (
            sample,
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def git(cwd: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    if done.returncode != 0:
        raise RowFailed(f"git {' '.join(args)}: {done.stderr.strip()[-300:]}")
    return done.stdout


class Copy:
    """One revision's copy of one wiki, and the steps of each row."""

    def __init__(self, label: str, source: Path, work: Path, code: Path) -> None:
        self.label = label
        self.root = work / label.replace(" ", "-").replace("/", "-")
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(source, self.root, symlinks=True)
        self.env = env_for(code)
        git(self.root, self.env, "update-index", "-q", "--refresh")
        self.head = git(self.root, self.env, "rev-parse", "HEAD").strip()
        self.llmwiki = [sys.executable, "-m", "llmwiki_git"]
        pages = sorted((self.root / "wiki" / "concepts").glob("*.md"))
        self.page = pages[len(pages) // 3]
        self.moved = pages[len(pages) // 2]
        self.original = self.page.read_bytes()
        self.edits = 0
        title = next(
            line
            for line in pages[0].read_text(encoding="utf-8").splitlines()
            if line.startswith("title:")
        )
        self.question = title.split(":", 1)[1].strip().strip('"').lower()
        self.cache = self.root / ".git" / "llmwiki"
        self.store = self.root / ".llmwiki"

    def cli(self, *args: str, ok: tuple[int, ...] = (0,), cwd: Path | None = None) -> Sample:
        sample, code, out, err = measure([*self.llmwiki, *args], cwd or self.root, self.env)
        if code not in ok:
            last = (err.strip() or out.strip() or f"exit {code}").splitlines()[-1]
            raise RowFailed(f"llmwiki {' '.join(args[:2])} exited {code}: {last[:200]}")
        return sample

    def edit(self) -> None:
        self.edits += 1
        self.page.write_bytes(
            self.original + f"\n\nEdit {self.edits}: now also [[missing-{self.edits}]].\n".encode()
        )

    def stage(self) -> None:
        git(self.root, self.env, "add", "--", self.page.relative_to(self.root).as_posix())

    def restore(self) -> None:
        """Back at the generated commit: no edit, nothing staged (stores and caches kept)."""
        git(self.root, self.env, "reset", "-q", "--hard", self.head)

    def indexed(self) -> None:
        """An index of the unedited wiki (unmeasured)."""
        self.restore()
        if not (self.store / "embeddings.json").exists():
            self.cli("index", "--fast")

    # -- the rows: each returns the measured command's sample ------------------------------

    def edit_index(self) -> Sample:
        self.indexed()
        self.edit()
        return self.cli("index", "--fast")

    def edit_context(self) -> Sample:
        self.indexed()
        self.edit()
        self.cli("index", "--fast")
        return self.context()

    def context(self, cwd: Path | None = None) -> Sample:
        sample, code, out, err = measure(
            [*self.llmwiki, "context", self.question, "--json"], cwd or self.root, self.env
        )
        if code != 0 or '"primary"' not in out:
            raise RowFailed(f"llmwiki context exited {code}: {(err.strip() or out)[-200:]}")
        return sample

    def staged(self) -> Sample:
        self.restore()
        shutil.rmtree(self.cache, ignore_errors=True)
        self.cli("check", ok=(0, 1))  # the whole-tree check a user ran before committing
        self.edit()
        self.stage()
        return self.cli("check", "--staged", "--base", "HEAD", ok=(1,))

    def full_index(self) -> Sample:
        self.restore()
        if not self.cache.exists():
            self.cli("check", ok=(0, 1))  # as after any check: the scan cache is there
        shutil.rmtree(self.store, ignore_errors=True)
        return self.cli("index", "--fast")

    def cold_check(self) -> Sample:
        self.restore()
        shutil.rmtree(self.cache, ignore_errors=True)
        return self.cli("check", ok=(1,))  # the generated wiki has broken links

    def mv(self) -> Sample:
        self.restore()
        old = self.moved.relative_to(self.root).as_posix()
        try:
            return self.cli("mv", old, old.removesuffix(".md") + "-moved.md", "--json")
        finally:
            self.restore()

    def suggest(self) -> Sample:
        self.restore()
        return self.cli("merge-pages", "--suggest", "--json")

    def clone_context(self) -> Sample:
        self.restore()
        shutil.rmtree(self.store, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, "-c", SYNTHETIC_STORE, str(HERE)],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if done.returncode != 0:
            raise RowFailed(f"the synthetic store: {done.stderr.strip()[-300:]}")
        self.cli("index")  # current: embeds nothing (as a publisher's index before publishing)
        self.cli("index", "--publish")
        clone = self.root.with_name(self.root.name + "-clone")
        shutil.rmtree(clone, ignore_errors=True)
        try:
            git(self.root.parent, self.env, "clone", "-q", str(self.root), str(clone))
            ref = "refs/llmwiki/index"
            git(clone, self.env, "fetch", "-q", "origin", f"{ref}:{ref}")
            return self.context(clone)
        finally:
            shutil.rmtree(clone, ignore_errors=True)
            shutil.rmtree(self.store, ignore_errors=True)  # the other rows use a --fast index


# The store a publisher's `llmwiki index` builds, with vectors made from each chunk's hash at
# numpy speed under the local model's fingerprint (benchmarks/indexref.py's stand-in: the
# model embeds ~20 chunks/s here, hours at these sizes). Run with the revision's PYTHONPATH.
SYNTHETIC_STORE = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from indexref import SyntheticEmbedder
from llmwiki_git.retrieval import indexer
from llmwiki_git.workspace import Workspace
folder = Path.cwd()
wiki = Workspace.open(folder, environ=dict(os.environ)).retrieval().wiki()
read, skipped = indexer.read_pages(wiki)
(folder / ".llmwiki").mkdir(exist_ok=True)
indexer.build(folder / ".llmwiki", read, SyntheticEmbedder(), skipped=skipped,
              names=indexer.names_digest(wiki))
"""


ROWS: dict[str, tuple[str, Callable[[Copy], Sample]]] = {
    "edit-index": ("`index --fast` after one page edited", Copy.edit_index),
    "edit-context": ("first fresh `context` after that index", Copy.edit_context),
    "staged": ("first `check --staged` after a whole-tree check", Copy.staged),
    "full-index": ("`index --fast`, full", Copy.full_index),
    "cold-check": ("cold `check` (no cache)", Copy.cold_check),
    "mv": ("`mv` of one page", Copy.mv),
    "suggest": ("`merge-pages --suggest`", Copy.suggest),
    "clone-context": (
        "fresh clone's first `context` from a published index",
        Copy.clone_context,
    ),
}


def find_generator(given: Path | None) -> Path | None:
    if given is not None:
        return given
    for folder in (ROOT, *ROOT.parents):
        candidate = folder.parent / "shared" / "tools" / "mkbigwiki.py"
        if candidate.is_file():
            return candidate
    return None


def wiki_for(size: int, given: dict[int, Path], cache: Path, generator: Path | None) -> Path:
    if size in given:
        return given[size]
    folder = cache / f"big{size}"
    if not (folder / ".done").exists():
        if generator is None:
            raise SystemExit(f"no wiki of {size} pages: give --wiki {size}=DIR or --mkbigwiki PATH")
        print(f"(generating {folder} with {generator} ...)", file=sys.stderr, flush=True)
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(generator), str(folder), str(size)], check=True)
    return folder


def cell(samples: list[Sample]) -> str:
    med = statistics.median
    return (
        f"{med(s.cpu for s in samples):.2f} / {med(s.wall for s in samples):.2f} / "
        f"{max(s.peak_mb for s in samples):,.0f}"
    )


def run_size(
    size: int,
    wiki: Path,
    codes: list[tuple[str, Path]],
    wanted: list[str],
    args: argparse.Namespace,
) -> dict[tuple[str, str], str]:
    """Every wanted row at one size, for every revision: prints the size's table and
    returns {(row, revision): cell}."""
    started = time.perf_counter()
    copies = [Copy(label, wiki, args.work / f"{size}", code) for label, code in codes]
    print(f"\n### {size:,} pages ({wiki})\n")
    print("| operation | revision | CPU s | wall s | peak MB | load avg (1/5/15) before |")
    print("|---|---|---|---|---|---|", flush=True)
    cells: dict[tuple[str, str], str] = {}
    for key in wanted:
        name, row = ROWS[key]
        before = load()
        samples: dict[str, list[Sample]] = {c.label: [] for c in copies}
        errors: dict[str, str] = {}
        for _ in range(args.repeat):
            for copy in copies:
                if copy.label in errors:
                    continue
                try:
                    samples[copy.label].append(row(copy))
                except (RowFailed, subprocess.TimeoutExpired, OSError) as exc:
                    errors[copy.label] = str(exc)
        for copy in copies:
            got = samples[copy.label]
            if copy.label in errors or not got:
                text = f"failed: {errors.get(copy.label, 'no run')}"
                print(f"| {name} | {copy.label} | {text} | | | {before} |", flush=True)
                cells[(key, copy.label)] = "failed"
                continue
            cpu = statistics.median(s.cpu for s in got)
            wall = statistics.median(s.wall for s in got)
            peak = max(s.peak_mb for s in got)
            print(
                f"| {name} | {copy.label} | {cpu:.2f} | {wall:.2f} | {peak:,.0f} | {before} |",
                flush=True,
            )
            cells[(key, copy.label)] = f"{cell(got)} ({before.split(' / ')[0]})"
    for copy in copies:
        shutil.rmtree(copy.root, ignore_errors=True)
    print(f"\n({size:,} pages took {time.perf_counter() - started:.0f} s; load now {load()})")
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000,50000",
        help="comma-separated page counts (default 1000,10000,50000; add 100000 for the largest)",
    )
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated row keys to run (default all: {','.join(ROWS)})",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="timed runs per row and revision (default 1)"
    )
    parser.add_argument(
        "--wiki",
        action="append",
        default=[],
        metavar="N=DIR",
        help="the wiki of N pages is DIR (built by mkbigwiki.py; never modified) (repeatable)",
    )
    parser.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also time the llmwiki_git package in DIR, labelled LABEL (repeatable)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("/tmp/llmwiki-cost-wikis"),
        help="where generated wikis are kept (default /tmp/llmwiki-cost-wikis)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/llmwiki-cost-bench"),
        help="where the copies go, removed after each size (default /tmp/llmwiki-cost-bench)",
    )
    parser.add_argument(
        "--mkbigwiki", type=Path, default=None, help="the wiki generator (default: found beside)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    wanted = [r.strip() for r in args.only.split(",") if r.strip()] or list(ROWS)
    unknown = [r for r in wanted if r not in ROWS]
    if unknown:
        parser.error(f"unknown row {', '.join(unknown)}; rows: {', '.join(ROWS)}")
    given = {int(n): Path(d).resolve() for n, _, d in (w.partition("=") for w in args.wiki)}
    codes = [
        (label, Path(code).resolve()) for label, _, code in (c.partition("=") for c in args.code)
    ]
    codes.append(("this tree", ROOT))
    generator = find_generator(args.mkbigwiki)
    print("## The cost table (issue 39)\n")
    print(
        f"- machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; load {load()}")
    print(f"- runs per row and revision: {args.repeat} (median; peak: the largest)")
    print(f"- revisions: {', '.join(f'{label} ({code})' for label, code in codes)}")
    cells: dict[int, dict[tuple[str, str], str]] = {}
    for size in sizes:
        wiki = wiki_for(size, given, args.cache, generator)
        cells[size] = run_size(size, wiki, codes, wanted, args)
    for label, _ in codes:
        print(f"\n### {label}: CPU s / wall s / peak MB (1-minute load before the row)\n")
        print("| operation | " + " | ".join(f"{s:,} pages" for s in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for key in wanted:
            row = " | ".join(cells[s].get((key, label), "") for s in sizes)
            print(f"| {ROWS[key][0]} | {row} |")
    print(f"\nload average at end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""What the stale check (`stale-page`, `source-missing`) adds to `llmwiki check`, on a
10,000-page wiki with 2,000 sources, in fresh processes.

    python benchmarks/stale.py [--repeat 5] [--base main] [--wiki DIR] [--keep DIR]

Builds the wiki with ``/work/shared/tools/mkbigwiki.py`` (10,000 pages of real corpus prose,
~125,000 links), then adds 2,000 sources (``sources/sNNNN.md``, 30-60 lines each) and gives 4,000
pages provenance as compile writes it (``sources:``, ``sourceBlobs:``, one to three
``^[sNNNN.md:L-L]`` citations), commits, and revises 20 sources in a second commit (so some
40 pages are stale). Two copies of that repository are timed, interleaved run by run: one
with this checkout's code, one with the code of ``--base`` (default ``main``, before the stale
check; exported with ``git archive``), each with its own cache:

* ``check`` (the work tree, warm caches) -- the issue's bar: the stale check adds < 10 %;
* ``check --rev HEAD`` after a new commit (a tree derived from the one checked before);
* the hook (``check --staged --base HEAD``) with one page edited, and with one source edited
  (the pages of a changed source are found with one ``git grep``);
* ``check --no-cache`` (the cold check: every page scanned).

Prints the machine, the load average before and after, and a markdown table of medians of
wall and CPU time (user + system of the process and its git children, steadier than wall time
on a shared machine) with the overhead in per cent. Standard library only; deterministic (``random.Random(27)``).
Always exits 0: a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import clean_env, machine_info  # noqa: E402  (the check benchmark's helpers)

HERE = Path(__file__).resolve().parent
MKBIGWIKI = Path("/work/shared/tools/mkbigwiki.py")
N_PAGES, N_SOURCES, FED_PAGES, REVISED = 10_000, 2_000, 4_000, 20


def git(root: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=clean_env(), input=data, capture_output=True, check=True
    ).stdout.decode()


def blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def build(base_wiki: Path, root: Path) -> dict[str, int]:
    """The big wiki copied to ``root``, with sources and provenance, in two commits."""
    shutil.copytree(base_wiki, root, symlinks=True)
    rng = random.Random(27)
    pages = sorted((root / "wiki/concepts").glob("*.md"))
    prose = [
        line
        for page in pages[:400]
        for line in page.read_text().splitlines()
        if len(line) > 60 and not line.startswith(("---", "title:", "summary:", "aliases:", "#"))
    ]
    prose = [re.sub(r"\[\[[^\]]*\]\]", "it", line) for line in prose]
    (root / "sources").mkdir()
    sources: dict[str, bytes] = {}
    for i in range(N_SOURCES):
        lines = [f"---\ntitle: Source {i}\nsourceType: markdown\n---\n\n# Source {i}\n"]
        lines += [rng.choice(prose) for _ in range(rng.randint(30, 60))]
        data = ("\n".join(lines) + "\n").encode()
        sources[f"s{i:04d}.md"] = data
        (root / "sources" / f"s{i:04d}.md").write_bytes(data)
    fed = rng.sample(pages, FED_PAGES)
    cites = 0
    for page in fed:
        names = rng.sample(sorted(sources), rng.randint(1, 2))
        text = page.read_text()
        head, body = text[4:].split("\n---\n", 1)
        extra = "sources:\n" + "".join(f"- sources/{n}\n" for n in names)
        extra += "sourceBlobs:\n" + "".join(
            f"  sources/{n}: {blob_id(sources[n])}\n" for n in names
        )
        marks = []
        for name in [rng.choice(names) for _ in range(rng.randint(1, 3))]:
            start = rng.randint(7, 30)
            marks.append(f"^[{name}:{start}-{start + rng.randint(0, 3)}]")
            cites += 1
        page.write_text(f"---\n{head}\n{extra}---\n{body.rstrip()} {' '.join(marks)}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sources and provenance")
    for name in rng.sample(sorted(sources), REVISED):
        (root / "sources" / name).write_bytes(sources[name] + b"A line added in revision.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "revise some sources")
    return {
        "pages": len(pages),
        "sources": N_SOURCES,
        "fed": FED_PAGES,
        "citations": cites,
        "revised": REVISED,
    }


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed runs per measurement and code (default 5)"
    )
    parser.add_argument(
        "--base", default="main", help="the code to compare with (a git revision of this checkout)"
    )
    parser.add_argument(
        "--wiki",
        type=Path,
        default=Path(tempfile.gettempdir()) / "llmwiki-bigwiki-10000",
        help="where mkbigwiki.py's 10,000-page wiki is (built there when absent)",
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="build the repositories here and keep them"
    )
    args = parser.parse_args(argv)
    if not (args.wiki / ".done").exists():
        subprocess.run([sys.executable, str(MKBIGWIKI), str(args.wiki), str(N_PAGES)], check=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="llmwiki-stale-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "after"
    if not repo.exists():
        stats = build(args.wiki, repo)
        (work / "stats.json").write_text(json.dumps(stats))
    stats = json.loads((work / "stats.json").read_text())
    before = work / "before"
    if not before.exists():
        shutil.copytree(repo, before, symlinks=True)
    code = work / "code-before"
    if not code.exists():
        code.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.base, "llmwiki_git"],
            cwd=HERE.parent,
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    versions = {"before": (before, str(code)), "after": (repo, str(HERE.parent))}
    print("\n".join(machine_info()))
    print(f"load average before: {loadavg()}")
    print(
        f"wiki: {stats['pages']} pages, {stats['sources']} sources, {stats['fed']} pages with provenance "
        f"({stats['citations']} citations), {stats['revised']} sources revised since"
    )

    def run(which: str, *check_args: str) -> float:
        """One fresh `llmwiki check` of ``which`` code on its own copy; its wall time."""
        root, path = versions[which]
        cmd = [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {path!r}); from llmwiki_git.cli import main; "
            "sys.argv = ['llmwiki', *sys.argv[1:]]; main()",
            "check",
            *check_args,
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=root, env=clean_env(), capture_output=True)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(
                f"{which}: check {' '.join(check_args)} failed: {done.stderr.decode()[-400:]}"
            )
        cpu.append(
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        )  # the process and its git children
        return elapsed

    results: dict[str, dict[str, list[float]]] = {}
    cpus: dict[str, dict[str, list[float]]] = {}
    cpu: list[float] = []

    def series(name: str, check_args: tuple[str, ...], prepare=None) -> None:  # type: ignore[no-untyped-def]
        for which in versions:
            run(which, *check_args)  # warm: caches written by this code
        for i in range(args.repeat):
            for which in versions:
                if prepare is not None:
                    prepare(versions[which][0], i)
                results.setdefault(name, {}).setdefault(which, []).append(run(which, *check_args))
                cpus.setdefault(name, {}).setdefault(which, []).append(cpu[-1])

    def edit_page(root: Path, i: int) -> None:
        target = sorted((root / "wiki/concepts").glob("*.md"))[100 + i]
        target.write_text(target.read_text() + f"\nEdited {i}.\n")
        git(root, "add", "-A")

    def edit_source(root: Path, i: int) -> None:
        git(root, "reset", "-q", "--hard", "HEAD")
        target = root / "sources" / f"s{1000 + i:04d}.md"
        target.write_bytes(target.read_bytes() + f"Edited {i}.\n".encode())
        git(root, "add", "-A")

    def new_commit(root: Path, i: int) -> None:
        git(root, "reset", "-q", "--hard", "HEAD")
        (root / "wiki/concepts" / f"bench-{i}.md").write_text(
            f"---\ntitle: Bench {i}\n---\nA page {time.time_ns()}.\n"
        )
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"bench {i}")

    inner: dict[str, list[float]] = {"before": [], "after": []}
    probe = (
        "import sys, time; sys.path.insert(0, {path!r}); from llmwiki_git.workspace import Workspace; "
        "import llmwiki_git.checks.engine; ws = Workspace.open(); t = time.process_time(); "
        "ws.check('worktree'); print(time.process_time() - t)"
    )
    for _ in range(
        3 * args.repeat
    ):  # the check alone, CPU, in a fresh process each (no start-up noise)
        for which, (root, path) in versions.items():
            done = subprocess.run(
                [sys.executable, "-c", probe.format(path=path)],
                cwd=root,
                env=clean_env(),
                capture_output=True,
                text=True,
            )
            inner[which].append(float(done.stdout.strip().splitlines()[-1]))
    series("`check`, whole work tree, warm", ())
    series("`check --rev HEAD`, a new commit (derived)", ("--rev", "HEAD"), new_commit)
    series(
        "hook: `check --staged --base HEAD`, one page edited",
        ("--staged", "--base", "HEAD"),
        edit_page,
    )
    series("hook, one source edited", ("--staged", "--base", "HEAD"), edit_source)
    series("`check --no-cache` (cold)", ("--no-cache",))
    print(f"load average after: {loadavg()}")
    b, a = statistics.median(inner["before"]), statistics.median(inner["after"])
    print(
        f"in process, `Workspace.check('worktree')` alone, CPU (median of {len(inner['after'])}): "
        f"before {b:.3f} s, after {a:.3f} s, added {100 * (a - b) / b:+.1f} %"
    )
    print()
    print(
        "| measurement (median) | before: wall / CPU s | after: wall / CPU s | added: wall / CPU |"
    )
    print("|---|---:|---:|---:|")
    for name, by in results.items():
        b, a = statistics.median(by["before"]), statistics.median(by["after"])
        cb, ca = statistics.median(cpus[name]["before"]), statistics.median(cpus[name]["after"])
        print(
            f"| {name} | {b:.3f} / {cb:.3f} | {a:.3f} / {ca:.3f} | {100 * (a - b) / b:+.1f} % / "
            f"{100 * (ca - cb) / cb:+.1f} % |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Link scanning and stripping on hostile pages (issue 22, item 4): each path, in fresh processes.

    python benchmarks/bracket_flood.py [--package DIR] [--timeout 400] [--only check,context,...]

Builds the demo wiki (``examples/demo``) in a temporary git repository plus one hostile page
at a time, and times the real CLI on it, wall clock and peak memory of the child:

* ``flood``: a page holding 2,000,000 ``[`` (one line, no closing bracket);
* ``links``: a 7 MB page of ``[[blobs]] `` repeated (about 700,000 resolved links).

Commands: ``check`` (the whole work tree), ``context`` (``context "what is a blob?" --json``
on a fresh lexical index: every chunk's links stripped for indexing, the MCP server's
``get_context_pack`` path), ``links`` (``llmwiki links <page>``) and ``mcp`` (the MCP
``check_links`` tool's function, ``citation_report``, on the page's text, in one process).
A normal 2 MB page of prose is the control row.

``--package DIR`` runs the ``llmwiki_git`` package in DIR (``git archive main llmwiki_git |
tar -x -C DIR``): the "before" column. The generous bound is ``--timeout`` seconds per run
(a run over it prints ``>N s``). Prints a markdown table; always exits 0 (a measurement).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "LLMWIKI_EMBEDDING_PROVIDER": "none",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "b@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LLMWIKI_NO_CACHE": "1",
}
LLMWIKI = [sys.executable, "-m", "llmwiki_git"]
PROSE = (
    "A blob stores the bytes of one file; a tree lists names, modes and blob ids. "
    "Renaming a file changes only the tree that lists it, never the blob. "
)


def pages() -> dict[str, bytes]:
    prose = (PROSE * (2_000_000 // len(PROSE) + 1))[:2_000_000]
    lines = "\n\n".join(prose[i : i + 700] for i in range(0, len(prose), 700))
    return {
        "control: 2 MB of prose": f"---\ntitle: Prose\n---\n{lines}\n".encode(),
        "flood: 2,000,000 '['": b"---\ntitle: Flood\n---\n" + b"[" * 2_000_000 + b"\n",
        "links: 7 MB of '[[blobs]] '": b"---\ntitle: Links\n---\n"
        + b"[[blobs]] " * 700_000
        + b"\n",
    }


MCP_SNIPPET = """
import sys, time
from pathlib import Path
from llmwiki_git.workspace import Workspace
from llmwiki_git.wiki.citations import citation_report
text = Path(sys.argv[1]).read_text(encoding="utf-8")
ws = Workspace.open(Path.cwd())
report = citation_report(text, ws.wiki("worktree"), None)
print(len(report))
"""


def run(args: list[str], cwd: Path, timeout: float) -> tuple[float | None, float]:
    """(wall seconds or None past the timeout, peak RSS in MB of the child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            rss = usage.ru_maxrss / 1024
            if proc.returncode not in (0, 1):
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                print(
                    f"  ({' '.join(args[3:5])} exit {proc.returncode}: {err.strip()[-200:]})",
                    file=sys.stderr,
                )
            return wall, rss
        if time.perf_counter() > deadline:
            proc.kill()
            _, _, usage = os.wait4(proc.pid, 0)
            return None, usage.ru_maxrss / 1024
        time.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--package", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=400.0)
    parser.add_argument("--only", default="check,context,links,mcp")
    opts = parser.parse_args()
    if opts.package is not None:
        ENV["PYTHONPATH"] = str(opts.package.resolve())
    wanted = opts.only.split(",")
    load = os.getloadavg()
    print(
        f"package: {opts.package or 'installed'}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
    )
    print("| page | command | wall s | peak MB |\n|---|---|---|---|")
    for name, data in pages().items():
        work = Path(tempfile.mkdtemp(prefix="llmwiki-flood-"))
        root = work / "repo"
        shutil.copytree(ROOT / "examples" / "demo", root)
        page = root / "wiki" / "concepts" / "hostile.md"
        page.write_bytes(data)
        (work / "page.txt").write_bytes(data)
        for args in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "-A"],
            ["git", "commit", "-q", "-m", "w"],
        ):
            subprocess.run(args, cwd=root, env=ENV, check=True)
        commands = {
            "check": [*LLMWIKI, "check"],
            "context": [*LLMWIKI, "context", "what is a blob?", "--json"],
            "links": [*LLMWIKI, "links", str(page)],
            "mcp": [sys.executable, "-c", MCP_SNIPPET, str(work / "page.txt")],
        }
        for command in wanted:
            if command == "context":  # a fresh lexical index each time (config.toml stays)
                for item in (root / ".llmwiki").iterdir():
                    if item.name not in ("config.toml", ".gitignore"):
                        shutil.rmtree(item) if item.is_dir() else item.unlink()
            wall, rss = run(commands[command], root, opts.timeout)
            shown = f">{opts.timeout:.0f}" if wall is None else f"{wall:.2f}"
            print(f"| {name} | {command} | {shown} | {rss:.0f} |", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

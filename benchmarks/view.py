#!/usr/bin/env python3
"""`llmwiki view` measured in a real browser (Debian's chromium through Playwright), and the
screenshots of docs/view.md.

    python ../shared/tools/mkbigwiki.py /tmp/big 10000
    python ../shared/tools/mkbigwiki.py /tmp/big1k 1000
    python benchmarks/view.py timings /tmp/big [--graph1k /tmp/big1k] [--repeat 5]
    python benchmarks/view.py screenshots docs/images

``timings`` copies the wiki (``cp -a``), stages one page edit as a candidate, starts
``llmwiki view`` as a process and loads each page: the first load (cold: the view's caches
and the checker's scan cache empty) and the median of ``--repeat`` loads after it, wall
clock from navigation start to the load event (``performance.timing``). The token visit
lands on the queue before anything is cached: its row is the cold queue. Then the graph's
frame rate: frames per second while the layout runs (each frame one layout step and one full
draw), counted with requestAnimationFrame for 3 s, and while panning a settled graph
(mouse drags, one draw per frame). ``screenshots`` builds a small wiki from the demo with an
offline compile run (a compile candidate, a page with provenance) and saves four PNGs.
Always exits 0 (a measurement, not a test)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    **os.environ,
    "LLMWIKI_EMBEDDING_PROVIDER": "none",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}
CHROMIUM = "/usr/bin/chromium"


def run(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout


def llmwiki(cwd: Path, *args: str) -> str:
    return run(cwd, sys.executable, "-m", "llmwiki_git", *args)


@contextmanager
def view(root: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmwiki_git", "view"],
        cwd=root,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(120)
    try:
        yield got[0].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a request still running: end it
            proc.kill()
            proc.wait()
        proc.stdout.close()


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield b
        finally:
            b.close()


def load_ms(page: Any, url: str) -> float:
    page.goto(url, wait_until="load", timeout=600_000)
    t = page.evaluate("JSON.stringify(performance.timing)")
    timing = json.loads(t)
    return float(timing["loadEventEnd"] or timing["loadEventStart"]) - float(
        timing["navigationStart"]
    )


FPS_JS = """async (ms) => {
  const g = window.llmwikiGraph;
  const f0 = g.frames, t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return (g.frames - f0) / ((performance.now() - t0) / 1000);
}"""

SETTLE_JS = """async () => {
  while (window.llmwikiGraph.running) await new Promise((r) => setTimeout(r, 200));
}"""


def pan_fps(page: Any, seconds: float = 3.0) -> float:
    page.evaluate(SETTLE_JS)
    box = page.locator("#graph").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    d0 = page.evaluate("window.llmwikiGraph.draws")
    page.mouse.move(x, y)
    page.mouse.down()
    t0 = time.perf_counter()
    step = 0
    while time.perf_counter() - t0 < seconds:
        step += 1
        page.mouse.move(x + 80 * ((step % 40) / 40 - 0.5), y + 40 * ((step % 20) / 20 - 0.5))
        page.evaluate("new Promise((r) => requestAnimationFrame(() => r(0)))")
    elapsed = time.perf_counter() - t0
    page.mouse.up()
    return float(page.evaluate("window.llmwikiGraph.draws") - d0) / elapsed


def graph_fps(page: Any, url: str) -> tuple[int, float, float]:
    page.goto(url, wait_until="load", timeout=600_000)
    nodes = int(
        page.evaluate("JSON.parse(document.getElementById('graph-data').textContent).nodes.length")
    )
    layout = float(page.evaluate(FPS_JS, 3000))
    return nodes, layout, pan_fps(page)


def timings(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "wiki"
        shutil.copytree(args.wiki, work, symlinks=True)
        run(work, "git", "update-index", "--refresh")
        pages = sorted(p for p in run(work, "git", "ls-files", "*.md").split() if p.count("/") >= 1)
        edited = work / pages[len(pages) // 2]
        edited.write_text(edited.read_text() + "\nAn added paragraph for the benchmark.\n")
        staged = json.loads(llmwiki(work, "review", "stage", "--restore", "--json"))
        cid = staged["staged"][0]["id"]
        target = pages[len(pages) // 3]
        rows = [
            ("review queue (2 candidates)", "/review"),
            ("a candidate", f"/review/{cid}"),
            ("a page", f"/page/{target}"),
            ("problems (/check)", "/check"),
            ("local graph of a page", f"/graph?page={target}"),
            ("whole graph (capped)", "/graph?all=1"),
        ]
        print(
            f"machine: {platform.machine()} {os.cpu_count()} cores, {platform.python_version()}, "
            f"load {os.getloadavg()[0]:.1f}, {len(pages):,} pages, "
            f"{time.strftime('%Y-%m-%d')}"
        )
        print("| page | first load ms | median of next ms |")
        print("|---|---|---|")
        with view(work) as url, browser() as b:
            page = b.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(900_000)
            cold = load_ms(page, url)  # the token visit lands on the queue: nothing cached
            print(f"| review queue, cold (the token visit) | {cold:,.0f} | |", flush=True)
            base = url.split("/?", 1)[0]
            for name, path in rows:
                first = load_ms(page, base + path)
                rest = [load_ms(page, base + path) for _ in range(args.repeat)]
                print(f"| {name} | {first:,.0f} | {statistics.median(rest):,.0f} |", flush=True)
            if args.loads_only:
                return
            fps = [graph_fps(page, base + "/graph?all=1")]
        print(f"load after: {os.getloadavg()[0]:.1f}")
        if args.graph1k:
            work1k = Path(tmp) / "wiki1k"
            shutil.copytree(args.graph1k, work1k, symlinks=True)
            run(work1k, "git", "update-index", "--refresh")
            with view(work1k) as url, browser() as b:
                page = b.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(900_000)
                page.goto(url)
                fps.insert(0, graph_fps(page, url.split("/?", 1)[0] + "/graph?all=1"))
        print(
            "\n| graph nodes | fps during layout | script ms per layout frame | fps while panning |"
        )
        print("|---|---|---|---|")
        for nodes, layout, per_frame, pan in fps:
            print(f"| {nodes:,} | {layout:.0f} | {per_frame:.1f} | {pan:.0f} |")


def screenshots(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "demo"
        shutil.copytree(ROOT / "examples" / "demo", repo, ignore=shutil.ignore_patterns(".llmwiki"))
        run(repo, "git", "init", "-q", "-b", "main")
        run(repo, "git", "add", "-A")
        run(
            repo,
            "git",
            "-c",
            "user.name=Demo",
            "-c",
            "user.email=demo@example.invalid",
            "commit",
            "-qm",
            "demo",
        )
        inbox = repo / "inbox"
        inbox.mkdir()
        (inbox / "packfiles.md").write_text(PACKFILES)
        llmwiki(repo, "ingest", str(inbox / "packfiles.md"))
        llmwiki(repo, "compile", "--publish")
        (inbox / "refs.md").write_text(REFS)
        llmwiki(repo, "ingest", str(inbox / "refs.md"))
        llmwiki(repo, "compile")
        rows = json.loads(llmwiki(repo, "review", "list", "--json"))["candidates"]
        cid = rows[0]["id"]
        trees = repo / "wiki" / "concepts" / "trees.md"
        trees.write_text(trees.read_text() + "\nA tree's id changes when any entry changes.\n")
        llmwiki(repo, "review", "stage", "--restore", "wiki/concepts/trees.md")
        with view(repo) as url, browser() as b:
            page = b.new_page(viewport={"width": 1200, "height": 860})
            page.goto(url)
            base = url.split("/?", 1)[0]
            shots = [
                ("view-queue.png", "/review"),
                ("view-compile-candidate.png", f"/review/{cid}"),
                ("view-page-provenance.png", "/page/wiki/concepts/packfiles.md"),
                ("view-graph.png", "/graph?page=wiki/concepts/packfiles.md"),
            ]
            for name, path in shots:
                page.goto(base + path)
                if "graph" in path:
                    page.evaluate(SETTLE_JS)
                page.screenshot(path=str(out / name), full_page="candidate" in name)
                print(out / name)


PACKFILES = """# How git packs objects

Git first stores every object loose: one zlib-compressed file per blob, tree or commit.
When there are many, `git gc` packs them into a packfile with an index beside it.

Inside a pack, an object can be stored as a delta against a similar object, which is how
a long history of small edits to one file stays small.

A tree lists blobs and other trees by name; packing changes how they are stored, never
their ids, because an id is the hash of the object's content. See also blobs and trees.
"""

REFS = """# Refs and branches

A branch is a ref: a file holding one commit id. Moving a branch is writing a new id into
that file, which is why creating and deleting branches is cheap.

An update of a ref can be made conditional on its old value (compare-and-swap), so two
writers never lose each other's commits.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    t = sub.add_parser("timings", help="page loads and graph frame rates")
    t.add_argument("wiki", type=Path, help="a wiki built by mkbigwiki.py (10,000 pages)")
    t.add_argument("--graph1k", type=Path, help="a 1,000-page wiki for the 1,000-node graph")
    t.add_argument("--repeat", type=int, default=5)
    t.add_argument("--loads-only", action="store_true", help="page loads, no frame rates")
    s = sub.add_parser("screenshots", help="the PNGs of docs/view.md")
    s.add_argument("out", help="the folder to write them to (docs/images)")
    args = parser.parse_args()
    timings(args) if args.what == "timings" else screenshots(args)


if __name__ == "__main__":
    main()

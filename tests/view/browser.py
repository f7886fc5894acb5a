"""Helpers of the browser tests: Debian's chromium driven by Python Playwright (never a
downloaded browser), and `llmwiki view` started as a real process on a real repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
AXE = Path(__file__).with_name("vendor") / "axe-core" / "axe.min.js"


def chromium_path() -> str:
    """Where chromium is; the test skips without one, except in CI, where it fails."""
    found = next((p for p in CHROMIUM_PATHS if os.path.exists(p)), None) or shutil.which("chromium")
    if found is None:
        message = "no chromium found: install Debian's package (apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; CI must run the browser test (.ci/run installs it)")
        pytest.skip(message)
    return found


@contextmanager
def browser() -> Iterator[Any]:
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def view_process(root: Path, *args: str) -> Iterator[str]:
    """`llmwiki view ARGS` in ``root`` as a real process; yields the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmwiki_git", "view", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LLMWIKI_EMBEDDING_PROVIDER": "none"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(60)
    try:
        assert line and line[0].startswith("http://127.0.0.1:"), (
            f"no URL printed: {line!r} {proc.poll()}"
        )
        yield line[0].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()

"""Issue 12: each attack an outsider can mount with files and git plumbing, as a test.

Real repositories in tmp_path and the real CLI in subprocesses; nothing we own is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, Repo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
TOKEN = "ghp_SECRETTOKEN1234567890"


def demo_in(repo: Repo, layout: str) -> str:
    """The demo wiki in ``layout`` (``wiki`` folder or a vault at the root); returns the
    prefix pages live under."""
    shutil.copytree(REPO_ROOT / "examples" / "demo", repo.root, dirs_exist_ok=True)
    if layout == "vault":
        for item in (repo.root / "wiki").iterdir():
            shutil.move(str(item), repo.root / item.name)
        (repo.root / "wiki").rmdir()
        shutil.rmtree(repo.root / ".llmwiki")
        (repo.root / "index.md").write_text("# My vault home\n\nHand-written [[blobs]] index.\n")
    repo.commit("demo wiki")
    repo.git("config", "remote.origin.url", f"https://user:{TOKEN}@example.com/r.git")
    return "wiki/" if layout == "wiki" else ""


def leak_free(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert "top-secret-env" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_symlinked_pages_into_dot_git_or_dotenv_are_never_read(repo: Repo, layout: str) -> None:
    prefix = demo_in(repo, layout)
    up = "../.." if prefix else ".."
    repo.write(".env", "API_KEY=top-secret-env remote origin url\n")
    (repo.root / ".gitignore").write_text(".env\n")
    os.symlink(f"{up}/.git/config", repo.root / f"{prefix}concepts/gitcfg.md")
    os.symlink(f"{up}/.env", repo.root / f"{prefix}concepts/dotenv.md")
    os.symlink("blobs.md", repo.root / f"{prefix}concepts/blob-alias.md")  # inside: still a page
    for args in (["query", "remote origin url"], ["context", "remote origin url API_KEY", "--json"],
                 ["index"], ["query", "remote origin url"]):
        leak_free(repo.llmwiki(*args, env=FAST))
    check = repo.llmwiki("check", "--json", env=FAST)
    leak_free(check)
    assert check.stdout, check.stderr
    found = {(p["path"], p["code"]) for p in json.loads(check.stdout)["problems"]}
    assert (f"{prefix}concepts/gitcfg.md", "symlink-escape") in found
    assert (f"{prefix}concepts/dotenv.md", "symlink-escape") in found
    assert not any(path.endswith("blob-alias.md") for path, _ in found)
    pack = json.loads(repo.llmwiki("context", "blobs", "--json", env=FAST).stdout)
    assert "concepts/blob-alias" in json.dumps(pack) or "concepts/blobs" in json.dumps(pack)


def test_symlink_in_a_pull_request_is_reported_not_read(repo: Repo) -> None:
    prefix = demo_in(repo, "wiki")
    base = repo.git("rev-parse", "HEAD").strip()
    os.symlink("../../.git/config", repo.root / f"{prefix}concepts/gitcfg.md")
    head = repo.commit("add a symlink")
    proc = repo.llmwiki("check", "--json", "--base", base, "--head", head)
    leak_free(proc)
    assert ("wiki/concepts/gitcfg.md", "symlink-escape") in {
        (p["path"], p["code"]) for p in json.loads(proc.stdout)["problems"]}


def sources_demo(repo: Repo, cite: str) -> None:
    demo_in(repo, "wiki")
    repo.write("wiki/concepts/blobs.md", f"---\ntitle: Blobs\n---\nBlob facts ^[{cite}:1-2].\n")
    repo.commit("cite a source")


def test_sources_folder_symlinked_to_etc_is_refused(repo: Repo) -> None:
    sources_demo(repo, "passwd")
    os.symlink("/etc", repo.root / "sources")
    proc = repo.llmwiki("context", "blob facts", "--json", "--include-sources", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "root:" not in proc.stdout
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert blobs["sourceWindows"] == []
    assert any("leaves" in w["message"] for w in blobs["warnings"])


def test_fifo_source_is_refused_at_once(repo: Repo) -> None:
    sources_demo(repo, "pipe.txt")
    (repo.root / "sources").mkdir()
    os.mkfifo(repo.root / "sources" / "pipe.txt")
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [*repo.llmwiki_cmd(), "context", "blob facts", "--json", "--include-sources"],
            cwd=repo.root, capture_output=True, text=True, timeout=60, env={**os.environ, **FAST})
    except subprocess.TimeoutExpired:
        pytest.fail("context hung on a FIFO under sources/")
    assert proc.returncode == 0, proc.stderr
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert any("FIFO" in w["message"] for w in blobs["warnings"]), blobs["warnings"]
    assert time.monotonic() - started < 60


def test_huge_sparse_source_is_refused_without_reading_it(repo: Repo) -> None:
    sources_demo(repo, "big.txt")
    (repo.root / "sources").mkdir()
    with open(repo.root / "sources" / "big.txt", "wb") as handle:
        handle.write(b"line one\nline two\n")
        handle.truncate(300 * 1024 * 1024)
    proc = repo.llmwiki("context", "blob facts", "--json", "--include-sources", env=FAST)
    assert proc.returncode == 0, proc.stderr
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert blobs["sourceWindows"] == []
    assert any("over the 16 MB limit" in w["message"] for w in blobs["warnings"]), blobs["warnings"]


def test_committed_activity_log_symlink_is_not_written_through(repo: Repo, tmp_path: Path) -> None:
    demo_in(repo, "wiki")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, repo.root / ".llmwiki" / "activity.log")
    repo.git("add", "-f", ".llmwiki/activity.log")
    repo.git("commit", "-q", "-m", "a hostile symlink")
    proc = repo.llmwiki("query", "what is a blob?", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert "activity-log-refused" in proc.stderr


def test_symlinked_state_folder_is_refused(repo: Repo, tmp_path: Path) -> None:
    demo_in(repo, "wiki")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(repo.root / ".llmwiki")
    os.symlink(elsewhere, repo.root / ".llmwiki")
    proc = repo.llmwiki("query", "what is a blob?", env=FAST)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1 and "symlink" in proc.stderr
    assert list(elsewhere.iterdir()) == []

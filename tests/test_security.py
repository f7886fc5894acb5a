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


# --- hostile review candidates ------------------------------------------------------------

def forge(repo: Repo, cid: str, target: str, mode: str = "100644", content: bytes = b"Forged [[blobs]] answer.\n",
          *, sha: str | None = None, base: str | None = None) -> str:
    """A candidate branch built with git plumbing only, as an outsider could push it: one
    commit on ``base`` adding ``target`` with ``mode``, trailers and a body digest that match."""
    from llmwiki_git.review.candidates import body_digest

    base = base or repo.git("rev-parse", "HEAD").strip()
    if sha is None:
        sha = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=content,
                             capture_output=True, check=True).stdout.decode().strip()
    tree = _tree_with(repo, f"{base}^{{tree}}", target.split("/"), mode, sha)
    message = (f"llmwiki: candidate {cid}\n\nQuestion: forged\n\nLlmwiki-Candidate: {cid}\n"
               f"Llmwiki-Kind: validated-answer/1\nLlmwiki-Target: {target}\nLlmwiki-Precondition: absent\n"
               f"Llmwiki-Body-Digest: {body_digest(content)}\nLlmwiki-Base: {base}\n")
    commit = repo.git("commit-tree", tree, "-p", base, "-m", message).strip()
    repo.git("update-ref", f"refs/heads/llmwiki/review/{cid}", commit)
    return commit


def _tree_with(repo: Repo, tree: str | None, parts: list[str], mode: str, sha: str) -> str:
    """``tree`` with ``parts`` set to (mode, sha), built with mktree (which, unlike the
    index, lets a path through ``.git`` in, as a hostile push can)."""
    entries = {}
    if tree is not None:
        for line in repo.git("ls-tree", "-z", tree).split("\0"):
            if line:
                meta, name = line.split("\t", 1)
                entries[name] = meta
    if len(parts) == 1:
        kind = "commit" if mode == "160000" else "blob"
        entries[parts[0]] = f"{mode} {kind} {sha}"
    else:
        old = entries.get(parts[0])
        sub = _tree_with(repo, old.split()[2] if old else None, parts[1:], mode, sha)
        entries[parts[0]] = f"040000 tree {sub}"
    text = "".join(f"{meta}\t{name}\0" for name, meta in entries.items())
    return subprocess.run(["git", "mktree", "-z"], cwd=repo.root, input=text, capture_output=True, text=True,
                          check=True).stdout.strip()


HOSTILE = [
    ("cfg-00000001", "wiki/queries/cfg.md", "120000", b"../../.git/config", "not-a-regular-file"),
    ("exe-00000002", "wiki/queries/exe.md", "100755", b"Forged [[blobs]] answer.\n", "not-a-regular-file"),
    ("sub-00000003", "wiki/queries/sub.md", "160000", None, "not-a-regular-file"),
    ("x-00000004", "notes/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("evil-00000005", "queries/evil.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("x-00000006", ".github/workflows/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("x-00000007", "wiki/concepts/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("x-00000008", ".git/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
]


@pytest.mark.parametrize("cid,target,mode,content,code", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_candidates_are_refused_by_show_and_approve(repo: Repo, cid: str, target: str, mode: str,
                                                             content: bytes | None, code: str) -> None:
    demo_in(repo, "wiki")
    tip = repo.git("rev-parse", "HEAD").strip()
    forge(repo, cid, target, mode, content or b"", sha=tip if content is None else None)
    shown = repo.llmwiki("review", "show", cid, "--json", env=FAST)
    assert shown.returncode == 0, shown.stderr
    verdict = json.loads(shown.stdout)["verdict"]
    assert verdict["ok"] is False and verdict["code"] == code, verdict
    approved = repo.llmwiki("review", "approve", cid, env=FAST)
    leak_free(approved)
    assert approved.returncode == 1 and "reject it" in approved.stderr, approved.stderr
    assert repo.git("rev-parse", "HEAD").strip() == tip
    assert not (repo.root / "wiki" / "queries").exists()
    leak_free(repo.llmwiki("query", "remote origin url", env=FAST))


def test_one_gitlink_candidate_never_breaks_the_others(repo: Repo) -> None:
    demo_in(repo, "wiki")
    tip = repo.git("rev-parse", "HEAD").strip()
    forge(repo, "sub-00000003", "wiki/queries/sub.md", "160000", sha=tip)
    good = "good-0000000a"
    forge(repo, good, "wiki/queries/good.md", content=b"A blob is content [[blobs]].\n")
    listed = repo.llmwiki("review", "list", "--json", env=FAST)
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)["candidates"]}
    assert rows[good]["citationStatus"] == "1 resolved, 0 pending, 0 broken"
    assert rows["sub-00000003"]["citationStatus"] == "malformed" and "gitlink" in rows["sub-00000003"]["notes"][0]
    text = repo.llmwiki("review", "list", env=FAST)
    assert text.returncode == 0 and "warning: sub-00000003" in text.stderr
    approved = repo.llmwiki("review", "approve", good, env=FAST)
    assert approved.returncode == 0, approved.stderr
    assert (repo.root / "wiki" / "queries" / "good.md").read_text() == "A blob is content [[blobs]].\n"


def test_reject_works_when_the_rejected_ref_exists(repo: Repo) -> None:
    demo_in(repo, "wiki")
    first = forge(repo, "why-0000000b", "wiki/queries/why.md")
    repo.git("update-ref", "refs/llmwiki/rejected/why-0000000b", first)
    repo.git("update-ref", "-d", "refs/heads/llmwiki/review/why-0000000b")
    second = forge(repo, "why-0000000b", "wiki/queries/why.md", content=b"Another [[blobs]] answer.\n")
    proc = repo.llmwiki("review", "reject", "why-0000000b")
    assert proc.returncode == 0, proc.stderr
    assert repo.git("rev-parse", "refs/llmwiki/rejected/why-0000000b").strip() == first
    assert repo.git("rev-parse", "refs/llmwiki/rejected/why-0000000b-2").strip() == second
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""

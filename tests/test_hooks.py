"""The hook for real: the pre-commit framework and the plain git hook refuse and accept commits."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, Repo

BROKEN = "[[does-not-exist]]"


def _wiki_repo(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", "# Alpha\nSee [[beta]].\n")
    repo.write("wiki/concepts/beta.md", "# Beta\n")
    repo.write("wiki/concepts/untouched.md", "Also [[beta]].\n")
    repo.commit("seed")


def _commit(repo: Repo, message: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    repo.git("add", "-A")
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo.root, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def _scenario(repo: Repo, env: dict[str, str] | None = None) -> None:
    """Refused on a broken link, accepted once fixed, refused when a rename breaks an untouched page."""
    last = repo.git("log", "--format=%s", "-1").strip()
    repo.write("wiki/concepts/alpha.md", f"# Alpha\nSee [[beta]] and {BROKEN}.\n")
    refused = _commit(repo, "add a broken link", env)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "wiki/concepts/alpha.md:2:18: broken link [[does-not-exist]]" in refused.stdout + refused.stderr
    assert repo.git("log", "--format=%s", "-1").strip() == last

    repo.write("wiki/concepts/alpha.md", "# Alpha\nSee [[beta]] and [[alpha]].\n")
    accepted = _commit(repo, "fix the link", env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert repo.git("log", "--format=%s", "-1").strip() == "fix the link"

    repo.git("mv", "wiki/concepts/beta.md", "wiki/concepts/beta-two.md")
    repo.write("wiki/concepts/alpha.md", "# Alpha\nSee [[beta-two]] and [[alpha]].\n")
    renamed = _commit(repo, "rename beta", env)
    assert renamed.returncode != 0
    assert "wiki/concepts/untouched.md:1:6: broken link [[beta]]" in renamed.stdout + renamed.stderr
    assert repo.git("log", "--format=%s", "-1").strip() == "fix the link"


def test_plain_git_hook_installed_by_cli(repo: Repo) -> None:
    _wiki_repo(repo)
    proc = repo.llmwiki("hooks", "install")
    assert proc.returncode == 0, proc.stderr
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK)
    assert f'LLMWIKI_PYTHON={shlex.quote(sys.executable)}' in hook.read_text()
    _scenario(repo)
    # a second install replaces our own hook; a foreign hook is refused without --force
    assert repo.llmwiki("hooks", "install").returncode == 0
    hook.write_text("#!/bin/sh\necho mine\n")
    proc = repo.llmwiki("hooks", "install")
    assert proc.returncode == 1 and "--force" in proc.stderr
    assert repo.llmwiki("hooks", "install", "--force").returncode == 0


def test_repo_hook_script_matches_packaged_one() -> None:
    assert (REPO_ROOT / "hooks" / "pre-commit").read_text() == (REPO_ROOT / "llmwiki_git" / "data" / "pre-commit").read_text()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A committed copy of this checkout, as pre-commit would clone it."""
    dest = tmp_path_factory.mktemp("hookrepo") / "llmwiki-git"
    shutil.copytree(REPO_ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", "tests", "benchmarks", "*.egg-info", "__pycache__", "build", ".pytest_cache", "examples"))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "hook repo"]):
        subprocess.run(["git", *args], cwd=dest, check=True, env=env, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True, text=True, env=env).stdout.strip()
    return dest, sha


@pytest.mark.slow
def test_pre_commit_framework_hook(repo: Repo, hook_repo: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> None:
    if shutil.which("pre-commit") is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    path, sha = hook_repo
    _wiki_repo(repo)
    repo.write(".pre-commit-config.yaml", f"repos:\n- repo: {path}\n  rev: {sha}\n  hooks:\n  - id: llmwiki-check\n")
    repo.commit("add pre-commit config")
    env = {"PRE_COMMIT_HOME": str(tmp_path_factory.getbasetemp() / "pre-commit-home")}
    install = subprocess.run(["pre-commit", "install"], cwd=repo.root, capture_output=True, text=True, env={**os.environ, **env})
    assert install.returncode == 0, install.stderr
    _scenario(repo, env)
    run = subprocess.run(["pre-commit", "run", "--all-files"], cwd=repo.root, capture_output=True, text=True, env={**os.environ, **env})
    assert run.returncode == 1 and "llmwiki check (broken wikilinks)" in run.stdout

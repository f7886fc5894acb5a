"""Offline `llmwiki compile` on real root-layout vaults (Foam docs, a Dendron vault): a few of
their own notes are ingested as sources, the run is staged as one candidate that the gate
(`check --base --head`) accepts, approved, and a second compile finds nothing to do; the
vault's hand-written index.md and the user's log.md are never touched."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from ..conftest import Repo
from .conftest import corpus

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
USER_LOG = b"# What changed\n\nOur own journal.\n"


def _copy(name: str, repo: Repo) -> None:
    shutil.copytree(corpus(name), repo.root, dirs_exist_ok=True)
    for dirpath, _dirs, files in os.walk(repo.root):  # the shared copy is read-only
        if ".git" in Path(dirpath).parts:
            continue
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        for file in files:
            os.chmod(
                os.path.join(dirpath, file),
                stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH,
            )


@pytest.mark.parametrize("name", ["foam-docs", "dendron-vault"])
def test_offline_compile_of_a_vaults_own_notes(repo: Repo, name: str) -> None:
    _copy(name, repo)
    (repo.root / "log.md").write_bytes(USER_LOG)
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit(name)
    home = (repo.root / "index.md").read_bytes() if (repo.root / "index.md").exists() else None
    notes = sorted(
        (
            p
            for p in repo.root.rglob("*.md")
            if ".git" not in p.parts and p.name not in ("index.md", "log.md")
        ),
        key=lambda p: (-p.stat().st_size, p.as_posix()),
    )[:6]
    ingested = repo.llmwiki(
        "ingest", *[p.relative_to(repo.root).as_posix() for p in notes], env=FAST
    )
    assert ingested.returncode == 0, ingested.stderr
    before = repo.llmwiki("check", "--json", env=FAST)
    broken_before = len(
        [p for p in json.loads(before.stdout)["problems"] if p["severity"] == "error"]
    )

    staged = repo.llmwiki("compile", "--json", env=FAST)
    assert staged.returncode == 0, staged.stderr
    run = json.loads(staged.stdout)
    assert len(run["pages"]) == 6 and run["candidate"]["id"].startswith("compile-")
    assert all(p["target"].startswith("concepts/") for p in run["pages"])
    linked = sum(
        repo.git("show", f"{run['candidate']['branch']}:{p['target']}").count("[[")
        for p in run["pages"]
    )
    assert linked > 0  # the notes link pages of the vault their sources mention
    gate = repo.llmwiki("check", "--base", "main", "--head", run["candidate"]["branch"], env=FAST)
    assert gate.returncode == 0, gate.stdout + gate.stderr  # the run breaks no link

    approved = repo.llmwiki("review", "approve", run["candidate"]["id"], env=FAST)
    assert approved.returncode == 0, approved.stderr
    after = repo.llmwiki("check", "--json", env=FAST)
    assert (
        len([p for p in json.loads(after.stdout)["problems"] if p["severity"] == "error"])
        == broken_before
    )
    again = repo.llmwiki("compile", env=FAST)
    assert again.returncode == 0 and again.stdout.startswith(
        "Nothing to compile: 6 sources up to date"
    ), again.stdout
    if home is not None:
        assert (repo.root / "index.md").read_bytes() == home
    assert (repo.root / "log.md").read_bytes() == USER_LOG
    assert repo.git("status", "--porcelain") == ""

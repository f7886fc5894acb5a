"""Ownership of generated files on a real root-layout vault: a copy of the Foam docs (the
corpus folder: ``$LLMWIKI_CORPORA``, else ../shared/corpora) keeps its hand-written home ``index.md`` and a user ``log.md``
byte-identical through `index`, `query --save` and `--save --review` + `review approve`."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from ..conftest import Repo
from .conftest import corpus

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
USER_LOG = b"# What changed\n\nWe moved the recipes around in March.\n"


@pytest.fixture
def foam(repo: Repo) -> Repo:
    shutil.copytree(corpus("foam-docs"), repo.root, dirs_exist_ok=True)
    for dirpath, _dirs, files in os.walk(repo.root):  # the shared copy is read-only
        if ".git" in Path(dirpath).parts:
            continue
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        for name in files:
            os.chmod(
                os.path.join(dirpath, name),
                stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH,
            )
    (repo.root / "log.md").write_bytes(USER_LOG)
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("foam docs")
    return repo


def test_foam_home_page_and_user_log_survive_every_write(foam: Repo) -> None:
    home = (foam.root / "index.md").read_bytes()

    def untouched() -> None:
        assert (foam.root / "index.md").read_bytes() == home
        assert (foam.root / "log.md").read_bytes() == USER_LOG
        assert foam.git("diff", "HEAD", "--", "index.md", "log.md") == ""
        assert foam.git("log", "--format=%h", "--", "index.md", "log.md").count("\n") == 1

    assert foam.llmwiki("index", env=FAST).returncode == 0
    untouched()
    question = "how do I create a new note from a template?"
    saved = foam.llmwiki("query", question, "--save", env=FAST)
    assert saved.returncode == 0, saved.stderr
    assert foam.git("show", "--name-only", "--format=", "HEAD").split() == [
        "queries/how-do-i-create-a-new-note-from-a-template.md"
    ]
    untouched()
    assert foam.llmwiki("index", env=FAST).returncode == 0  # queries/ exists now
    untouched()
    staged = foam.llmwiki(
        "query", "how do I sync notes between devices?", "--save", "--review", env=FAST
    )
    assert staged.returncode == 0, staged.stderr
    cid = re.search(r"Staged review candidate (\S+)", staged.stderr).group(1)  # type: ignore[union-attr]
    approved = foam.llmwiki("review", "approve", cid, env=FAST)
    assert approved.returncode == 0, approved.stderr
    untouched()
    assert (
        subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=foam.root,
            capture_output=True,
            text=True,
        ).stdout
        == ""
    )
    assert (
        "Saved: [[how-do-i-create-a-new-note-from-a-template]]"
        in (foam.root / ".llmwiki" / "log.md").read_text()
    )

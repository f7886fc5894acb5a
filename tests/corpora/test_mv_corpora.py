"""`llmwiki mv` on real wikis (issue 28): the page with the most inbound links renamed in a
git copy of Foam's and Dendron's documentation; every link follows it, `check` finds exactly
what it found before (the moved page's own problems now under its new path)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections import Counter
from pathlib import Path

import pytest

from ..conftest import Repo, run_in_process
from .conftest import corpus


def _git_copy(name: str, tmp_path: Path) -> Repo:
    root = tmp_path / name
    shutil.copytree(corpus(name), root)
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP)
        for file in files:
            os.chmod(os.path.join(dirpath, file), stat.S_IRUSR | stat.S_IWUSR)
    repo = Repo(root)
    repo.git("init", "-q", "-b", "main")
    repo.commit("corpus")
    return repo


def _problems(repo: Repo) -> Counter[str]:
    found = json.loads(run_in_process(repo.root, ["check", "--json"]).stdout)["problems"]
    return Counter(p["code"] for p in found)


@pytest.mark.parametrize(
    ("name", "old", "new", "links", "pages", "files"),
    [
        (
            "foam-docs",
            "user/features/templates.md",
            "user/features/note-templates.md",
            13,
            12,
            2 + 12,
        ),
        (
            "dendron-vault",
            "changelog.md",
            "dendron.changelog.md",
            89,
            89,
            2 + 88,
        ),  # 88 pages and the page itself
    ],
)
def test_mv_the_most_linked_page(
    tmp_path: Path, name: str, old: str, new: str, links: int, pages: int, files: int
) -> None:
    repo = _git_copy(name, tmp_path)
    before = _problems(repo)
    plan = json.loads(run_in_process(repo.root, ["mv", old, new, "--dry-run", "--json"]).stdout)
    assert (plan["links"], plan["pages"], plan["refusals"]) == (links, pages, [])
    done = run_in_process(repo.root, ["mv", old, new])
    assert done.returncode == 0, done.stderr
    assert f"rewrote {links} links in {pages} pages" in done.stdout
    assert repo.git("status", "--porcelain") == ""
    changed = repo.git("show", "--no-renames", "--name-only", "--format=", "HEAD").split()
    assert len(changed) == files  # the old path, the new one, every other linking page
    assert _problems(repo) == before  # nothing broke, nothing new
    diff = repo.git("diff", "HEAD~1", "HEAD", "-M", "--numstat").splitlines()
    assert all(
        line.split("\t")[:2] == ["1", "1"] or line.split("\t")[0] == line.split("\t")[1]
        for line in diff
    )


def _staged(repo: Repo, *args: str) -> dict[str, object]:
    proc = run_in_process(repo.root, list(args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    assert out["refusals"] == [] and isinstance(out["candidate"], dict)
    return out


def _approve(repo: Repo, out: dict[str, object]) -> None:
    candidate = out["candidate"]
    assert isinstance(candidate, dict)
    shown = json.loads(
        run_in_process(repo.root, ["review", "show", str(candidate["id"]), "--json"]).stdout
    )
    assert shown["verdict"]["ok"] is True, shown["verdict"]
    done = run_in_process(repo.root, ["review", "approve", str(candidate["id"])])
    assert done.returncode == 0, done.stderr
    assert repo.git("status", "--porcelain") == ""


def test_mv_review_and_merge_pages_on_foam(tmp_path: Path) -> None:
    """Round two on Foam's documentation (a root-layout vault with its own index.md): the page
    with the most inbound links moved through a review candidate, then two real pages merged;
    `check` finds what it found before each time."""
    repo = _git_copy("foam-docs", tmp_path)
    before = _problems(repo)
    old, new = "user/features/templates.md", "user/features/note-templates.md"
    moved = _staged(repo, "mv", old, new, "--review", "--json")
    assert (moved["links"], moved["pages"]) == (13, 12)
    assert (
        repo.git("status", "--porcelain") == "" and (repo.root / old).exists()
    )  # nothing moved yet
    _approve(repo, moved)
    assert not (repo.root / old).exists() and (repo.root / new).is_file()
    assert _problems(repo) == before

    keep, fold = "user/features/wikilinks.md", "user/features/link-reference-definitions.md"
    merged = _staged(repo, "merge-pages", keep, fold, "--json")
    assert (merged["links"], merged["pages"], merged["aliasesAdded"]) == (
        4,
        4,
        ["Link Reference Definitions"],
    )
    _approve(repo, merged)
    assert not (repo.root / fold).exists()
    assert "# Link Reference Definitions" in (repo.root / keep).read_text()
    assert _problems(repo) == before

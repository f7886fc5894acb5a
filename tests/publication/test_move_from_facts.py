"""`llmwiki mv` after a check reads the pages the move touches, not the wiki (issue 39): the
checker's facts for HEAD's tree name the pages linking to the moved one, and the table of
contents is the committed (or local) one with the moved page's entry changed. Everything it
writes and says is what a run without the cache writes and says, in both layouts, also when a
page was edited and committed after the check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llmwiki_git.checks import neighbours
from llmwiki_git.wiki.model import ScanTally
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix, page, run_in_process
from .test_move import NEW, OLD, linking

NO_CACHE = {"LLMWIKI_NO_CACHE": "1"}
FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def _ring(repo: Repo, layout: str, count: int = 12) -> str:
    """Pages p0..p{count-1}, each linking to the next one; the table of contents written."""
    prefix = layout_prefix(repo, layout)
    for n in range(count):
        repo.write(
            f"{prefix}concepts/p{n}.md", page(f"Page {n}", f"Next: [[p{(n + 1) % count}]].\n")
        )
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("pages")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    repo.git("add", "-A")
    repo.commit("index")
    return prefix


def _tree(repo: Repo) -> list[str]:
    return repo.git("ls-tree", "-r", "HEAD").splitlines()


def _toc(repo: Repo, prefix: str) -> str:
    """The table of contents llmwiki keeps (committed, or its own copy), without its time."""
    own = repo.root / ".llmwiki" / "index.md"
    text = own.read_text() if prefix == "" else repo.git("show", f"HEAD:{prefix}index.md")
    return "\n".join(line for line in text.splitlines() if "| Generated " not in line)


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_mv_after_a_check_reads_only_the_pages_it_touches(repo: Repo, layout: str) -> None:
    prefix = _ring(repo, layout)
    assert run_in_process(repo.root, ["check"]).returncode == 0
    listed, scanned = ScanTally.listed, ScanTally.pages
    proc = run_in_process(
        repo.root, ["mv", f"{prefix}concepts/p3.md", f"{prefix}concepts/three.md"]
    )
    assert proc.returncode == 0, proc.stderr
    # the pages linking to p3: p2, and in the wiki/ layout the generated wiki/index.md
    linking = 2 if layout == "wiki" else 1
    assert f"rewrote {linking} link" in proc.stdout
    assert ScanTally.listed == listed  # no whole wiki loaded, from the cache or otherwise
    assert ScanTally.pages == scanned + 1 + linking  # the moved page and those linking to it
    assert "Next: [[three]]." in (repo.root / f"{prefix}concepts/p2.md").read_text()
    assert "**[[three|Page 3]]**" in _toc(repo, prefix)
    assert "[[p3|" not in _toc(repo, prefix)


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_page_edited_after_the_check_is_rewritten_too(repo: Repo, layout: str) -> None:
    """The facts are kept per git tree: a commit after the check is another tree, derived
    from the checked one with the edit read, so the new link is rewritten like the old."""
    prefix = _ring(repo, layout)
    assert run_in_process(repo.root, ["check"]).returncode == 0
    repo.write(f"{prefix}concepts/p7.md", page("Page 7", "Next: [[p8]]. Also [[p3|three]].\n"))
    repo.commit("p7 links p3 too")
    listed = ScanTally.listed
    proc = run_in_process(
        repo.root, ["mv", f"{prefix}concepts/p3.md", f"{prefix}concepts/three.md", "--json"]
    )
    assert proc.returncode == 0, proc.stderr
    edited = sorted({e["path"] for e in json.loads(proc.stdout)["edits"]})
    index = [f"{prefix}index.md"] if layout == "wiki" else []  # the generated one links p3
    assert edited == [f"{prefix}concepts/p2.md", f"{prefix}concepts/p7.md", *index]
    assert "Also [[three|three]]." in (repo.root / f"{prefix}concepts/p7.md").read_text()
    assert ScanTally.listed == listed


def _twins(repo: Repo, tmp_path: Path) -> Repo:
    twin = Repo(tmp_path / "twin")
    shutil.copytree(repo.root, twin.root, symlinks=True)
    twin.git("update-index", "--refresh", check=False)
    return twin


@pytest.mark.parametrize("layout", ["wiki", "vault"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_the_same_move_with_and_without_the_cache(
    repo: Repo, tmp_path: Path, layout: str, dry_run: bool
) -> None:
    """Every link form of tests/publication/test_move.py, the plan and the commit alike."""
    prefix = layout_prefix(repo, layout)
    repo.write(
        f"{prefix}concepts/old-page.md",
        page(
            "Old Page",
            "# Old Page\n\n## Usage\n\npara ^b1\n\n"
            "[up](../notes/linking.md) [[other]] ![pic](pic.png)\n",
            aliases="[Ancient Name]",
        ),
    )
    repo.write(f"{prefix}concepts/pic.png", b"\x89PNG")
    repo.write(f"{prefix}concepts/other.md", page("Other", "Nothing: [[elsewhere-missing]]\n"))
    names = {k: v.replace("wiki/", prefix) for k, v in OLD.items()}
    repo.write(f"{prefix}notes/linking.md", linking(names))
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("wiki")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    repo.git("add", "-A")
    repo.commit("index")
    assert repo.llmwiki("check").returncode in (0, 1)
    twin = _twins(repo, tmp_path)
    args = ["mv", f"{prefix}concepts/old-page.md", f"{prefix}concepts/sub/new-page.md", "--json"]
    args += ["--dry-run"] if dry_run else []
    listed = ScanTally.listed
    fast = run_in_process(repo.root, args)
    assert ScanTally.listed == listed
    slow = run_in_process(twin.root, args, env=NO_CACHE)
    assert ScanTally.listed > listed  # the twin read every page
    assert fast.returncode == slow.returncode == 0, fast.stderr + slow.stderr
    plan, twin_plan = json.loads(fast.stdout), json.loads(slow.stdout)
    plan.pop("commit"), twin_plan.pop("commit")
    assert plan == twin_plan and plan["links"] >= 9  # the index's too in the wiki/ layout
    assert (fast.stderr, _tree(repo)) == (slow.stderr, _tree(twin))
    if not dry_run:
        assert _toc(repo, prefix) == _toc(twin, prefix)
        new = {k: v.replace("wiki/", prefix) for k, v in NEW.items()}
        assert (repo.root / f"{prefix}notes/linking.md").read_bytes() == linking(new)


def test_damaged_facts_fall_back_to_reading_every_page(repo: Repo) -> None:
    """A facts file whose digest no longer matches is never read: mv reads the whole wiki."""
    prefix = _ring(repo, "wiki")
    assert run_in_process(repo.root, ["check"]).returncode == 0
    folder = Workspace.open(repo.root).require_git("test").common_dir() / "llmwiki" / "check"
    (facts,) = folder.glob("facts-*.marshal")
    data = bytearray(facts.read_bytes())
    data[-40] ^= 0xFF
    facts.write_bytes(bytes(data))
    listed = ScanTally.listed
    proc = run_in_process(repo.root, ["mv", f"{prefix}concepts/p3.md", f"{prefix}concepts/x.md"])
    assert proc.returncode == 0, proc.stderr
    assert ScanTally.listed > listed
    assert "Next: [[x]]." in (repo.root / f"{prefix}concepts/p2.md").read_text()


@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_suggest_after_a_check_reads_only_the_grouped_pages(
    repo: Repo, tmp_path: Path, layout: str, many: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`merge-pages --suggest` pairs the names the checker keeps, then reads the pages of the
    groups (their titles as written) and the pages linking to them (which one is kept)."""
    prefix = layout_prefix(repo, layout)
    pages = {
        "concepts/transformer.md": page("Transformer", "[[gradient-descent]]"),
        "concepts/transformers.md": page("Transformers", "plural of the first"),
        "concepts/gradient-descent.md": page("Gradient Descent", "x"),
        "concepts/gd-copy.md": page("Gradient Descent", "an LLM wrote it twice [[gd-copy]]"),
        "concepts/ml.md": page("ML", "x", aliases="[Machine Learning]"),
        "concepts/machine-learning.md": page("Machine Learning", "[[ml]] [[machine-learning]]"),
        "notes/well-2.md": page("Well 2", "x"),
        "notes/well-3.md": page("Well 3", "x"),
        **{
            f"notes/other-{n}.md": page(f"Other {'abcdefgh'[n]}", "[[transformers]]")
            for n in range(8)
        },
    }
    for path, text in pages.items():
        repo.write(prefix + path, text)
    repo.commit("wiki")
    repo.write(prefix + "notes/other-1.md", page("Other b", "[[transformer]] edited, unstaged"))
    assert run_in_process(repo.root, ["check"]).returncode in (0, 1)
    twin = _twins(repo, tmp_path)
    if many:  # as with thousands of pages to read: their scans come from the scan cache
        monkeypatch.setattr(neighbours, "_MANY", 0)
    listed, scanned = ScanTally.listed, ScanTally.pages
    fast = run_in_process(repo.root, ["merge-pages", "--suggest", "--json"])
    assert ScanTally.listed == listed
    # the six grouped pages and the eight linking to one of them (none: from the scan cache)
    assert ScanTally.pages - scanned <= (1 if many else 14)  # 1: the page edited unstaged
    slow = run_in_process(twin.root, ["merge-pages", "--suggest", "--json"], env=NO_CACHE)
    assert ScanTally.listed > listed
    assert fast.returncode == slow.returncode == 0, fast.stderr + slow.stderr
    assert (fast.stdout, fast.stderr) == (slow.stdout, slow.stderr)
    groups = json.loads(fast.stdout)["groups"]
    assert len(groups) == 3 and {g["pages"][0]["title"] for g in groups} >= {"Transformers"}
    text = run_in_process(repo.root, ["merge-pages", "--suggest"])
    assert (
        text.stdout == run_in_process(twin.root, ["merge-pages", "--suggest"], env=NO_CACHE).stdout
    )

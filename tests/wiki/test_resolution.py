"""Resolution order and classification, on real files in a real work tree."""

from __future__ import annotations

from pathlib import Path

from llmwiki_git.wiki.citations import StaticPending, citation_report, format_report
from llmwiki_git.wiki.model import Wiki
from llmwiki_git.wiki.slug import parse_target
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, page


def wiki_of(root: Path) -> Wiki:
    return Workspace.open(root).wiki()


def resolve(wiki: Wiki, text: str) -> str | None:
    return wiki.resolve(parse_target(text)).ref


def test_resolution_order_concept_query_alias_other(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "x", aliases="[Shared, First One]"))
    repo.write("wiki/queries/alpha.md", page("Alpha query", "x", type="query"))
    repo.write("wiki/queries/beta.md", page("Beta", "x", aliases="[shared, Second]"))
    repo.write("wiki/queries/second.md", page("Second", "x"))
    repo.write("wiki/notes/Internal links.md", "# Internal links\n")
    repo.write("wiki/notes/first-one.md", "x\n")
    w = wiki_of(repo.root)
    assert w.root_dir == "wiki"
    assert resolve(w, "alpha") == "concepts/alpha"  # (1) concept stem beats query stem
    assert resolve(w, "second") == "queries/second"  # (2) query stem beats query alias
    assert resolve(w, "shared") == "concepts/alpha"  # (3) concept alias beats query alias
    assert resolve(w, "First One") == "concepts/alpha"  # (3) beats (5) other page stem
    assert resolve(w, "internal Links") == "notes/Internal links"  # (5) slugified stem
    assert resolve(w, "queries/alpha") == "queries/alpha"  # path hint picks the folder
    assert resolve(w, "wiki/concepts/alpha.md") == "concepts/alpha"
    assert resolve(w, "elsewhere/alpha") is None
    assert resolve(w, "missing") is None


def test_obsidian_vault_without_wiki_folder(repo: Repo) -> None:
    repo.write("Folder/Embed Files.md", "# Embed files\n")
    repo.write("Other/Embed Files.md", "# dup\n")
    repo.write("assets/diagram.png", b"\x89PNG")
    repo.write(".obsidian/hidden.md", "x")
    w = wiki_of(repo.root)
    assert w.root_dir == ""
    assert sorted(p.id for p in w.pages) == ["Folder/Embed Files", "Other/Embed Files"]
    found = w.resolve(parse_target("embed files"))
    assert found.ref == "Folder/Embed Files" and found.alternatives == ("Other/Embed Files",)
    assert resolve(w, "other/embed files") == "Other/Embed Files"
    assert resolve(w, "diagram.png") == "assets/diagram.png"
    assert resolve(w, "Diagram.PNG") == "assets/diagram.png"
    assert resolve(w, "missing.png") is None


def test_wiki_dir_override_from_config(repo: Repo) -> None:
    repo.write("docs/alpha.md", "x")
    repo.write("wiki/concepts/beta.md", "x")
    repo.write(".llmwiki/config.toml", 'wiki_dir = "docs"\n')
    w = wiki_of(repo.root)
    assert [p.id for p in w.pages] == ["alpha"]


def test_citation_report_resolved_pending_broken(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "x"))
    w = wiki_of(repo.root)
    text = "---\ntitle: '[[fm]]'\n---\nSee [[Alpha]], [[beta]], [[missing]], [[alpha#x]] and [[#self]] and `[[code]]`.\n"
    report = citation_report(
        text, w, StaticPending({"beta": ["beta-2", "beta-1"], "alpha": ["alpha-1"]})
    )
    assert [c.to_json() for c in report] == [
        {"target": "alpha", "status": "resolved", "pageId": "concepts/alpha"},
        {"target": "beta", "status": "pending", "candidateIds": ["beta-1", "beta-2"]},
        {"target": "missing", "status": "broken"},
    ]
    assert format_report(report) == [
        "Answer citations: 1 resolved, 1 pending, 1 broken",
        "resolved: alpha -> concepts/alpha",
        "pending: beta",
        "broken: missing",
    ]
    assert format_report(citation_report("no links", w)) == [
        "Answer citations: none recognized (not a factual-support assessment)"
    ]

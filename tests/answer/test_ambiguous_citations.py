"""A short link several pages answer (issue 23): answers cite the page their text came from
with a link only that page answers, every citation report marks an ambiguous link as such,
and saving refuses one. Both layouts: a root vault whose home page ``index.md`` shares its
name with ``user/index.md``, and the ``wiki/`` layout with ``guide.md`` in two folders."""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo, page
from ..servers import serve
from .test_query_cli import openai_env, sse_answer

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
HOME = "# Home\n\nWelcome to the vault. The vault keeps notes about gardening and compost heaps.\n"
USER = page(
    "User guide",
    "The user guide explains how to zorble the widgets before a release, one widget at a time.",
)
OTHER = page("Compost", "A compost heap turns garden waste into soil over a few months.")


@pytest.fixture(params=["root", "wiki"])
def vault(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str, str]:
    """(repo, the wiki-root prefix, the short name two pages share)."""
    if request.param == "root":
        repo.write("index.md", HOME)  # the user's own home page: evidence, never rewritten
        repo.write("user/index.md", USER)
        repo.write("garden/compost.md", OTHER)
        prefix, name = "", "index"
    else:
        repo.write("wiki/concepts/compost.md", OTHER)
        repo.write("wiki/help/guide.md", USER)
        repo.write("wiki/about/guide.md", page("About", "About this wiki: who writes it and why."))
        prefix, name = "wiki/", "guide"
    repo.commit("vault")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    return repo, prefix, name


def _user_page(prefix: str) -> tuple[str, str]:
    """(page id, the link that names it alone) of the page holding the user guide's text."""
    return ("user/index", "user/index") if not prefix else ("help/guide", "help/guide")


def test_extractive_answer_cites_the_page_it_quotes_by_a_link_only_it_answers(
    vault: tuple[Repo, str, str],
) -> None:
    """Regression: an answer quoting user/index.md cited [[index]], which every report
    called `resolved: index -> index` (the home page); saved, it pointed at the wrong page."""
    repo, prefix, _ = vault
    page_id, link = _user_page(prefix)
    proc = repo.llmwiki("query", "how do I zorble the widgets?", "--save", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert f"[[{link}]]" in proc.stdout
    assert f"resolved: {link} -> {page_id}" in proc.stdout and "ambiguous" not in proc.stdout
    saved = repo.root / f"{prefix}queries/how-do-i-zorble-the-widgets.md"
    assert f"[[{link}]]" in saved.read_text()
    again = json.loads(repo.llmwiki("links", str(saved), "--json").stdout)["citations"]
    assert again == [{"target": link, "status": "resolved", "pageId": page_id}]


def test_a_page_at_the_wiki_root_is_cited_by_its_rooted_path(repo: Repo) -> None:
    """The home page of a root vault has no folder to name: [[/index]] (Foam's path from the
    root) names it alone, where [[index]] also matches user/index.md."""
    repo.write("index.md", HOME)
    repo.write("user/index.md", USER)
    repo.commit("vault")
    proc = repo.llmwiki("query", "what does the vault keep notes about?", "--save", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "[[/index]]" in proc.stdout and "resolved: /index -> index" in proc.stdout
    assert (repo.root / "index.md").read_text() == HOME


def test_links_marks_an_ambiguous_link(vault: tuple[Repo, str, str]) -> None:
    repo, prefix, name = vault
    first, other = ("index", "user/index") if not prefix else ("about/guide", "help/guide")
    proc = repo.llmwiki("links", "-", input=f"See [[{name}]] and [[compost]].\n")
    assert proc.stdout.splitlines() == [
        "Answer citations: 1 resolved, 1 ambiguous, 0 pending, 0 broken",
        f"ambiguous: {name} -> {first} (also matches {other})",
        f"resolved: compost -> {'garden/compost' if not prefix else 'concepts/compost'}",
    ]
    data = json.loads(repo.llmwiki("links", "--json", "-", input=f"[[{name}]]").stdout)
    assert data["citations"] == [
        {"target": name, "status": "ambiguous", "pageId": first, "alternatives": [other]}
    ]


def test_saving_a_model_answer_with_an_ambiguous_link_is_refused(
    vault: tuple[Repo, str, str],
) -> None:
    """The model is told the unique link in the prompt; if it writes the short one anyway,
    the save is refused (exit 1, nothing written), for --save and --save --review alike."""
    repo, prefix, name = vault
    _, link = _user_page(prefix)
    before, status = repo.git("rev-parse", "HEAD"), repo.git("status", "--porcelain")
    with serve(sse_answer(f"Zorble the widgets one at a time [[{name}]].")) as (url, seen):
        for flags in (["--save"], ["--save", "--review"]):
            proc = repo.llmwiki(
                "query", "how do I zorble the widgets?", *flags, env=openai_env(url)
            )
            assert proc.returncode == 1, proc.stderr
            assert "ambiguous: " in proc.stdout and f"resolved: {name}" not in proc.stdout
            assert f"refused: ambiguous citation targets: {name} ->" in proc.stderr
    prompt = seen.requests[0][1]["messages"][1]["content"]
    assert f"(cite as [[{link}]])" in prompt
    assert (
        repo.git("rev-parse", "HEAD") == before and repo.git("branch", "--list", "llmwiki/*") == ""
    )
    assert repo.git("status", "--porcelain") == status


def test_review_show_and_approval_see_a_link_that_became_ambiguous(repo: Repo) -> None:
    """A candidate cited [[guide]] when one page had that name; another page of that name
    came since: `review show` says ambiguous, `review list` counts it, approval refuses."""
    repo.write("wiki/concepts/compost.md", OTHER)
    repo.write("wiki/help/guide.md", USER)
    repo.commit("vault")
    with serve(sse_answer("Zorble the widgets one at a time [[guide]].")) as (url, _):
        proc = repo.llmwiki(
            "query", "how do I zorble the widgets?", "--save", "--review", env=openai_env(url)
        )
    assert proc.returncode == 0, proc.stderr
    candidate = json.loads(repo.llmwiki("review", "list", "--json").stdout)["candidates"][0]
    assert candidate["citationStatus"] == "1 resolved, 0 pending, 0 broken"
    repo.write("wiki/about/guide.md", page("About", "About this wiki."))
    repo.commit("a second guide")
    shown = repo.llmwiki("review", "show", candidate["id"])
    assert "ambiguous: guide -> about/guide (also matches help/guide)" in shown.stdout
    assert "resolved: guide" not in shown.stdout
    assert "Approval would be refused (ambiguous)" in shown.stdout
    listed = json.loads(repo.llmwiki("review", "list", "--json").stdout)["candidates"][0]
    assert listed["citationStatus"] == "0 resolved, 1 ambiguous, 0 pending, 0 broken"
    refused = repo.llmwiki("review", "approve", candidate["id"])
    assert refused.returncode == 1 and "ambiguous citation targets: guide" in refused.stderr


def test_mcp_check_links_marks_an_ambiguous_link(vault: tuple[Repo, str, str], tmp_path) -> None:
    """The MCP tool's result (validated against its output schema by the client) says
    ambiguous, with the alternatives, where it said resolved."""
    from ..mcptools.test_mcp import ok, run, session

    repo, prefix, name = vault
    first, other = ("index", "user/index") if not prefix else ("about/guide", "help/guide")

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            found = await ok(s, "check_links", {"text": f"See [[{name}]]."})
            assert found["citations"] == [
                {"target": name, "status": "ambiguous", "pageId": first, "alternatives": [other]}
            ]

    run(body)


def test_check_names_a_link_that_reaches_the_page_alone(vault: tuple[Repo, str, str]) -> None:
    """`check`'s ambiguous-link warning says which link picks the page it resolved to; that
    link then checks clean (for a page at the root it said only "rename one of the pages")."""
    repo, prefix, name = vault
    first = "index" if not prefix else "about/guide"
    suggested = "/index" if not prefix else "about/guide"
    repo.write(f"{prefix}notes/see.md", f"# See\n\nSee [[{name}]].\n")
    warned = repo.llmwiki("check").stdout
    assert (
        f"ambiguous link [[{name}]]: resolved to {first}" in warned
        and f"use [[{suggested}]]" in warned
        or f"use a path like [[{suggested}]]" in warned
    ), warned
    repo.write(f"{prefix}notes/see.md", f"# See\n\nSee [[{suggested}]].\n")
    assert "ambiguous" not in repo.llmwiki("check").stdout

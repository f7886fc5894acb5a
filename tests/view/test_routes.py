"""The view's pages through Starlette's TestClient on a real repository: the queue, a
candidate's rendered diff, approval and rejection through review/service.py with stale pages
refused, pages with their links, provenance and backlinks, escaping, problems, the graph."""

from __future__ import annotations

import re

from .conftest import PORT, Viewed, client_for, login

SAME = {"Origin": f"http://127.0.0.1:{PORT}", "Sec-Fetch-Site": "same-origin"}


def _form(html: str) -> dict[str, str]:
    return dict(re.findall(r'name="(csrf|sha|tip)" value="([^"]*)"', html))


def test_the_queue_lists_the_candidate_with_its_verdict(viewed: Viewed) -> None:
    r = viewed.client.get("/review")
    assert r.status_code == 200
    assert f'href="/review/{viewed.cid}"' in r.text
    assert "page/1" in r.text and f"{viewed.prefix}concepts/alpha.md" in r.text
    assert "would pass" in r.text


def test_a_candidate_shows_its_rendered_diff_and_source_diff(viewed: Viewed) -> None:
    r = viewed.client.get(f"/review/{viewed.cid}")
    assert r.status_code == 200
    added = re.findall(r'<div class="blk add">(.*?)</div>', r.text, re.S)
    assert any("<strong>new text</strong>" in block for block in added)
    assert '<div class="blk same">' in r.text  # the unchanged first paragraph
    assert "<summary>Source diff</summary>" in r.text and "+It comes before [[beta]]" in r.text
    sha = viewed.repo.git("rev-parse", f"llmwiki/review/{viewed.cid}").strip()
    assert sha in r.text  # the sha the page was rendered from
    assert 'class="approve"' in r.text and "allow-broken" not in r.text


def test_approve_fast_forwards_main_and_shows_on_the_next_request(viewed: Viewed) -> None:
    c, repo, cid = viewed.client, viewed.repo, viewed.cid
    page = c.get(f"/review/{cid}").text
    before = c.get(f"/page/{viewed.prefix}concepts/alpha.md").text
    assert "new text" not in before
    r = c.post(f"/review/{cid}/approve", data=_form(page), headers=SAME, follow_redirects=False)
    assert r.status_code == 303
    queue = c.get(r.headers["location"])
    assert f"Approved {cid}" in queue.text and "No pending candidates." in queue.text
    log = repo.git("log", "--format=%(trailers:only,unfold)", "main")
    assert "Llmwiki-Kind: page/1" in log
    assert repo.git("branch", "--list", f"llmwiki/review/{cid}").strip() == ""
    assert "<strong>new text</strong>" in c.get(f"/page/{viewed.prefix}concepts/alpha.md").text


def test_a_candidate_that_moved_since_rendering_is_refused(viewed: Viewed) -> None:
    c, repo, cid = viewed.client, viewed.repo, viewed.cid
    form = _form(c.get(f"/review/{cid}").text)
    main = repo.git("rev-parse", "main").strip()
    branch = f"llmwiki/review/{cid}"
    moved = repo.git("commit-tree", f"{branch}^{{tree}}", "-p", main, "-m", "moved").strip()
    repo.git("update-ref", f"refs/heads/{branch}", moved)
    r = c.post(f"/review/{cid}/approve", data=form, headers=SAME)
    assert r.status_code == 409
    assert f"Error: candidate {cid} moved since the page was rendered" in r.text
    assert repo.git("rev-parse", "main").strip() == main


def test_a_branch_that_moved_since_rendering_is_refused_and_the_cli_message_shown(
    viewed: Viewed,
) -> None:
    c, repo, cid = viewed.client, viewed.repo, viewed.cid
    form = _form(c.get(f"/review/{cid}").text)
    repo.write("unrelated.txt", "x\n")
    tip = repo.commit("meanwhile")
    r = c.post(f"/review/{cid}/approve", data=form, headers=SAME)
    assert r.status_code == 409 and "the branch moved since the page was rendered" in r.text
    assert repo.git("rev-parse", "main").strip() == tip
    # the CLI's own refusal, unchanged: the page was edited on main under the candidate
    repo.write(f"{viewed.prefix}concepts/alpha.md", "# Alpha\n\nRewritten meanwhile.\n")
    repo.commit("edit alpha")
    form = _form(c.get(f"/review/{cid}").text)
    r = c.post(f"/review/{cid}/approve", data=form, headers=SAME)
    cli = repo.llmwiki("review", "approve", cid)
    assert cli.returncode == 1
    message = cli.stderr.strip().splitlines()[0]
    assert r.status_code == 409
    assert message.replace("'", "&#x27;").replace('"', "&quot;") in r.text


def test_reject_keeps_the_commit(viewed: Viewed) -> None:
    c, repo, cid = viewed.client, viewed.repo, viewed.cid
    sha = repo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    form = _form(c.get(f"/review/{cid}").text)
    r = c.post(f"/review/{cid}/reject", data=form, headers=SAME)
    assert r.status_code == 200 and f"Rejected {cid}" in r.text
    assert repo.git("rev-parse", f"refs/llmwiki/rejected/{cid}").strip() == sha


def test_read_only_hides_the_buttons_and_refuses_posts(viewed: Viewed) -> None:
    guard, client = client_for(viewed.repo, read_only=True)
    with client:
        login(guard, client)
        page = client.get(f"/review/{viewed.cid}").text
        assert "<form" not in page and "read-only" in page
        data = {"csrf": guard.csrf(), "sha": "x", "tip": "y"}
        r = client.post(f"/review/{viewed.cid}/approve", data=data, headers=SAME)
        assert r.status_code == 403


def test_a_page_renders_links_by_status_and_scripts_as_text(viewed: Viewed) -> None:
    r = viewed.client.get(f"/page/{viewed.prefix}concepts/beta.md")
    assert r.status_code == 200
    assert "<script>alert" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert f'<a class="link" href="/page/{viewed.prefix}concepts/alpha.md"' in r.text
    assert '<span class="link broken"' in r.text and ">nowhere</span>" in r.text
    alpha = viewed.client.get(f"/page/{viewed.prefix}concepts/alpha.md").text
    assert "Backlinks (1)" in alpha and "Beta follows [[alpha]]" in alpha


def test_a_pending_link_points_to_its_candidate(viewed: Viewed) -> None:
    repo, prefix = viewed.repo, viewed.prefix
    repo.write(f"{prefix}concepts/delta.md", "# Delta\n\nNew.\n")
    proc = repo.llmwiki("review", "stage", "--restore", f"{prefix}concepts/delta.md")
    assert proc.returncode == 0, proc.stderr
    repo.write(f"{prefix}concepts/gamma.md", "# Gamma\n\nSee [[delta]].\n")
    repo.commit("gamma")
    r = viewed.client.get(f"/page/{prefix}concepts/gamma.md")
    assert re.search(r'<a class="link pending" href="/review/[0-9a-z-]+"', r.text), r.text


def test_citations_open_the_source_lines_and_stale_ones_are_marked(viewed: Viewed) -> None:
    r = viewed.client.get(f"/page/{viewed.prefix}concepts/cited.md")
    assert r.status_code == 200
    assert 'href="/source/sources/paper.md?lines=1-2#L1"' in r.text
    assert 'class="cite stale"' in r.text  # 5-9 runs past the 2-line source
    assert "Stale:" in r.text and "Provenance" in r.text
    source = viewed.client.get("/source/sources/paper.md?lines=1-2")
    assert source.status_code == 200 and '<tr id="L1" class=cited>' in source.text
    assert viewed.client.get("/source/../etc/passwd").status_code == 404
    assert viewed.client.get(f"/source/{viewed.prefix}concepts/beta.md").status_code == 404


def test_block_lines_are_numbered_from_the_file(viewed: Viewed) -> None:
    r = viewed.client.get(f"/page/{viewed.prefix}concepts/beta.md")
    text = (viewed.repo.root / f"{viewed.prefix}concepts/beta.md").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if t.startswith("Beta follows"))
    assert f'<p data-line="{line}" data-end="{line}" id="L{line}">Beta follows' in r.text


def test_problems_are_filterable_and_link_to_their_line(viewed: Viewed) -> None:
    r = viewed.client.get("/check")
    assert "broken-link" in r.text and "stale-page" in r.text
    only = viewed.client.get("/check?code=broken-link").text
    assert "nowhere" in only and "runs past" not in only
    assert re.search(rf'href="/page/{viewed.prefix}concepts/beta.md#L\d+"', only)


def test_the_graph_is_local_by_default_around_a_page(viewed: Viewed) -> None:
    r = viewed.client.get(f"/graph?page={viewed.prefix}concepts/beta.md")
    assert r.status_code == 200 and "Local graph: 2 pages" in r.text
    assert '<canvas id="graph"' in r.text and 'type="application/json"' in r.text
    whole = viewed.client.get("/graph?all=1").text
    assert "Whole graph:" in whole


def test_a_move_shows_its_plan_renames_and_link_rewrites(viewed: Viewed) -> None:
    repo, prefix = viewed.repo, viewed.prefix
    proc = repo.llmwiki(
        "mv", f"{prefix}concepts/alpha.md", f"{prefix}concepts/first.md", "--review", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    rows = viewed.client.get("/review").text
    cid = next(c for c in re.findall(r'href="/review/([^"?]+)"', rows) if c.startswith("mv-"))
    r = viewed.client.get(f"/review/{cid}")
    assert r.status_code == 200
    assert f"Moves {prefix}concepts/alpha.md → {prefix}concepts/first.md." in r.text
    assert re.search(
        rf"{prefix}concepts/beta.md:\d+:\d+: <del>alpha</del> → <ins>first</ins>", r.text
    )
    assert "This page is deleted by the candidate." in r.text  # the old path
    assert f'href="/graph?candidate={cid}"' in r.text
    graph = viewed.client.get(f"/graph?candidate={cid}").text
    assert "Local graph:" in graph

"""End to end in a real headless Chromium: `llmwiki view` started as a process on a real
repository with a staged candidate; the browser opens the printed URL, opens the candidate,
sees the rendered new text, clicks Approve, and main is fast-forwarded with the trailers.
Then an accessibility audit (axe-core, vendored under tests/view/vendor with its licence)
of the main pages: no serious or critical violation."""

from __future__ import annotations

import json
import re

import pytest

from ..conftest import Repo, layout_prefix
from .browser import AXE, browser, view_process
from .conftest import make_wiki

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_open_the_printed_url_review_and_approve_in_chromium(repo: Repo, layout: str) -> None:
    prefix = layout_prefix(repo, layout)
    cid = make_wiki(repo, prefix)
    main = repo.git("rev-parse", "main").strip()
    with view_process(repo.root) as url, browser() as b:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{20,}", url)
        page = b.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on(
            "console",
            lambda msg: errors.append(msg.text) if msg.type == "error" else None,
        )
        page.goto(url)
        assert page.url.endswith("/review")
        page.get_by_role("link", name=cid).click()
        added = page.locator(".blk.add strong")
        added.wait_for()
        assert added.inner_text() == "new text"
        assert page.locator(".blk.add .mark").first.inner_text().lower() == "added"
        page.get_by_role("button", name="Approve").click()
        page.wait_for_load_state()
        assert "said=" in page.url, page.content()
        assert f"Approved {cid}" in page.locator("p.said").inner_text()
        assert errors == []  # no CSP violation, no script error
    assert main in repo.git("rev-list", "main").split()  # a fast-forward: main kept
    trailers = repo.git("log", "--format=%(trailers:only,unfold)", f"{main}..main")
    assert (
        "Llmwiki-Kind: page/1" in trailers
        and f"Llmwiki-Target: {prefix}concepts/alpha.md" in trailers
    )
    assert "new text" in repo.git("show", f"main:{prefix}concepts/alpha.md")


def test_the_main_pages_have_no_serious_accessibility_violation(repo: Repo) -> None:
    prefix = layout_prefix(repo, "wiki")
    cid = make_wiki(repo, prefix)
    axe = AXE.read_text(encoding="utf-8")
    pages = [
        "/review",
        f"/review/{cid}",
        f"/page/{prefix}concepts/beta.md",
        f"/page/{prefix}concepts/cited.md",
        "/check",
        f"/graph?page={prefix}concepts/beta.md",
    ]
    found: dict[str, list[str]] = {}
    with view_process(repo.root) as url, browser() as b:
        # the audit's script is injected by the test: this context alone bypasses the CSP
        context = b.new_context(bypass_csp=True)
        page = context.new_page()
        page.goto(url)
        base = url.split("/?", 1)[0]
        for path in pages:
            page.goto(base + path)
            page.add_script_tag(content=axe)
            result = page.evaluate("async () => await axe.run(document)")
            bad = [
                f"{v['id']} ({v['impact']}): {v['help']}"
                for v in result["violations"]
                if v["impact"] in ("serious", "critical")
            ]
            found[path] = bad
        context.close()
    assert all(not v for v in found.values()), json.dumps(found, indent=2)

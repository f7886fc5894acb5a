"""A page without body text is still found: a docs site's section page (a title and a
description in its frontmatter, its children listed by the site) or a Dendron parent note
becomes one card chunk, its description (else its title), so that a question about what the
section is for can rank it (chunking.page_chunks). Before, such a page had no chunk at all
and no question could ever find it (Hugo's docs: 62 of 993 pages; Dendron's vault: 113 of
1,013)."""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo

LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}
SECTION = "---\ntitle: Host and deploy\ndescription: Services and tools to host and deploy your site.\n---\n"
CHILDREN = {
    "deploy-with-rsync.md": (
        "Deploy with rsync",
        "Copy the public folder to a remote server over ssh with rsync, "
        "only the files that changed.",
    ),
    "git-hooks.md": ("Git hooks", "Run a build before every commit with a pre-commit hook script."),
}


def test_a_page_without_body_text_is_one_card_chunk() -> None:
    from llmwiki_git.retrieval.chunking import page_chunks

    assert [
        (c.text, c.card) for c in page_chunks("Host and deploy", "Services and tools.", "\n\n")
    ] == [("Services and tools.", True)]
    assert [(c.text, c.card) for c in page_chunks("Blog", "", "")] == [("Blog", True)]
    assert [c.card for c in page_chunks("Blog", "About.", "Some text.")] == [False]


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_section_page_is_found_by_its_description(repo: Repo, layout: str) -> None:
    prefix = "wiki/concepts/hosting/" if layout == "wiki" else "hosting/"
    if layout == "vault":
        repo.write("index.md", "# My site's notes\n\nThe user's own home page.\n")
    repo.write(f"{prefix}_index.md", SECTION)
    for name, (title, text) in CHILDREN.items():
        repo.write(f"{prefix}{name}", f"---\ntitle: {title}\n---\n{text}\n")
    repo.commit("a docs section")
    assert repo.llmwiki("index", env=LOCAL).returncode == 0
    for mode in ("rrf", "cosine", "bm25"):
        proc = repo.llmwiki(
            "context",
            "where can I host my site",
            "--json",
            env={**LOCAL, "LLMWIKI_RETRIEVAL": mode},
        )
        assert proc.returncode == 0, proc.stderr
        primary = json.loads(proc.stdout)["primary"]
        section = [p for p in primary if p["id"].endswith("_index")]
        assert section and section[0]["title"] == "Host and deploy", (
            mode,
            [p["id"] for p in primary],
        )
        assert [c["text"] for c in section[0]["chunks"]] == [
            "Services and tools to host and deploy your site."
        ]

"""`llmwiki index` by difference (issue 29's re-index target): after edits, additions,
deletions, renames and alias changes it reads only the changed pages, embeds only their new
chunks, and writes what `llmwiki index --full` writes from every page: the same page table,
the same lexical arrays bit for bit, the same vectors. Real git repositories, both layouts, a
real OpenAI-compatible embedding server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.retrieval import indexer
from llmwiki_git.retrieval import store as store_mod
from llmwiki_git.retrieval.lexical import LexicalIndex

from ..conftest import Repo, page
from ..servers import serve
from .test_embedding_http import openai_handler
from .test_incremental_refresh import EDITS, assert_same_index, build_vault, entries


def index(repo: Repo, env: dict[str, str], *args: str) -> dict:
    proc = repo.llmwiki("index", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def saved(state: Path) -> tuple[store_mod.Store, LexicalIndex, dict[str, np.ndarray]]:
    store = store_mod.load(state)
    return (
        store,
        LexicalIndex.load(state / indexer.LEXICAL_DIR),
        store.vectors.get(store.pages.row_hashes()),
    )


def texts_sent(requests: list) -> list[str]:
    return [text for _, body, _ in requests for text in body["input"]]


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_index_reads_only_changed_pages_and_writes_what_a_full_build_writes(
    repo: Repo, prefix: str
) -> None:
    build_vault(repo, prefix)
    with serve(openai_handler) as (url, seen):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        first = index(repo, env)
        assert first["read"] == first["pages"] and first["embedded"] == first["chunks"]
        for step in ("edit", "add", "delete", "rename", "alias"):
            EDITS[step](repo, prefix)
        repo.commit("five kinds of change")
        seen.requests.clear()
        after = index(repo, env)
        assert (
            after["read"] == 4
        )  # edited, added, renamed, re-aliased; the deleted page is only dropped
        assert 0 < after["embedded"] == len(texts_sent(seen.requests)) < after["chunks"]
        assert all(
            "Apple trees: prune after frost" in t or "Quince jelly" in t or "Bletted" in t
            for t in texts_sent(seen.requests)
        )  # only the new chunks went to the model
        state = repo.root / ".llmwiki"
        by_difference = saved(state)
        seen.requests.clear()
        full = index(repo, env, "--full")
        assert (
            full["read"] == full["pages"] == after["pages"]
            and len(texts_sent(seen.requests)) == full["chunks"]
        )
    store, lexical, vectors = saved(state)
    assert entries(by_difference[0]) == entries(store)
    assert by_difference[0].skipped == store.skipped and by_difference[0].names == store.names
    assert_same_index(by_difference[1], lexical)
    assert by_difference[2].keys() == vectors.keys()
    assert all(np.array_equal(by_difference[2][h], vectors[h]) for h in vectors)


def test_an_index_that_cannot_be_updated_is_read_from_every_page(repo: Repo) -> None:
    """A lexical index lost (or damaged) under a current store: `index` cannot update it by
    difference, so it reads every page, and the next run is by difference again."""
    build_vault(repo, "wiki/")
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    pages = index(repo, env)["pages"]
    shutil.rmtree(repo.root / ".llmwiki" / indexer.LEXICAL_DIR)
    assert index(repo, env)["read"] == pages
    EDITS["edit"](repo, "wiki/")
    assert index(repo, env)["read"] == 1
    assert repo.llmwiki("context", "prune after frost", "--json", env=env).returncode == 0


def stamps(state: Path) -> dict[str, tuple[int, int]]:
    """Inode and modification time of every file of the index: a rewrite changes both."""
    files = [state / n for n in ("embeddings.json", "embeddings.bin", "embeddings.pages")]
    files += sorted((state / indexer.LEXICAL_DIR).iterdir())
    return {f.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in files}


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_an_index_after_no_change_writes_nothing(repo: Repo, prefix: str) -> None:
    """Issue 39: `index` when no page changed rewrote the whole store and lexical index (5 s
    of CPU at 50,000 pages); it now leaves every file as it is, and an edit still writes."""
    build_vault(repo, prefix)
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    first = index(repo, env, "--fast")
    # The first run wrote the generated index page, a new name: the second records it.
    index(repo, env, "--fast")
    state = repo.root / ".llmwiki"
    before = stamps(state)
    again = index(repo, env, "--fast")
    assert again["read"] == 0 and again["pages"] == first["pages"]
    assert again["chunks"] == first["chunks"]
    assert stamps(state) == before
    EDITS["edit"](repo, prefix)
    edited = index(repo, env, "--fast")
    assert edited["read"] == 1
    assert stamps(state)["embeddings.json"] != before["embeddings.json"]
    proc = repo.llmwiki("context", "prune after frost", "--json", env=env)
    assert proc.returncode == 0 and "prune after frost" in proc.stdout.lower()


QUESTIONS = ("quince frost", "orchard grafting", "pear wall", "bletted medlar")


def rankings(repo: Repo, env: dict[str, str]) -> dict[str, list[str]]:
    out = {}
    for question in QUESTIONS:
        proc = repo.llmwiki("context", question, "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        out[question] = [item["id"] for item in json.loads(proc.stdout)["primary"]]
    return out


def bm25_scores(state: Path) -> dict[str, np.ndarray]:
    lexical = LexicalIndex.load(state / indexer.LEXICAL_DIR, verify=True)
    return {q: lexical.scores(q) for q in QUESTIONS}


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_after_edits_the_appended_index_ranks_as_a_fresh_one(repo: Repo, prefix: str) -> None:
    """Issue 39: an index after an edit appends the changed page's postings (the base's files
    stay the same files); after four such edits every ranking and every BM25 score equals a
    from-scratch index's; `--compact` merges the layer; a damaged layer is detected and the
    index rebuilt from every page, never misread."""
    build_vault(repo, prefix)
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    index(repo, env, "--fast")
    pages = index(repo, env, "--fast")["pages"]
    state = repo.root / ".llmwiki"
    bm25 = state / indexer.LEXICAL_DIR
    base = (bm25 / "doc_ids.npy").stat().st_ino
    for i in range(4):
        body = f"Orchard note on grafting, edit {i}: quince after frost. " + "pear " * i
        repo.write(f"{prefix}notes/n3.md", page("Note 3", body))
        assert index(repo, env, "--fast")["read"] == 1
    assert json.loads((bm25 / "meta.json").read_text())["layer"]["segment_postings"] > 0
    assert (bm25 / "doc_ids.npy").stat().st_ino == base  # never rewritten
    appended, appended_scores = rankings(repo, env), bm25_scores(state)
    assert any(appended.values())

    index(repo, env, "--fast", "--compact")
    assert "layer" not in json.loads((bm25 / "meta.json").read_text())
    assert rankings(repo, env) == appended

    shutil.rmtree(state)
    assert index(repo, env, "--fast")["read"] == pages
    assert rankings(repo, env) == appended
    fresh = bm25_scores(state)
    assert all(np.array_equal(fresh[q], appended_scores[q]) for q in QUESTIONS)  # bit for bit

    repo.write(f"{prefix}notes/n3.md", page("Note 3", "Orchard note: the last edit."))
    index(repo, env, "--fast")
    segment = bm25 / "seg_doc_ids.npy"
    segment.write_bytes(segment.read_bytes()[:-4])  # a crash mid-append, or a damaged disk
    again = index(repo, env, "--fast")
    assert again["read"] == pages  # refused, rebuilt from every page
    assert "layer" not in json.loads((bm25 / "meta.json").read_text())


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_the_table_of_contents_is_rendered_only_when_a_line_of_it_changed(
    repo: Repo, prefix: str
) -> None:
    """Issue 39: an edit of a page's body changes no line of the generated table of contents
    (paths, titles, summaries): index leaves it alone (rendering it cost 0.7 s at 50,000
    pages); a changed title rewrites it; a missing one is written again."""
    build_vault(repo, prefix)
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    index(repo, env, "--fast")
    index(repo, env, "--fast")
    toc = repo.root / ("wiki/index.md" if prefix else ".llmwiki/index.md")
    stamp = toc.stat().st_mtime_ns, toc.stat().st_ino
    repo.write(f"{prefix}concepts/medlar.md", page("Medlar", "Only the body changed: quince."))
    body = index(repo, env, "--fast")
    assert body["read"] == 1 and body["indexPage"] is None
    assert (toc.stat().st_mtime_ns, toc.stat().st_ino) == stamp
    repo.write(f"{prefix}concepts/medlar.md", page("Medlar Tree", "And now the title."))
    index(repo, env, "--fast")
    assert "Medlar Tree" in toc.read_text(encoding="utf-8")
    toc.unlink()
    repo.write(f"{prefix}concepts/medlar.md", page("Medlar Tree", "The body again."))
    index(repo, env, "--fast")
    assert "Medlar Tree" in toc.read_text(encoding="utf-8")

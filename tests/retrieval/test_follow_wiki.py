"""Evidence stays clean and the index follows the wiki (issue 11, Deliver 2-5), on both
layouts: a vault whose pages sit at the repository root beside the user's own home
``index.md`` and ``log.md``, and the ``wiki/`` layout of examples/demo.

Every test runs the real CLI in a real git repository; the index is lexical-only
(``LLMWIKI_EMBEDDING_PROVIDER=none``) so no model is needed.
"""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo, copy_demo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
HOME = """# Welcome to the Orchard vault

This home page is written by hand. The orchard keeps its quincewright guild notes here.
Start with [[trees/apple]] or [[people/ada]].
"""
USER_LOG = """# Orchard diary

On the second of January, Zanzibarite fertiliser was spread on the east row.
"""
GENERATED_INDEX = """# Knowledge Wiki

## Concepts

- **[[blobs|Blobs]]** — a blob is the wombleberry record of one file

_9 pages | Generated 2026-01-01T00:00:00Z_
"""


def root_layout(repo: Repo) -> Repo:
    repo.write("index.md", HOME)
    repo.write("log.md", USER_LOG)
    repo.write(
        "trees/apple.md",
        page("Apple", "Apple trees are pruned in late winter, before the sap rises."),
    )
    repo.write("trees/pear.md", page("Pear", "Pear trees want a warm wall and little pruning."))
    repo.write("people/ada.md", page("Ada", "Ada grafts the apple trees every spring."))
    repo.commit("a hand-written vault")
    return repo


def wiki_layout(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    return repo


LAYOUTS = {"root": (root_layout, ""), "wiki": (wiki_layout, "wiki/")}


@pytest.fixture(params=sorted(LAYOUTS))
def vault(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    build, prefix = LAYOUTS[request.param]
    build(repo)
    proc = repo.llmwiki("index", env=FAST)
    assert proc.returncode == 0, proc.stderr
    return repo, prefix


def query(repo: Repo, question: str, *args: str) -> dict:
    proc = repo.llmwiki("query", question, "--json", *args, env=FAST)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def context(repo: Repo, prompt: str, *args: str) -> dict:
    proc = repo.llmwiki("context", prompt, "--json", *args, env=FAST)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def codes(result: dict) -> list[str]:
    return [w["code"] for w in result["warnings"]]


def test_a_page_committed_after_index_is_found_by_query_and_context(
    vault: tuple[Repo, str],
) -> None:
    repo, prefix = vault
    repo.write(
        f"{prefix}notes/medlar.md",
        page("Medlar", "A medlar is bletted until soft before it is eaten."),
    )
    repo.commit("a page after index")
    result = query(repo, "How is a medlar eaten?")
    assert result["pageIds"][0] == "notes/medlar", result
    assert "[[medlar]]" in result["answer"] and "bletted" in result["answer"]
    assert codes(result) == []
    pack = context(repo, "medlar bletted")
    assert (
        pack["primary"][0]["id"] == "notes/medlar"
        and pack["primary"][0]["freshnessStatus"] == "fresh"
    )
    assert pack["warnings"] == []
    # The refresh was saved: `index` finds nothing left to do, and plain text search sees it.
    store = json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())
    assert f"{prefix}notes/medlar.md" in [p["path"] for p in store["pages"]]


def test_a_deleted_page_disappears_with_no_warning(vault: tuple[Repo, str]) -> None:
    repo, prefix = vault
    gone = f"{prefix}trees/pear.md" if not prefix else f"{prefix}concepts/trees.md"
    page_id = "trees/pear" if not prefix else "concepts/trees"
    prompt = "pear warm wall" if not prefix else "tree lists names modes"
    assert page_id in [p["id"] for p in context(repo, prompt)["primary"]]
    repo.git("rm", "-q", gone)
    repo.commit("delete a page")
    pack = context(repo, prompt)
    assert page_id not in [p["id"] for p in pack["primary"]] and pack["warnings"] == []
    proc = repo.llmwiki("query", prompt, env=FAST)
    assert (
        proc.returncode == 0 and "unreadable" not in proc.stderr and "warning" not in proc.stderr
    ), proc.stderr
    assert page_id not in proc.stderr.split("\n")[0]


def test_an_uncommitted_edit_and_delete_are_followed_too(vault: tuple[Repo, str]) -> None:
    repo, prefix = vault
    target = f"{prefix}people/ada.md" if not prefix else f"{prefix}concepts/blobs.md"
    repo.write(target, page("Edited", "The quokkaflex ritual happens at dawn."))
    assert "quokkaflex" in query(repo, "When is the quokkaflex ritual?")["answer"]
    (repo.root / target).unlink()
    result = query(repo, "When is the quokkaflex ritual?")
    assert "quokkaflex" not in result["answer"] and codes(result) == []


def test_the_journal_and_the_generated_index_are_never_evidence(repo: Repo) -> None:
    root_layout(repo)
    repo.write("trees/contents.md", GENERATED_INDEX)  # the generated format, wherever it sits
    repo.commit("a generated table of contents")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    for word in ("Zanzibarite", "wombleberry"):
        result = query(repo, f"What is {word}?")
        assert not {"log", "trees/contents"} & set(result["pageIds"]), result
        assert word.lower() not in result["answer"].lower()
        assert context(repo, word)["primary"] == []
    # A user's hand-written home page is a page like any other: evidence.
    assert query(repo, "What is the quincewright guild?")["pageIds"][0] == "index"
    # ... and the journal is still link-checked.
    repo.write("log.md", USER_LOG + "- see [[no-such-row]]\n")
    assert "no-such-row" in repo.llmwiki("check").stdout


def test_generated_index_of_the_wiki_layout_is_not_evidence(repo: Repo) -> None:
    wiki_layout(repo)
    repo.write("wiki/index.md", GENERATED_INDEX)
    repo.commit("regenerated index")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    result = query(repo, "What is a wombleberry record?")
    assert "index" not in result["pageIds"] and "wombleberry" not in result["answer"]


def test_a_reasked_question_never_cites_the_page_it_replaces(repo: Repo) -> None:
    wiki_layout(repo)
    question = "What does a blob store?"
    first = repo.llmwiki("query", question, "--save", env=FAST)
    assert first.returncode == 0, first.stderr
    saved = repo.root / "wiki" / "queries" / "what-does-a-blob-store.md"
    assert saved.is_file()
    again = query(repo, question)
    assert "queries/what-does-a-blob-store" not in again["pageIds"], again
    assert "[[what-does-a-blob-store]]" not in again["answer"] and "[[blobs]]" in again["answer"]
    second = repo.llmwiki("query", question, "--save", env=FAST)
    assert second.returncode == 0, second.stderr
    text = saved.read_text()
    assert "[[what-does-a-blob-store]]" not in text and "[[blobs]]" in text


def test_a_saved_answer_of_the_root_layout_is_not_its_own_evidence(repo: Repo) -> None:
    root_layout(repo)
    repo.write(
        "queries/when-are-apple-trees-pruned.md",
        "---\ntitle: When are apple trees pruned?\ntype: query\n---\n\nApple trees are pruned in late winter [[apple]].\n",
    )
    repo.commit("a saved answer")
    result = query(repo, "When are apple trees pruned?")
    assert (
        "queries/when-are-apple-trees-pruned" not in result["pageIds"]
        and result["pageIds"][0] == "trees/apple"
    )
    assert "[[when-are-apple-trees-pruned]]" not in result["answer"]


@pytest.mark.parametrize("flags", [("--save",), ("--save", "--review")])
def test_a_non_answer_is_shown_but_not_published(
    vault: tuple[Repo, str], flags: tuple[str, ...]
) -> None:
    repo, prefix = vault
    head = repo.git("rev-parse", "HEAD")
    branches = repo.git("branch", "-a")
    proc = repo.llmwiki("query", "What is the capital of France?", *flags, env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        ("The wiki does not say.", "No matching pages found.")
    )  # lexical: may match nothing
    assert "Nothing to publish" in proc.stderr
    assert repo.git("rev-parse", "HEAD") == head and repo.git("branch", "-a") == branches
    assert repo.git("status", "--porcelain") == ""
    result = query(repo, "What is the capital of France?", *flags)
    assert result["saved"] is None and result["candidateId"] is None
    assert result["publicationRefusal"]["code"] == "no-answer"
    # Evidence found (the title matches), yet no sentence answers: the answerer declines.
    repo.write(
        f"{prefix}stubs/sorbus.md",
        "# Sorbus\n\nNothing written here yet, come back later please.\n",
    )
    repo.commit("a stub")
    head = repo.git("rev-parse", "HEAD")
    result = query(repo, "What is Sorbus?", *flags)
    assert result["pageIds"] and result["answer"] == "The wiki does not say.", result
    assert result["publicationRefusal"]["code"] == "no-answer" and result["saved"] is None
    assert repo.git("rev-parse", "HEAD") == head and repo.git("branch", "-a") == branches


def test_top_pages_is_honoured_exactly(vault: tuple[Repo, str]) -> None:
    repo, _ = vault
    for n in (1, 2, 3):
        pack = context(repo, "trees", "--top-pages", str(n))
        assert len(pack["primary"]) == n, pack["primary"]


def test_changed_chunks_are_embedded_on_the_fly_up_to_the_bound(repo: Repo) -> None:
    """A real embedding server on 127.0.0.1: one new page is embedded by the read and saved;
    more new chunks than the bound are found lexically, with a warning that says how many
    pages are stale and to run `llmwiki index`."""
    from llmwiki_git.retrieval.refresh import ON_THE_FLY_CHUNKS

    from ..servers import serve
    from .test_embedding_http import openai_handler

    wiki_layout(repo)
    with serve(openai_handler) as (url, seen):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        assert repo.llmwiki("index", env=env).returncode == 0
        repo.write("wiki/concepts/medlar.md", page("Medlar", "A medlar is bletted until soft."))
        repo.commit("one page")
        before = len(seen.requests)
        pack = json.loads(repo.llmwiki("context", "medlar bletted", "--json", env=env).stdout)
        assert pack["primary"][0]["id"] == "concepts/medlar" and pack["warnings"] == []
        embedded = [t for _, body, _ in seen.requests[before:] for t in body["input"]]
        assert any("bletted" in t for t in embedded)  # the new chunk, on the fly
        store = json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())
        assert "wiki/concepts/medlar.md" in [p["path"] for p in store["pages"]]

        for i in range(ON_THE_FLY_CHUNKS + 1):
            repo.write(
                f"wiki/concepts/fruit-{i}.md",
                page(f"Fruit {i}", f"Fruit number {i} is a sorbapple of kind {i}."),
            )
        repo.commit("many pages")
        pack = json.loads(repo.llmwiki("context", "sorbapple", "--json", env=env).stdout)
        assert pack["primary"] and pack["primary"][0]["id"].startswith("concepts/fruit-")
        stale = [w["message"] for w in pack["warnings"] if w["code"] == "index-stale"]
        assert stale and stale[0].startswith(
            f"{ON_THE_FLY_CHUNKS + 1} pages changed since `llmwiki index`"
        ), pack["warnings"]
        assert "run `llmwiki index`" in stale[0]
        store = json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())
        assert not any(
            "fruit-" in p["path"] for p in store["pages"]
        )  # nothing saved beyond the bound
        assert repo.llmwiki("index", env=env).returncode == 0
        pack = json.loads(repo.llmwiki("context", "sorbapple", "--json", env=env).stdout)
        assert pack["warnings"] == []


def test_a_model_answer_citing_nothing_for_unmatched_words_is_not_published(repo: Repo) -> None:
    """Dense retrieval always returns pages; when none of their passages has a word of the
    question and the model cites nothing, the answer declines: shown, not published. A
    model answer without links to a question the pages do match is still published."""
    from ..answer.test_query_cli import sse_answer
    from ..servers import serve
    from .test_embedding_http import openai_handler

    wiki_layout(repo)
    chat = sse_answer("I could not find this in the provided pages.")

    def handler(path: str, body: dict, headers: dict) -> tuple[int, dict[str, str], bytes]:
        return (
            openai_handler(path, body, headers)
            if path.endswith("/embeddings")
            else chat(path, body, headers)
        )

    with serve(handler) as (url, _):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
            "LLMWIKI_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
        }
        assert repo.llmwiki("index", env=env).returncode == 0
        head = repo.git("rev-parse", "HEAD")
        proc = repo.llmwiki("query", "Qu'est-ce que la capitale de la France ?", "--save", env=env)
        assert proc.returncode == 0, proc.stderr
        assert (
            proc.stdout.startswith("I could not find this") and "Nothing to publish" in proc.stderr
        )
        assert repo.git("rev-parse", "HEAD") == head
        proc = repo.llmwiki("query", "What does a blob store?", "--save", env=env)
        assert proc.returncode == 0 and "Nothing to publish" not in proc.stderr, proc.stderr
        assert repo.git("rev-parse", "HEAD") != head  # no links, but the pages matched: published


def test_the_index_page_written_by_index_does_not_make_the_next_read_refresh(repo: Repo) -> None:
    wiki_layout(repo)
    repo.git("rm", "-q", "wiki/index.md")
    repo.commit("no table of contents yet")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    assert (repo.root / "wiki" / "index.md").is_file()  # written after the pages were read
    store = (repo.root / ".llmwiki" / "embeddings.json").read_bytes()
    pack = context(repo, "blob")
    assert pack["warnings"] == [] and "index" not in [p["id"] for p in pack["primary"]]
    assert (repo.root / ".llmwiki" / "embeddings.json").read_bytes() == store  # nothing was stale


def test_an_answer_citing_the_page_it_would_replace_is_refused(repo: Repo) -> None:
    from ..answer.test_query_cli import openai_env, sse_answer
    from ..servers import serve

    wiki_layout(repo)
    question = "What does a blob store?"
    assert repo.llmwiki("query", question, "--save", env=FAST).returncode == 0
    head = repo.git("rev-parse", "HEAD")
    saved = (repo.root / "wiki" / "queries" / "what-does-a-blob-store.md").read_bytes()
    with serve(sse_answer("Blobs store file bytes [[what-does-a-blob-store]] [[blobs]].")) as (
        url,
        _,
    ):
        proc = repo.llmwiki("query", question, "--save", env=openai_env(url))
    assert (
        proc.returncode == 1
        and "cites the page it would replace ([[what-does-a-blob-store]])" in proc.stderr
    )
    assert repo.git("rev-parse", "HEAD") == head
    assert (repo.root / "wiki" / "queries" / "what-does-a-blob-store.md").read_bytes() == saved

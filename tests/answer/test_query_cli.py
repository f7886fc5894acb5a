"""`llmwiki query` end to end: the publication policy table, against real git repositories
and a real OpenAI-compatible server on 127.0.0.1 (and the offline default)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..conftest import Repo, copy_demo, layout_prefix
from ..servers import serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def sse_answer(text: str):
    """An OpenAI chat-completions stream that says ``text`` in three pieces."""

    def handler(path, body, headers):
        assert path == "/v1/chat/completions" and body["stream"] is True
        third = max(1, len(text) // 3)
        parts = [text[i : i + third] for i in range(0, len(text), third)]
        events = [json.dumps({"choices": [{"index": 0, "delta": {"content": p}}]}) for p in parts]
        payload = "".join(f"data: {e}\n\n" for e in events) + "data: [DONE]\n\n"
        return 200, {"content-type": "text/event-stream"}, payload.encode()

    return handler


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    assert repo.git("status", "--porcelain") == ""
    return repo


def openai_env(url: str) -> dict[str, str]:
    return {
        **FAST,
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": "sk-test",
        "LLMWIKI_PROVIDER": "openai",
    }


def head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def test_offline_default_answers_with_citations_and_writes_nothing(demo: Repo) -> None:
    before = head(demo)
    proc = demo.llmwiki_process("query", "what does a blob store?", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "Answering with extractive (offline)" in proc.stderr
    assert "[[blobs]]" in proc.stdout
    assert (
        "Answer citations: " in proc.stdout and "resolved: blobs -> concepts/blobs" in proc.stdout
    )
    assert "broken:" not in proc.stdout
    assert head(demo) == before and demo.git("status", "--porcelain") == ""
    log = (demo.root / ".llmwiki" / "activity.log").read_text().splitlines()
    assert json.loads(log[-1])["question"] == "what does a blob store?"


def test_no_matching_pages_makes_no_model_call(demo: Repo) -> None:
    with serve(sse_answer("never")) as (url, seen):
        proc = demo.llmwiki("query", "zzqx vvbnm", env=openai_env(url))
    assert proc.returncode == 0 and proc.stdout.strip() == "No matching pages found."
    assert seen.requests == []


def test_review_requires_save_before_any_provider_call(demo: Repo) -> None:
    with serve(sse_answer("never")) as (url, seen):
        proc = demo.llmwiki("query", "what is a blob?", "--review", env=openai_env(url))
    assert proc.returncode == 2 and "--review requires --save" in proc.stderr
    assert seen.requests == []


@pytest.mark.parametrize(
    ("answer", "report"),
    [
        (
            "Blobs hold bytes [[blobs]] and trees list them [[Trees]].",
            [
                "Answer citations: 2 resolved, 0 pending, 0 broken",
                "resolved: blobs -> concepts/blobs",
                "resolved: trees -> concepts/trees",
            ],
        ),
        (
            "Blobs hold bytes [[blobs]] but see [[no-such-page]].",
            [
                "Answer citations: 1 resolved, 0 pending, 1 broken",
                "resolved: blobs -> concepts/blobs",
                "broken: no-such-page",
            ],
        ),
        (
            "Nothing cited here.",
            ["Answer citations: none recognized (not a factual-support assessment)"],
        ),
    ],
)
def test_query_without_save_answers_and_reports(demo: Repo, answer: str, report: list[str]) -> None:
    with serve(sse_answer(answer)) as (url, seen):
        proc = demo.llmwiki("query", "what is a blob?", env=openai_env(url))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == answer
    assert lines[-len(report) :] == report
    sent = seen.requests[0][1]
    assert sent["model"] and sent["messages"][0]["role"] == "system"
    assert "--- Page: concepts/blobs" in sent["messages"][-1]["content"]
    assert demo.git("status", "--porcelain") == ""


def test_save_publishes_one_commit_touching_only_its_paths(demo: Repo) -> None:
    demo.write(
        "wiki/concepts/trees.md",
        (demo.root / "wiki/concepts/trees.md").read_text() + "\nunstaged edit\n",
    )
    demo.write("notes.txt", "staged work\n")
    demo.git("add", "notes.txt")
    before = head(demo)
    with serve(sse_answer("A blob stores bytes only. See [[blobs]].")) as (url, _):
        proc = demo.llmwiki_process(
            "query", "What does a blob store?", "--save", env=openai_env(url)
        )
    assert proc.returncode == 0, proc.stderr
    assert "Saved query → wiki/queries/what-does-a-blob-store.md" in proc.stderr
    assert demo.git("rev-parse", "HEAD~1").strip() == before
    changed = demo.git("show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["log.md", "wiki/index.md", "wiki/queries/what-does-a-blob-store.md"]
    page = (demo.root / "wiki/queries/what-does-a-blob-store.md").read_text()
    assert page.startswith(
        "---\ntitle: What does a blob store?\nsummary: A blob stores bytes only.\ntype: query\ncreatedAt: "
    )
    assert page.endswith("\n\nA blob stores bytes only. See [[blobs]].\n")
    assert (
        "[[what-does-a-blob-store|What does a blob store?]]"
        in (demo.root / "wiki/index.md").read_text()
    )
    assert "query | What does a blob store?" in (demo.root / "log.md").read_text()
    status = demo.git("status", "--porcelain").splitlines()
    assert sorted(status) == [
        " M wiki/concepts/trees.md",
        "A  notes.txt",
    ]  # the user's work, untouched
    assert demo.llmwiki_process("check").returncode == 0
    store = json.loads((demo.root / ".llmwiki" / "embeddings.json").read_text())
    assert "queries/what-does-a-blob-store" in [
        p["pageId"] for p in store["pages"]
    ]  # index refreshed


@pytest.mark.parametrize(
    "answer", ["See [[no-such-page]].", "Blobs [[blobs]] and [[missing-too]]."]
)
def test_save_refuses_broken_links_and_writes_nothing(demo: Repo, answer: str) -> None:
    before = head(demo)
    with serve(sse_answer(answer)) as (url, _):
        proc = demo.llmwiki("query", "What does a blob store?", "--save", env=openai_env(url))
    assert proc.returncode == 1
    assert proc.stdout.startswith(answer)  # the answer is kept on screen
    assert "Answer publication refused: broken citation targets:" in proc.stderr
    assert head(demo) == before and demo.git("status", "--porcelain") == ""
    assert not (demo.root / "wiki/queries").exists()


def test_validation_unavailable_keeps_answer_and_refuses_save(demo: Repo) -> None:
    index = demo.root / ".git" / "index"
    kept = index.read_bytes()
    index.write_bytes(b"DIRC garbage")  # the report on the work tree cannot list pages
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        plain = demo.llmwiki("query", "what is a blob?", env=openai_env(url))
    assert plain.returncode == 0 and plain.stdout.startswith("Blobs [[blobs]].")
    assert (
        "Answer citations: unavailable" in plain.stdout and "citation report failed" in plain.stderr
    )
    index.write_bytes(kept)
    # Saving validates against the tree being committed (HEAD + the page): make a page of HEAD unreadable.
    blob = demo.git("rev-parse", "HEAD:wiki/concepts").strip()  # a tree object of HEAD
    (demo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        saved = demo.llmwiki("query", "what is a blob?", "--save", env=openai_env(url))
    assert saved.returncode == 1 and saved.stdout.startswith("Blobs [[blobs]].")
    assert "citation validation unavailable" in saved.stderr
    assert not (demo.root / "wiki/queries").exists()


def test_profile_disabled_refuses_direct_save_with_exit_0(demo: Repo) -> None:
    (demo.root / ".llmwiki" / "profile.json").write_text(
        '{"schemaVersion": 1, "profileId": "research"}'
    )
    before = head(demo)
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        proc = demo.llmwiki("query", "what is a blob?", "--save", env=openai_env(url))
    assert proc.returncode == 0 and "profile-enabled projects" in proc.stderr
    assert head(demo) == before and not (demo.root / "wiki/queries").exists()


def test_save_refuses_when_target_has_uncommitted_edits(demo: Repo) -> None:
    demo.write("wiki/queries/what-is-a-blob.md", "my own draft\n")
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        proc = demo.llmwiki("query", "what is a blob?", "--save", env=openai_env(url))
    assert proc.returncode == 1 and "wiki/queries/what-is-a-blob.md" in proc.stderr
    assert (demo.root / "wiki/queries/what-is-a-blob.md").read_text() == "my own draft\n"


def test_json_debug_and_lang(demo: Repo) -> None:
    with serve(sse_answer("Blobs [[blobs]].")) as (url, seen):
        proc = demo.llmwiki(
            "query", "what is a blob?", "--json", "--debug", "--lang", "ja", env=openai_env(url)
        )
    data = json.loads(proc.stdout)
    assert data["answer"] == "Blobs [[blobs]]." and data["provider"]["name"] == "openai"
    assert data["answerCitations"] == {
        "version": 1,
        "citations": [{"target": "blobs", "status": "resolved", "pageId": "concepts/blobs"}],
    }
    assert data["debug"]["chunks"] and "concepts/blobs" in data["pageIds"]
    assert "ja" in seen.requests[0][1]["messages"][0]["content"]
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        proc = demo.llmwiki("query", "what is a blob?", "--debug", env=openai_env(url))
    assert "--- Retrieval debug ---" in proc.stdout and "· concepts/blobs#0 score=" in proc.stdout


def test_concurrent_saves_lose_nothing(demo: Repo) -> None:
    """8 processes saving at once (4 different questions, 4 times the same one)."""
    questions = [
        "what does a blob store?",
        "what is a tree object?",
        "what is a commit trailer?",
        "how does compare and swap work?",
    ] + ["what are git objects?"] * 4
    before = int(demo.git("rev-list", "--count", "HEAD"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", "query", q, "--save"],
            cwd=demo.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**__import__("os").environ, **FAST},
        )
        for q in questions
    ]
    results = [p.communicate(timeout=240) for p in procs]
    codes = [p.returncode for p in procs]
    assert codes == [0] * 8, [r[0] for r, c in zip(results, codes) if c]
    assert int(demo.git("rev-list", "--count", "HEAD")) == before + 8
    assert demo.git("fsck", "--no-progress").strip() == ""
    index = (demo.root / "wiki/index.md").read_text()
    for slug in (
        "what-does-a-blob-store",
        "what-is-a-tree-object",
        "what-is-a-commit-trailer",
        "how-does-compare-and-swap-work",
        "what-are-git-objects",
    ):
        page = (demo.root / f"wiki/queries/{slug}.md").read_text()
        assert page.startswith("---\ntitle: ") and page.endswith("\n") and "[[" in page
        assert f"[[{slug}|" in index
    assert (demo.root / "log.md").read_text().count("## [") == 8
    assert demo.git("status", "--porcelain") == ""
    assert demo.llmwiki("check").returncode == 0


def test_save_on_a_never_indexed_wiki_builds_the_lexical_index_and_says_so(repo: Repo) -> None:
    """`query --save` never embeds a whole wiki silently (issue 15): with no index yet it
    builds the lexical one and tells how to embed."""
    copy_demo(repo.root)
    repo.commit("demo wiki")
    assert not (repo.root / ".llmwiki" / "embeddings.json").exists()
    with serve(sse_answer("A blob stores bytes only. See [[blobs]].")) as (url, _):
        env = {
            k: v for k, v in openai_env(url).items() if k != "LLMWIKI_EMBEDDING_PROVIDER"
        }  # the local model
        proc = repo.llmwiki("query", "What does a blob store?", "--save", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["saved"] == "wiki/queries/what-does-a-blob-store.md"
    assert [w for w in result["warnings"] if w["code"] == "index-lexical-only"]
    store = json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())
    assert store["dimensions"] == 0 and "queries/what-does-a-blob-store" in [
        p["pageId"] for p in store["pages"]
    ]


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_offline_answer_comes_from_the_first_ranked_page_the_question_names(
    repo: Repo, layout: str
) -> None:
    """Issue 36's leftover, end to end: retrieval ranks the bisect page first for a question
    naming bisect; a sentence of another page with more of the question's words is no
    longer quoted beside it."""
    prefix = layout_prefix(repo, layout)
    repo.write(
        f"{prefix}concepts/bisect.md",
        "# Bisect\n\nGit bisect finds the commit that introduced a bug by a binary search over "
        "history. You mark one commit good and one bad, and bisect checks out the commit "
        "halfway between. Each bisect step halves the commits left until one remains.\n",
    )
    repo.write(
        f"{prefix}concepts/history.md",
        "# History\n\nTo find which commit introduced a bug in the history, read the log of "
        "each commit that touched the file and ask git blame which commit introduced each "
        "line.\n",
    )
    repo.commit("two pages")
    proc = repo.llmwiki(
        "query", "How do I find which commit introduced a bug in history with bisect?", env=FAST
    )
    assert proc.returncode == 0, proc.stderr
    answer = proc.stdout.split("Answer citations:")[0]
    assert "Git bisect finds the commit that introduced a bug" in answer, proc.stdout
    assert "[[bisect]]" in answer and "[[history]]" not in answer and "blame" not in answer


def test_offline_answer_quotes_no_sentence_whose_link_names_no_page(repo: Repo) -> None:
    """A sentence linking a page the wiki does not hold would cite nothing, and a --save of
    the answer would be refused for it: the offline answer leaves it out."""
    repo.write(
        "wiki/concepts/tea.md",
        "# Tea\n\nGreen tea is steamed or pan-fired soon after picking, which keeps it green. "
        "Black tea is oxidised fully before it is dried, which darkens the leaf. "
        "Tea grading is explained in [[tea-grades]] with the leaf sizes.\n",
    )
    repo.commit("tea")
    proc = repo.llmwiki("query", "How is tea graded by leaf?", "--save", env=FAST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tea-grades" not in proc.stdout and "[[tea]]" in proc.stdout, proc.stdout

"""What is indexed and how a question is matched: question stopwords, BM25F fields, the
embedding input, and the store fingerprint that re-embeds a store after an upgrade."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmwiki_git.retrieval.chunking import (
    EMBEDDING_INPUT_VERSION,
    embedding_input,
    path_words,
    readable_text,
    store_fingerprint,
)
from llmwiki_git.retrieval.lexical import FIELD_WEIGHTS, LexicalIndex
from llmwiki_git.terms import query_terms, tokenize

from ..conftest import Repo, page
from ..servers import json_response, serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


# ------------------------------------------------------------------ question stopwords


def test_question_words_are_dropped_from_the_query_only() -> None:
    assert query_terms("How can I rename my notes?") == ["renam", "note"]
    assert query_terms("what does the daily note template do") == ["daili", "note", "templat"]
    # the indexed text keeps them: a page about "how to" still has those words
    assert "how" in tokenize("How can I rename my notes?")
    # French and German question words go too; the content words stay
    assert query_terms("Comment puis-je renommer une note ?") == ["renommer", "note"]
    assert query_terms("Wie kann ich meine Notizen umbenennen") == ["notizen", "umbenennen"]
    # a question made only of such words is not emptied
    assert query_terms("what can I do") == ["what", "can", "i", "do"]
    # "off", "which way" style content words that are not question filler survive
    assert "off" in query_terms("how do I turn that off")


def test_filler_no_longer_outranks_the_topic() -> None:
    docs = [
        "How can I get a refund? You can ask for one within 30 days. How do I pay? By card.",
        "Renaming a note rewrites every link to it.",
    ]
    index = LexicalIndex.build(docs)
    scores = index.scores("how can I rename a note")
    assert scores.argmax() == 1
    # before, "how" and "can" alone were enough for the refund page to score
    assert index.scores("how can I")[0] > 0 and scores[0] == 0


# ------------------------------------------------------------------------ BM25F fields


def test_field_weights_change_the_ranking() -> None:
    body_only = [
        (("Refunds", 1.0), ("aliases are mentioned here among many other words " * 3, 1.0)),
        (("Aliases", 1.0), ("a page can have other names, listed in its frontmatter", 1.0)),
    ]
    index = LexicalIndex.build(body_only)
    assert index.scores("aliases").argmax() == 0  # the body that repeats the word wins
    weighted = [body_only[0], (("Aliases", 4.0), body_only[1][1])]
    index = LexicalIndex.build(weighted)
    assert index.scores("aliases").argmax() == 1  # the same title, weighted as a title, wins
    # a plain string is one field of weight 1
    a = LexicalIndex.build(["alpha beta"]).scores("alpha")
    b = LexicalIndex.build([(("alpha beta", 1.0),)]).scores("alpha")
    np.testing.assert_allclose(a, b)


def test_weighted_field_counts_as_repeated_text() -> None:
    """BM25F's simple form: a field of weight 2 is the same as its text written twice."""
    twice = LexicalIndex.build(["rename note", "note note other words"])
    fields = LexicalIndex.build([(("rename note", 2.0),), (("note note other words", 2.0),)])
    assert fields.scores("rename").argmax() == twice.scores("rename").argmax() == 0
    repeated = LexicalIndex.build(
        ["rename note rename note", "note note other words note note other words"]
    )
    np.testing.assert_allclose(
        fields.scores("rename note"), repeated.scores("rename note"), rtol=1e-5
    )


def test_path_words() -> None:
    assert path_words("user/features/daily-notes.md") == "user features daily notes"
    assert path_words("dendron.topic.lookup.modifiers.md") == "dendron topic lookup modifiers"


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_title_and_path_rank_a_page_first_on_both_layouts(repo: Repo, layout: str) -> None:
    """A page whose title and path name the topic beats a page that repeats the word in its
    body, in a `wiki/` folder and in a vault with pages at the root (and the user's own
    index.md and log.md)."""
    prefix = "wiki/concepts/" if layout == "wiki" else "notes/"
    if layout == "vault":
        repo.write("index.md", "# My vault\n\nMy own index, not generated.\n")
        repo.write("log.md", "# Log\n\n- started\n")
    repo.write(
        f"{prefix}aliases.md",
        page(
            "Aliases",
            "Other names for a page, listed in its frontmatter so that links can use them.",
        ),
    )
    repo.write(
        f"{prefix}changelog.md",
        page("Changelog", "Version 2 fixes aliases in links and aliases with spaces."),
    )
    for i in range(6):
        repo.write(
            f"{prefix}filler-{i}.md",
            page(f"Filler {i}", f"Unrelated text number {i} about gardens."),
        )
    repo.commit("pages")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    # no question words: the title and path fields alone decide (the body of the changelog
    # says "aliases" twice; as one body, the previous ranking put it first)
    proc = repo.llmwiki("context", "set up aliases", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    primary = [p["id"] for p in json.loads(proc.stdout)["primary"]]
    assert primary[0] == f"{prefix}aliases".removeprefix("wiki/")
    assert f"{prefix}changelog".removeprefix("wiki/") in primary


def test_field_weights_are_few_and_the_body_is_the_unit() -> None:
    assert FIELD_WEIGHTS["body"] == 1.0 and FIELD_WEIGHTS["title"] > 1.0
    assert set(FIELD_WEIGHTS) == {"title", "description", "path", "body"}


# ----------------------------------------------------------------------- embedding input


def test_readable_text_removes_link_syntax_urls_and_markup() -> None:
    text = (
        "## Setup\n\n"
        "See [[dendron.topic.lookup|the lookup bar]] and [[other-page#Some section]], or "
        "[the guide](https://example.com/guide_(v2)) at https://example.org/x?y=1.\n"
        "![diagram](assets/flow.png) **bold** _italic_ `code_name` ~~gone~~ ^block-1\n\n"
        "| a | b |\n|---|:---:|\n| 1 | 2 |\n\n"
        '<div class="note">boxed</div> <!-- hidden comment -->\n\n'
        "[ref]: https://example.net/ref\n\n"
        "```js\nlet snake_case = 1;\n```\n\n"
        "- [x] done task\n> quoted"
    )
    out = readable_text(text)
    for noise in (
        "[[",
        "]]",
        "](",
        "http",
        "example.",
        "**",
        "`",
        "~~",
        "^block",
        "|---",
        "<div",
        "hidden comment",
        "```",
        "##",
        "[x]",
        "> ",
    ):
        assert noise not in out, noise
    for kept in (
        "Setup",
        "the lookup bar",
        "other-page",
        "the guide",
        "diagram",
        "bold",
        "italic",
        "code_name",
        "boxed",
        "let snake_case = 1;",
        "done task",
        "quoted",
        "| 1 | 2 |",
    ):
        assert kept in out, kept
    assert "  " not in out


def test_embedding_input_is_title_then_readable_chunk() -> None:
    assert (
        embedding_input("Lookup", readable_text("Use [[lookup.find|find]] here: https://x.y/z"))
        == "Lookup\n\nUse find here:"
    )
    assert embedding_input("Only links", readable_text("https://x.y/z")) == "Only links"


def test_store_fingerprint_carries_the_input_version() -> None:
    assert store_fingerprint("onnx:m:1") == f"onnx:m:1+input{EMBEDDING_INPUT_VERSION}"
    assert store_fingerprint("onnx:m:1") != "onnx:m:1"


def _recording_server(seen_inputs: list[str]):
    def handler(path, body, headers):
        seen_inputs.extend(body["input"])
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(len(t) % 7 + 1), 1.0, float(i + 1), 0.5],
            }
            for i, t in enumerate(body["input"])
        ]
        return json_response({"object": "list", "data": data, "model": body["model"]})

    return serve(handler)


def test_old_store_fingerprint_is_re_embedded_with_readable_input(repo: Repo) -> None:
    """A store written before the embedding input changed (its fingerprint is the bare
    model's) is not reused: `context` warns and ranks lexically, and the next `index`
    re-embeds every chunk, sending readable text; the one after reuses everything."""
    repo.write(
        "wiki/concepts/links.md",
        page(
            "Links",
            "Pages link with [[other-page|a label]]; see https://example.com/docs for **more**.",
        ),
    )
    repo.write("wiki/concepts/other-page.md", page("Other page", "Plain words about other things."))
    repo.commit("pages")
    seen: list[str] = []
    with _recording_server(seen) as (url, _):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        proc = repo.llmwiki("index", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        chunks = json.loads(proc.stdout)["chunks"]
        assert any(t.startswith("Links\n\n") for t in seen)
        assert not any("[[" in t or "http" in t or "**" in t for t in seen)
        store = repo.root / ".llmwiki" / "embeddings.json"
        meta = json.loads(store.read_text())
        assert meta["fingerprint"].endswith(f"+input{EMBEDDING_INPUT_VERSION}")
        # what the previous release wrote: the model's fingerprint alone
        meta["fingerprint"] = meta["fingerprint"].rsplit("+input", 1)[0]
        store.write_text(json.dumps(meta))
        pack = json.loads(repo.llmwiki("context", "label links", "--json", env=env).stdout)
        assert [w["code"] for w in pack["warnings"]] == ["embedding-model-mismatch"]
        seen.clear()
        summary = json.loads(repo.llmwiki("index", "--json", env=env).stdout)
        assert summary["embedded"] == chunks and summary["reused"] == 0 and len(seen) == chunks
        summary = json.loads(repo.llmwiki("index", "--json", env=env).stdout)
        assert summary["embedded"] == 0 and summary["reused"] == chunks
        pack = json.loads(repo.llmwiki("context", "label links", "--json", env=env).stdout)
        assert pack["warnings"] == []


def test_embeds_and_images_say_what_they_do() -> None:
    """Link syntax is reduced to words, not dropped: an embed stays an embed, an image an
    image (a page of embed examples is about embedding, and says so)."""
    text = (
        "Show it inline with ![[meeting-notes]] or one part: ![[meeting-notes#Actions]]; "
        "resize ![[diagram.png|400]], ![[photo.jpg|300|center]]; alias ![[note|the summary]]; "
        "link [[other-page|a label]] and [[plain]]; ![a flow chart](img/flow.png) ![](x.mp3) [text](https://x.y)"
    )
    assert readable_text(text) == (
        "Show it inline with embed meeting-notes or one part: embed meeting-notes; resize embed diagram.png, "
        "embed photo.jpg; alias embed the summary; link a label and plain; image a flow chart image text"
    )


def test_logseq_and_hugo_markup_become_words() -> None:
    logseq = (
        "type:: [[Feature]]\nid:: 634fae2e-edab-42e0-8385-59df3fc3da0e\n- ## Usage\n  collapsed:: true\n"
        "\t- #+BEGIN_NOTE\n\t  Works on desktop.\n\t  #+END_NOTE\n"
        "\t- {{embed [[page name]]}} and {{embed ((5fbf4fbf-82c5-4d81-ba82-b66726bda00c))}}\n"
        "\t- see ((5fbf4fbf-82c5-4d81-ba82-b66726bda00c)) and {{query (and [[a]] [[b]])}}"
    )
    out = readable_text(logseq)
    for gone in ("634fae2e", "5fbf4fbf", "collapsed", "BEGIN_NOTE", "{{", "::"):
        assert gone not in out, gone
    for kept in (
        "type: Feature",
        "Usage",
        "Works on desktop.",
        "embed page name",
        "query (and a b)",
    ):
        assert kept in out, kept
    hugo = (
        '{{< figure src="/zion.jpg" caption="Zion National Park" >}}\n{{< details summary="More" >}}\nhidden\n'
        '{{< /details >}}\n{{</* qr text="tel:+1" /*/>}} {{% include "common/x.md" %}} {{ .Title }}'
    )
    assert readable_text(hugo) == (
        'figure src="/zion.jpg" caption="Zion National Park"\ndetails summary="More"\n'
        'hidden\n\nqr text="tel:+1" include "common/x.md" {{ .Title }}'
    )


def test_the_description_is_embedded_with_the_first_chunk_and_identifies_it(repo: Repo) -> None:
    """The page's own description (frontmatter or Logseq ``description::``) is embedded after
    its title with its first chunk; editing it re-embeds that chunk only, and `context` still
    finds the chunks' text (their identity includes it)."""
    body = "\n\n".join(f"Paragraph {i}: " + "words about the queue worker " * 30 for i in range(3))
    repo.write(
        "notes/queue.md",
        f"---\ntitle: Queue\ndescription: How jobs wait for a worker\n---\n{body}\n",
    )
    repo.write(
        "notes/Tasks.md",
        "alias:: Todos\ndescription:: Markers for work to do\n\n- LATER write the docs\n",
    )
    repo.commit("pages")
    seen: list[str] = []
    with _recording_server(seen) as (url, _):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        first = json.loads(repo.llmwiki("index", "--json", env=env).stdout)
        queue = [t for t in seen if t.startswith("Queue\n\n")]
        assert len(queue) == first["chunks"] - 1 >= 3  # every queue chunk, and the one of Tasks
        assert queue[0].startswith("Queue\n\nHow jobs wait for a worker\n\nParagraph 0")
        assert all("How jobs wait" not in t for t in queue[1:])
        assert any(t.startswith("Tasks\n\nMarkers for work to do\n\n") for t in seen)
        seen.clear()
        repo.write(
            "notes/queue.md",
            f"---\ntitle: Queue\ndescription: How jobs wait in line\n---\n{body}\n",
        )
        again = json.loads(repo.llmwiki("index", "--json", env=env).stdout)
        assert again["embedded"] == 1 and seen == [
            queue[0].replace("wait for a worker", "wait in line")
        ]
        pack = json.loads(repo.llmwiki("context", "jobs wait in line", "--json", env=env).stdout)
        page = next(p for p in pack["primary"] if p["id"].endswith("queue"))
        assert page["chunks"] and page["warnings"] == [] and pack["warnings"] == []


def test_logseq_page_properties_are_fields(repo: Repo) -> None:
    """A Logseq page's ``alias::`` counts as a title and its ``description::`` as a
    description: the page named by the alias outranks a page that only mentions the word."""
    repo.write(
        "Tasks.md",
        "alias:: Todos\ndescription:: Markers for work still to do\n\n- LATER write the docs\n"
        "- NOW review the pull request\n",
    )
    repo.write(
        "Journal habits.md",
        "- Keep the todos short.\n- Review them every evening, and move old todos "
        "to the weekly page.\n- Write one line a day.\n",
    )
    for i in range(4):
        repo.write(f"Other {i}.md", f"- unrelated notes number {i} about gardens and trees\n")
    repo.commit("graph")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    for question in ("todos", "markers for work"):
        proc = repo.llmwiki("context", question, "--json", env=FAST)
        assert json.loads(proc.stdout)["primary"][0]["id"] == "Tasks", question

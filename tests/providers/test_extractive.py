"""The offline extractive answerer: deterministic, grounded, cites only the evidence."""

from __future__ import annotations

import re

import pytest

from llmwiki_git.errors import ProviderError
from llmwiki_git.providers.base import AnswerRequest, Evidence
from llmwiki_git.providers.extractive import NO_ANSWER, ExtractiveProvider, clean_sentence

ALPHA_TEXT = """# Alpha

Alpha is a consensus protocol for replicated logs. It elects a leader with randomized
timeouts, e.g. 150 ms, so that split votes are rare. See [[beta|the storage layer]] for
where the log lives.

## Details

title: not frontmatter but looks like it

```python
# Alpha elects a leader in code, which must never be quoted.
def elect_leader(): return "leader"
```

- Fast
- Leader election
- Alpha followers redirect clients to the leader when they receive a write.

| Alpha | leader |
|-------|--------|
| elects | leader |

Related: [[gamma]], [[delta]], [[epsilon|Epsilon]], [[concepts/zeta]].
"""
BETA_TEXT = """Beta stores the replicated log on disk in an append-only file. Alpha relies on **Beta**
for durability, and [[alpha|Alpha's]] leader flushes every entry before acknowledging it.
Compaction happens in the background."""
EVIDENCE = (
    Evidence(
        "concepts/alpha",
        "alpha",
        "Alpha",
        ALPHA_TEXT,
        (
            "Alpha is a consensus protocol for replicated logs. It elects a leader with randomized\n"
            "timeouts, e.g. 150 ms, so that split votes are rare.",
        ),
    ),
    Evidence("concepts/beta", "beta", "Beta", BETA_TEXT),
)
LINK = re.compile(r"\[\[([^\]]*)\]\]")


def ask(
    question: str, evidence: tuple[Evidence, ...] = EVIDENCE, language: str | None = None
) -> list[str]:
    return list(ExtractiveProvider().stream_answer(AnswerRequest(question, evidence, language)))


def test_answer_is_composed_from_matching_sentences_and_cited() -> None:
    deltas = ask("How does Alpha elect a leader?")
    assert deltas == [
        "Alpha is a consensus protocol for replicated logs.",
        " It elects a leader with randomized timeouts, e.g. 150 ms, so that split votes are rare.",
        " Alpha followers redirect clients to the leader when they receive a write [[alpha]].",
    ]  # the question names Alpha, ranked first, and it answers: Beta's durability is left out


def test_another_question_another_answer() -> None:
    assert "".join(ask("Where is the replicated log stored?")) == (
        "Beta stores the replicated log on disk in an append-only file. Alpha relies on Beta for durability, "
        "and Alpha's leader flushes every entry before acknowledging it [[beta]]. "
        "Alpha is a consensus protocol for replicated logs [[alpha]]."
    )


def test_deterministic() -> None:
    first = ask("How does Alpha elect a leader?")
    assert all(ask("How does Alpha elect a leader?") == first for _ in range(5))
    provider = ExtractiveProvider()
    assert provider.answer(AnswerRequest("How does Alpha elect a leader?", EVIDENCE)) == "".join(
        first
    )


def test_only_evidence_links_are_emitted() -> None:
    for question in (
        "How does Alpha elect a leader?",
        "Where is the log stored?",
        "gamma delta epsilon zeta",
        "What is related to Alpha?",
        "storage layer",
    ):
        answer = "".join(ask(question))
        assert set(LINK.findall(answer)) <= {"alpha", "beta"}, answer
        assert "[[" not in LINK.sub("", answer) and "]]" not in LINK.sub("", answer)


def test_skipped_material_is_never_quoted() -> None:
    answer = "".join(ask("alpha leader elects election fast code title frontmatter related"))
    for never in (
        "elect_leader",
        "must never be quoted",
        "Fast",
        "Leader election",
        "| ",
        "title:",
        "Related",
        "Epsilon",
        "# Alpha",
        "Details",
    ):
        assert never not in answer, never


def test_nothing_matching_says_so() -> None:
    assert ask("What is the capital of France?") == [NO_ANSWER]
    assert ask("What is it?") == [NO_ANSWER]  # only question words
    assert ask("") == [NO_ANSWER]
    assert ask("How does Alpha elect a leader?", evidence=()) == [NO_ANSWER]
    assert NO_ANSWER == "The wiki does not say."


def test_language_does_not_change_the_answer() -> None:
    # It quotes the wiki, so it answers in the wiki's language whatever --lang asks.
    assert ask("How does Alpha elect a leader?", language="ja") == ask(
        "How does Alpha elect a leader?"
    )


def test_non_english_wiki_and_question() -> None:
    page = Evidence(
        "concepts/raft",
        "raft",
        "Raft",
        "Raft est un algorithme de consensus. Le leader réplique le journal sur les suiveurs. "
        "Les élections utilisent des délais aléatoires.",
    )
    answer = "".join(ask("Comment le leader réplique-t-il le journal ?", evidence=(page,)))
    assert answer.startswith("Le leader réplique le journal sur les suiveurs")
    assert LINK.findall(answer) == ["raft"]
    cjk = Evidence(
        "concepts/kv", "kv", "键值存储", "键值存储把数据保存在磁盘上。复制日志由领导者管理。"
    )
    answer = "".join(ask("键值存储如何保存数据？", evidence=(cjk,)))
    assert answer.startswith("键值存储把数据保存在磁盘上") and LINK.findall(answer) == ["kv"]


def test_markdown_is_reduced_to_what_a_reader_sees() -> None:
    # Links stay links: a labelled link reads as its label, a bare one stays [[target]]
    # (never a flattened slug word); inline code stays code.
    assert (
        clean_sentence("See [[beta|the storage layer]] and [[gamma]] or [[delta#Part]].")
        == "See the storage layer and [[gamma]] or [[delta#Part]]."
    )
    assert (
        clean_sentence("Read [the docs](https://example.com) and **bold** or `code` text.")
        == "Read the docs and bold or `code` text."
    )
    assert (
        clean_sentence("The id hashes the header `blob <size>` and a `**raw**` [[x]] byte.")
        == "The id hashes the header `blob <size>` and a `**raw**` [[x]] byte."
    )
    assert (
        clean_sentence("An ![[diagram.png]] embed and a note[^1] here.")
        == "An embed and a note here."
    )


def test_mostly_links_sentences_are_skipped() -> None:
    page = Evidence(
        "concepts/hub",
        "hub",
        "Hub",
        "See also [[consensus]], [[raft-protocol]], [[paxos-protocol]] and [[leader-election]]. "
        "The hub page lists consensus protocols used by the team.",
    )
    assert (
        "".join(ask("consensus protocols", evidence=(page,)))
        == "The hub page lists consensus protocols used by the team [[hub]]."
    )


def test_streams_sentence_by_sentence_within_limits() -> None:
    words = (
        "amber basil cedar dune ember fjord grove heath inlet juniper kelp larch marsh nettle oasis prairie "
        "quarry reef sorrel tundra upland valley willow yarrow"
    ).split()
    sentences = [
        f"The leader of {a} {b} {c} cluster stays near {d} {e}."
        for a, b, c, d, e in zip(
            words,
            words[5:] + words[:5],
            words[10:] + words[:10],
            words[15:] + words[:15],
            words[20:] + words[:20],
        )
    ]
    page = Evidence("concepts/many", "many", "Many", " ".join(sentences))
    deltas = ask("Which leader is in the cluster?", evidence=(page,))
    assert 3 <= len(deltas) <= 6
    assert len("".join(deltas)) <= 900
    assert "".join(deltas).count("[[many]]") == 1


def test_a_long_single_sentence_is_capped() -> None:
    page = Evidence(
        "concepts/long", "long", "Long", "The leader " + "keeps going " * 45 + "until the end."
    )
    answer = "".join(
        ExtractiveProvider(max_chars=300).stream_answer(AnswerRequest("leader", (page,)))
    )
    assert len(answer) <= 300 and answer.endswith(" \u2026 [[long]].")


def test_short_answers_take_the_following_sentence_for_context() -> None:
    page = Evidence(
        "concepts/raft",
        "raft",
        "Raft",
        "Raft is a consensus algorithm designed for understandability. "
        "It separates the problem into three parts that are solved independently. "
        "Clusters usually have five servers in production.",
    )
    assert "".join(ask("What is Raft?", evidence=(page,))) == (
        "Raft is a consensus algorithm designed for understandability. "
        "It separates the problem into three parts that are solved independently [[raft]]."
    )


def test_identity_and_no_completion() -> None:
    provider = ExtractiveProvider()
    assert (provider.name, provider.model, provider.generative) == ("extractive", "offline", False)
    with pytest.raises(
        ProviderError, match="extractive: the offline answerer has no language model"
    ):
        provider.complete("system", "user")


BLOBS = """# Blobs

A blob stores the bytes of a file and nothing else: not its name, not its permissions. The
blob id is the SHA-1 of the header `blob <size>` followed by a NUL byte and the content.
"""
TEMPLATES = """# Templates

**Use templates when you want to:**

- Adapt templates based on where the note is being created from
- Pick a template for every new note in the workspace

#### Relative notes

In these cases, the new notes will be created with the daily template.
"""
OBJECTS = """# Objects

Every object is named by the hash of its content, so identical content is stored once.
Packfiles store deltas between similar objects.
"""


def test_inline_code_is_kept_in_answers() -> None:
    answer = "".join(
        ask("How is the blob id computed?", (Evidence("concepts/blobs", "blobs", "Blobs", BLOBS),))
    )
    assert "the header `blob <size>` followed by a NUL byte" in answer, answer
    assert "header blob followed" not in answer


def test_a_list_item_does_not_run_into_the_next_sentence() -> None:
    answer = "".join(
        ask(
            "How are templates created for a new note?",
            (Evidence("features/templates", "templates", "Templates", TEMPLATES),),
        )
    )
    assert "created from In these cases" not in answer, answer
    assert "Adapt templates based on where the note is being created from." in answer, answer


def test_a_sentence_sharing_only_a_stem_does_not_pad_the_answer() -> None:
    evidence = (
        Evidence(
            "concepts/blobs",
            "blobs",
            "Blobs",
            "A blob stores the bytes of a file and nothing else.",
        ),
        Evidence("concepts/objects", "objects", "Objects", OBJECTS),
    )
    answer = "".join(ask("What does a blob store?", evidence))
    assert answer.startswith("A blob stores the bytes of a file"), answer
    assert "Packfiles store deltas" in answer, answer  # the same word: a real match
    assert "is stored once" not in answer, answer  # "stored" meets "store" only as a stem


# Issue 23: what the offline answerer committed from the Foam docs.
FOAM_PUBLISHING = """# Recipes

- Make the site your own by publishing it with the GitHub Pages recipe.

Many templates also support publishing your Foam workspace to GitHub Pages with one click.

[publish-to-github-pages]: ../publishing/publish-to-github-pages.md 'GitHub Pages'
[publish-to-gitlab-pages]: ../publishing/publish-to-gitlab-pages.md 'GitLab Pages'
"""
# A chunk of it as retrieval hands it over: cut in the middle of a reference definition.
FOAM_EXCERPT = (
    "lish-to-github-pages]: ../publishing/publish-to-github-pages.md 'GitHub Pages'\n"
    "[publish-to-gitlab-pages]: ../publishing/publish-to-gitlab-pages.md 'GitLab Pages'"
)


def test_reference_definitions_and_chunk_fragments_are_never_quoted() -> None:
    """Regression: ``lish-to-github-pages]: ../publishing/… 'GitHub Pages'`` was an answer
    sentence: excerpts were split into sentences of their own, fragments and all."""
    page = Evidence("recipes", "recipes", "Recipes", FOAM_PUBLISHING, (FOAM_EXCERPT,))
    answer = "".join(ask("How do I publish to GitHub Pages?", (page,)))
    assert "]:" not in answer and "lish-to" not in answer and "../publishing" not in answer, answer
    assert "Many templates also support publishing your Foam workspace to GitHub Pages" in answer, (
        answer
    )


TRUST = """# Templates

> ⚠️ **Treat a `new-note.js` like a script you'd execute by hand.
> ** Only use JS templates from workspaces whose contributors you trust.

*Run a template script only in a trusted workspace. Scripts can run any code.* Markdown
templates run everywhere and need no trust at all.

- automatically run template scripts from trusted folders when a note is created

Template scripts see the note title and the folder of the new note.
"""


def test_emphasis_is_never_cut_and_markup_fragments_never_quoted() -> None:
    """Regression: ``*Treat … by hand. * Only use`` (an emphasis whose markers the sentence
    split left open) was quoted. An emphasis spanning two sentences stays one sentence, read
    without its markers; a list item continuing a sentence begun elsewhere is no sentence."""
    page = Evidence("features/templates", "templates", "Templates", TRUST)
    answer = "".join(ask("Can a template script run any code?", (page,)))
    assert "*" not in answer and "Treat a" not in answer and "Only use JS" not in answer, answer
    assert (
        "Run a template script only in a trusted workspace. Scripts can run any code." in answer
    ), answer
    assert "automatically run" not in answer, answer


def test_the_asker_is_not_a_search_term() -> None:
    """Regression: "how do I ..." matched "I deployed, but ..." in an FAQ."""
    faq = Evidence(
        "faq",
        "faq",
        "FAQ",
        "I deployed, but my files are not converted into pages at all.\n\n"
        "Pages are published from the main branch by the publish workflow.",
    )
    answer = "".join(ask("How do I publish pages?", (faq,)))
    assert "I deployed" not in answer and answer.startswith("Pages are published"), answer


def test_a_sentence_linking_the_page_a_save_would_replace_is_not_quoted() -> None:
    """Regression (issue 23, seen as a flaky concurrent-save test): a saved answer quoted as
    evidence carried its own citation of [[what-are-git-objects]]; quoting it in a new answer
    to that very question made `--save` refuse a self-citation. The answerer is told which
    link a save would replace and quotes no sentence linking it."""
    saved = Evidence(
        "queries/what-is-a-commit-trailer",
        "what-is-a-commit-trailer",
        "Commit trailers",
        "Git parses commit trailers with interpret-trailers [[commit-trailers]] [[what-are-git-objects]].\n\n"
        "Git objects hold commit trailers in the commit message body.",
    )
    request = AnswerRequest(
        "what are git objects and their commit trailers?", (saved,), None, ("what-are-git-objects",)
    )
    answer = "".join(ExtractiveProvider().stream_answer(request))
    assert "what-are-git-objects" not in answer and answer.startswith(
        "Git objects hold commit trailers"
    ), answer
    plain = "".join(ExtractiveProvider().stream_answer(AnswerRequest(request.question, (saved,))))
    assert "[[what-are-git-objects]]" in plain  # the same evidence, no save to protect: quoted


def test_a_compiled_pages_source_citations_are_not_copied_into_the_answer() -> None:
    """Issue 36, point 7: compiled pages cite their sources inline (``^[git-bisect.md:10-12]``);
    the offline answer quoted those markers as if they were the answer's own citations."""
    text = (
        "Bisecting finds the commit that introduced a bug by a binary search over history "
        "^[git-bisect.md:10-12]. Each step marks one commit good or bad until one is left "
        "^[git-bisect.md:20-24].\n"
    )
    evidence = (Evidence("concepts/bisect", "bisect", "Bisect", text),)
    answer = "".join(ask("How do I find the commit that introduced a bug?", evidence))
    assert "binary search over history" in answer and "[[bisect]]" in answer, answer
    assert "^[" not in answer and "git-bisect.md" not in answer, answer
    assert clean_sentence("It bisects ^[a.md:1-2] history.") == "It bisects history."


BISECT = """# Bisect

Git bisect finds the commit that introduced a bug by a binary search over history.
You mark one commit good and one bad, and bisect checks out the commit halfway between.
Each step halves the commits left until one remains.
"""
HISTORY = """# History

To find which commit introduced a bug in the history, read the log of each commit that
touched the file and ask git blame which commit introduced each line.
"""


def test_the_page_the_question_names_and_ranks_first_answers_alone() -> None:
    """Issue 36's leftover: a lower-ranked page's sentence holding more of the question's
    words (find, which, history) no longer outranks the first page, which the question
    names (bisect) and which answers; its sentences are the answer."""
    evidence = (
        Evidence("concepts/bisect", "bisect", "Bisect", BISECT),
        Evidence("concepts/history", "history", "History", HISTORY),
    )
    answer = "".join(
        ask("How do I find which commit introduced a bug in history with bisect?", evidence)
    )
    assert answer.startswith("Git bisect finds the commit that introduced a bug"), answer
    assert "[[bisect]]" in answer and "[[history]]" not in answer and "blame" not in answer
    # the same pages, the question not naming the first one: the best sentence leads again
    other = "".join(ask("Which commit introduced each line, by git blame?", evidence))
    assert other.startswith("To find which commit introduced a bug"), other

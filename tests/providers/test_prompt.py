"""The grounded-answer prompt and the shared HTTP helpers."""

from __future__ import annotations

import email.utils
import time

import pytest

from llmwiki_git.providers.base import PAGE_CHAR_LIMIT, AnswerRequest, Evidence, build_prompt
from llmwiki_git.providers.http import error_detail, retry_after

ALPHA = Evidence(
    "concepts/alpha",
    "alpha",
    "Alpha",
    "Alpha is a protocol.\n\nIt elects leaders.\n",
    ("It elects leaders.", "Alpha is a protocol."),
)
BETA = Evidence("queries/why-beta", "why-beta", "Why Beta?", "Because.")


def test_user_message_layout() -> None:
    _system, user = build_prompt(AnswerRequest("  What is Alpha? ", (ALPHA, BETA)))
    assert user == (
        "Question: What is Alpha?\n"
        "\n"
        "Relevant wiki pages:\n"
        "\n"
        "--- Page: concepts/alpha (cite as [[alpha]]) ---\n"
        "# Alpha\n"
        "Alpha is a protocol.\n\nIt elects leaders.\n"
        "\n"
        "--- Page: queries/why-beta (cite as [[why-beta]]) ---\n"
        "# Why Beta?\n"
        "Because.\n"
        "\n"
        "Most relevant excerpts:\n"
        "\n"
        "--- concepts/alpha (excerpt 1, cite as [[alpha]]) ---\n"
        "It elects leaders.\n"
        "\n"
        "--- concepts/alpha (excerpt 2, cite as [[alpha]]) ---\n"
        "Alpha is a protocol."
    )


def test_system_message_rules_and_language_directive() -> None:
    plain, _ = build_prompt(AnswerRequest("q", (ALPHA,)))
    again, _ = build_prompt(AnswerRequest("q", (ALPHA,), language=None))
    empty, _ = build_prompt(AnswerRequest("q", (ALPHA,), language="  "))
    assert plain == again == empty  # no language: byte-identical prompts
    assert "ONLY from the wiki pages" in plain
    assert "[[link]]" in plain and "exactly the link name" in plain
    assert "do not contain the answer, say so plainly" in plain
    assert "Write the answer in" not in plain
    japanese, user = build_prompt(AnswerRequest("q", (ALPHA,), language="ja"))
    assert japanese == plain + "\nWrite the answer in ja."
    assert user == build_prompt(AnswerRequest("q", (ALPHA,)))[1]


def test_no_excerpts_no_excerpt_section_and_empty_title() -> None:
    page = Evidence("concepts/x", "x", "", "Body.")
    _, user = build_prompt(AnswerRequest("q", (page,)))
    assert "Most relevant excerpts" not in user
    assert user.endswith("--- Page: concepts/x (cite as [[x]]) ---\nBody.")


def test_long_pages_are_capped_with_a_marker() -> None:
    body = "\n".join(f"Line {i} " + "word " * 20 for i in range(600))
    assert len(body) > 2 * PAGE_CHAR_LIMIT
    _, user = build_prompt(AnswerRequest("q", (Evidence("concepts/big", "big", "Big", body),)))
    shown = user.split("# Big\n", 1)[1]
    assert len(shown) < PAGE_CHAR_LIMIT + 100
    assert shown.endswith("more characters not shown ...]")
    kept = shown.rsplit("\n", 1)[0]
    assert body.startswith(kept) and f"{len(body) - len(kept)} more characters" in shown


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "3"}, 30) == 3.0
    assert retry_after({"retry-after": "120"}, 30) == 30.0
    assert retry_after({"retry-after-ms": "1500"}, 30) == 1.5
    assert retry_after({"retry-after": "soon"}, 30) is None
    assert retry_after({}, 30) is None
    future = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.0 <= retry_after({"retry-after": future}, 30) <= 5.0
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after({"retry-after": past}, 30) == 0.0


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ('{"error": {"message": "bad key", "type": "x"}}', "bad key"),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "Overloaded",
        ),
        ('{"error": "model not found"}', "model not found"),
        ("<html>\n  oops </html>", "<html> oops </html>"),
        ("x" * 400, "x" * 297 + "..."),
    ],
)
def test_error_detail(body, detail) -> None:
    assert error_detail(body) == detail

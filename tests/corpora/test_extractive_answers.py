"""The offline answerer on real pages (foam-docs): short answers, cited, no code or newlines."""

from __future__ import annotations

import re
from pathlib import Path

from llmwiki_git.providers.base import AnswerRequest, Evidence
from llmwiki_git.providers.extractive import ExtractiveProvider

from .conftest import corpus

LINK = re.compile(r"\[\[([^\]]*)\]\]")


def test_real_pages_give_short_cited_answers() -> None:
    folder = corpus("foam-docs")

    def page(rel: str) -> Evidence:
        text = (folder / rel).read_text(encoding="utf-8")
        if text.startswith("---"):
            text = text.split("---", 2)[2]
        return Evidence(rel[:-3], Path(rel).stem, Path(rel).stem, text)

    evidence = (
        page("user/features/daily-notes.md"),
        page("user/features/templates.md"),
        page("user/features/wikilinks.md"),
    )
    for question in (
        "How do I create a daily note?",
        "What is a wikilink?",
        "How do templates work?",
    ):
        deltas = list(ExtractiveProvider().stream_answer(AnswerRequest(question, evidence, None)))
        answer = "".join(deltas)
        assert 1 <= len(deltas) <= 6 and len(answer) <= 900, answer
        # Citations are evidence links; other links (kept as a reader sees them) are ones the
        # quoted pages contain; a link inside inline code is code.
        links = set(LINK.findall(re.sub(r"`[^`]*`", "", answer)))
        cited = {"daily-notes", "templates", "wikilinks"}
        in_pages = {t.split("|")[0] for e in evidence for t in LINK.findall(e.text)}
        assert links & cited and links <= in_pages | cited, answer
        assert "```" not in answer and "\n" not in answer

"""Shared fixtures: a recorded, instant ``time.sleep`` (backoff without waiting) and evidence."""

from __future__ import annotations

import time

import pytest

from llmwiki_git.providers.base import AnswerRequest, Evidence


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every delay the code under test asked to sleep, in order; no real waiting."""
    delays: list[float] = []
    monkeypatch.setattr(time, "sleep", delays.append)
    return delays


@pytest.fixture
def request_() -> AnswerRequest:
    return AnswerRequest(
        question="What is Alpha?",
        evidence=(
            Evidence(
                "concepts/alpha",
                "alpha",
                "Alpha",
                "Alpha is a consensus protocol.\n",
                ("Alpha is a consensus protocol.",),
            ),
            Evidence("concepts/beta", "beta", "Beta", "Beta stores the log.\n"),
        ),
    )

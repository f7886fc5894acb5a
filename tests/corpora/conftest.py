"""The corpus suite: tests that read real wikis kept outside the repository.

Not part of the default run (tests/conftest.py leaves this folder out unless it is named
on the command line): run it with ``python -m pytest -q tests/corpora``. The corpora are
found at ``$LLMWIKI_CORPORA``, else at ``../shared/corpora`` beside the clone. When they are
missing, each test skips with the path it looked at, except under CI (``CI=true``), where a
missing corpus fails: a CI run must never pass by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..conftest import REPO_ROOT

CORPORA = Path(os.environ.get("LLMWIKI_CORPORA") or REPO_ROOT.parent / "shared" / "corpora")


def corpus(name: str) -> Path:
    """The read-only folder of corpus ``name`` (skip locally, fail under CI, when absent)."""
    folder = CORPORA / name
    if not folder.is_dir():
        message = f"corpus {name} not found at {folder} (set LLMWIKI_CORPORA to the corpora folder)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return folder

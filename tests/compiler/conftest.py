"""Fixtures shared by the compile and ingest tests."""

from __future__ import annotations

import pytest

from ..conftest import Repo, page


@pytest.fixture(params=["wiki", "root"])
def prefix(request: pytest.FixtureRequest, repo: Repo) -> str:
    """A wiki with one concept page, on both layouts (``wiki/``, or a vault at the root next
    to the user's own index.md and log.md); the page prefix of the layout."""
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    if not prefix:
        repo.write("index.md", "# My vault\n\nSee [[alpha]].\n")
        repo.write("log.md", "# My journal\n")
    repo.commit("wiki")
    return prefix

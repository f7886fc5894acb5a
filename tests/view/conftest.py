"""A wiki with a staged candidate, on both layouts, and the view's app driven by Starlette's
TestClient (the same routes, guard and services `llmwiki view` serves)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from starlette.testclient import TestClient

from llmwiki_git.view.app import create_app
from llmwiki_git.view.security import Guard
from llmwiki_git.view.site import Site
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix, page

PORT = 48123
FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@dataclass
class Viewed:
    repo: Repo
    prefix: str
    cid: str  # the staged edit of concepts/alpha.md
    guard: Guard
    client: TestClient


def make_wiki(repo: Repo, prefix: str) -> str:
    """Pages, a source, and one staged edit; returns the candidate id."""
    repo.write("sources/paper.md", "Line one of the paper.\nLine two.\n")
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    repo.write(
        f"{prefix}concepts/beta.md",
        page("Beta", "Beta follows [[alpha]] and not [[nowhere]].\n\n<script>alert(1)</script>"),
    )
    repo.write(
        f"{prefix}concepts/cited.md",
        page(
            "Cited",
            "The paper says so ^[paper.md:1-2] and more ^[paper.md:5-9].",
            sources="[sources/paper.md]",
        ),
    )
    repo.commit("wiki")
    repo.write(
        f"{prefix}concepts/alpha.md",
        page("Alpha", "Alpha is the first letter.\n\nIt comes before [[beta]]: **new text**."),
    )
    proc = repo.llmwiki("review", "stage", "--restore", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["staged"][0]["id"])


def client_for(repo: Repo, *, read_only: bool = False) -> tuple[Guard, TestClient]:
    ws = Workspace.open(repo.root, environ={**FAST}, long_lived=True)
    guard = Guard(PORT)
    app = create_app(Site(ws, guard, read_only=read_only))
    return guard, TestClient(app, base_url=f"http://127.0.0.1:{PORT}")


def login(guard: Guard, client: TestClient) -> None:
    r = client.get(f"/?token={guard.token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/review"


@pytest.fixture(params=["wiki", "vault"])
def viewed(repo: Repo, request: pytest.FixtureRequest) -> Iterator[Viewed]:
    prefix = layout_prefix(repo, request.param)
    cid = make_wiki(repo, prefix)
    guard, client = client_for(repo)
    with client:
        login(guard, client)
        yield Viewed(repo, prefix, cid, guard, client)

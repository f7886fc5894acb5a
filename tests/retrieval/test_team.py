"""The team flow (docs/team.md) against the real engine: CI indexes into the shared store;
a fresh clone with the setting and no local index answers `context` at once, embedding only
its own changes; a wrong or unreachable database is a clear error for `index` and a warning
for reads, which fall back to ranking from the live pages. The password is never printed."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import psycopg
import pytest

from llmwiki_git.gitstore.git import Git
from llmwiki_git.retrieval.conninfo import display

from ..conftest import Repo, copy_demo
from .test_indexref import REF, without_snapshot

LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}
PROMPTS = (
    "two programs moving the same branch at once: who wins?",
    "what does a blob store",
    "review a change",
)


@pytest.fixture
def origin(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    return repo


def clone(origin: Repo, where: Path) -> Repo:
    origin.git("clone", "-q", str(origin.root), str(where))
    return Repo(where)


def reader(pg_uri: str) -> str:
    """The URI of a role that may read the shared store and write nothing (a team member's)."""
    role = f"reader_{secrets.token_hex(4)}"
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    return pg_uri.replace("//postgres:@", f"//{role}:@", 1)


def context(repo: Repo, prompt: str, env: dict[str, str]) -> dict:
    proc = repo.llmwiki("context", prompt, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def shared_count(pg_uri: str) -> int:
    with psycopg.connect(pg_uri) as conn:
        (table,) = conn.execute("SELECT tablename FROM llmwiki_vector_stores").fetchone()  # type: ignore[misc]
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]


def test_a_fresh_clone_answers_from_the_shared_store_embedding_only_its_own_changes(
    origin: Repo, pg_uri: str, tmp_path: Path
) -> None:
    ci = {**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri}
    proc = origin.llmwiki("index", "--json", env=ci)  # the CI job on a push to main
    assert proc.returncode == 0, proc.stderr
    chunks = json.loads(proc.stdout)["chunks"]
    assert shared_count(pg_uri) == chunks
    assert json.loads(proc.stdout)["notes"] == [
        f"vectors in the shared store {display(pg_uri)} ({chunks} of this model, exact search)"
    ]
    solo = clone(origin, tmp_path / "solo")  # the same wiki on the local file store
    assert solo.llmwiki("index", env=LOCAL).returncode == 0
    member = clone(origin, tmp_path / "member")
    assert not (member.root / ".llmwiki" / "embeddings.json").exists()
    team = {**LOCAL, "LLMWIKI_VECTOR_STORE": reader(pg_uri)}
    for prompt in PROMPTS:  # the same primary pages on both stores
        shared, local = context(member, prompt, team), context(solo, prompt, LOCAL)
        assert shared["warnings"] == [] and local["warnings"] == []
        assert [p["id"] for p in shared["primary"]] == [p["id"] for p in local["primary"]]
        assert [p["reasons"] for p in shared["primary"]] == [p["reasons"] for p in local["primary"]]
    paraphrase = context(member, PROMPTS[0], team)["primary"]
    assert (
        paraphrase[0]["id"] == "concepts/compare-and-swap"
        and "semantic-chunk" in paraphrase[0]["reasons"]
    )
    # An uncommitted edit: embedded here (the reader's role may not write), merged into the ranking
    member.write(
        "wiki/concepts/blobs.md",
        (member.root / "wiki/concepts/blobs.md").read_text()
        + "\nA blob is like a sealed envelope holding a letter whose name is its fingerprint.\n",
    )
    pack = context(member, "sealed envelope named by a fingerprint", team)
    assert pack["warnings"] == [] and pack["primary"][0]["id"] == "concepts/blobs"
    assert "semantic-chunk" in pack["primary"][0]["reasons"]
    meta = json.loads((member.root / ".llmwiki" / "embeddings.json").read_text())
    assert (
        meta["vectorStore"] == "postgresql" and len(meta["overlay"]) == 1
    )  # only the changed chunk
    assert shared_count(pg_uri) == chunks  # nothing written to the team's store
    assert (
        context(member, "sealed envelope named by a fingerprint", team)["primary"][0]["id"]
        == "concepts/blobs"
    )
    notes = json.loads(member.llmwiki("index", "--json", env=team).stdout)["notes"]
    assert notes[-1].endswith(
        "this role may not write to it: 1 vector(s) embedded here kept in .llmwiki/ (docs/team.md)"
    )


def test_a_wrong_or_unreachable_store_is_an_error_for_index_and_a_warning_for_reads(
    origin: Repo, pg_uri: str
) -> None:
    down = {**LOCAL, "LLMWIKI_VECTOR_STORE": "postgresql://team:s3cret-pw@127.0.0.1:1/wiki"}
    origin.write(
        ".llmwiki/config.toml", 'vector_store = "postgresql://team@127.0.0.1:1/from-config"\n'
    )
    proc = origin.llmwiki("index", env=LOCAL)  # the config file's setting
    assert (
        proc.returncode != 0
        and "postgresql://127.0.0.1:1/from-config is unreachable" in proc.stderr
    )
    proc = origin.llmwiki("index", env=down)  # the variable wins over the file
    assert proc.returncode != 0 and "unreachable" in proc.stderr
    assert (
        "s3cret-pw" not in proc.stderr + proc.stdout
        and "postgresql://127.0.0.1:1/wiki" in proc.stderr
    )
    proc = origin.llmwiki("context", "what does a blob store", "--json", env=down)
    assert proc.returncode == 0 and "s3cret-pw" not in proc.stdout + proc.stderr
    pack = json.loads(proc.stdout)
    assert [w["code"] for w in pack["warnings"]] == ["vector-store-unavailable"]
    assert pack["primary"][0]["id"] == "concepts/blobs"  # ranked lexically from the live pages
    # Indexed into the store (the variable over the file's unreachable one), then the store
    # goes away: reads still answer, with the warning
    assert origin.llmwiki("index", env={**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri}).returncode == 0
    pack = json.loads(
        origin.llmwiki("context", "what does a blob store", "--json", env=down).stdout
    )
    assert [w["code"] for w in pack["warnings"]] == ["vector-store-unavailable"]
    assert pack["primary"][0]["id"] == "concepts/blobs"


def retitle(repo: Repo, page_id: str, title: str) -> None:
    """Rewrite the clone's refs/llmwiki/index with one page's title changed in its snapshot
    (its sha256 in index.json made to match): a title no page of the work tree holds."""
    git = Git(repo.root)
    table = json.loads(git.read_blob(f"{REF}:store.json"))
    for entry in table["pages"]:
        if entry["pageId"] == page_id:
            entry["title"] = title
    without_snapshot(repo, {"store.json": json.dumps(table, separators=(",", ":")).encode()})


def test_ci_publishes_the_snapshot_and_a_fresh_clone_starts_from_it(
    origin: Repo, pg_uri: str, tmp_path: Path
) -> None:
    """With a shared store, `index --publish` writes the page table and lexical index alone
    (the vectors stay in the database). A fresh clone with the setting restores them instead
    of reading every page -- but never quotes a title only the snapshot holds -- and ranks
    with the shared vectors; without the setting the ref is declined."""
    ci = {**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri}
    proc = origin.llmwiki("index", "--publish", "--json", env=ci)
    assert proc.returncode == 0, proc.stderr
    published = json.loads(proc.stdout)["published"]
    assert published["changed"] and published["shared"] and published["chunks"] == 0
    meta = json.loads(origin.git("cat-file", "blob", f"{REF}:index.json"))
    assert (
        meta["vectorStore"] == "postgresql"
        and meta["chunks"] == 0
        and "store.json" in meta["snapshot"]
    )
    assert origin.git("cat-file", "-s", f"{REF}:vectors").strip() == "0"
    again = json.loads(origin.llmwiki("index", "--publish", "--json", env=ci).stdout)["published"]
    assert not again["changed"] and again["commit"] == published["commit"]

    # A push after the publish, indexed by CI (not published): the clone takes its vector from the store
    origin.write(
        "wiki/concepts/trees.md",
        (origin.root / "wiki/concepts/trees.md").read_text() + "\nA pushed line.\n",
    )
    origin.commit("a change pushed after the publish")
    assert origin.llmwiki("index", env=ci).returncode == 0
    member = clone(origin, tmp_path / "member")
    member.git("fetch", "-q", "origin", f"{REF}:{REF}")
    retitle(member, "concepts/blobs", "Blobs, as the snapshot says")
    team = {**LOCAL, "LLMWIKI_VECTOR_STORE": reader(pg_uri)}
    pack = context(member, PROMPTS[1], team)
    assert pack["warnings"] == [] and pack["primary"][0]["id"] == "concepts/blobs"
    # The snapshot's title for it disagrees with the live page: that page was read again
    # (issue 34 item 3: what a clone quotes comes from the live pages), the rest restored.
    assert pack["primary"][0]["title"] == "Blobs"
    assert "semantic-chunk" in pack["primary"][0]["reasons"]  # ranked with the shared vectors
    stored = json.loads((member.root / ".llmwiki" / "embeddings.json").read_text())
    assert (
        stored["vectorStore"] == "postgresql" and stored["overlay"] == []
    )  # nothing embedded here
    # The member's own edit is embedded here (a reader's role): such an index is not published
    member.write(
        "wiki/concepts/blobs.md",
        (member.root / "wiki/concepts/blobs.md").read_text() + "\nA sealed envelope.\n",
    )
    assert context(member, "sealed envelope", team)["warnings"] == []
    proc = member.llmwiki("index", "--publish", env=team)
    assert proc.returncode != 0 and "not in the shared store" in proc.stderr, proc.stderr

    solo = clone(origin, tmp_path / "solo")  # no setting: the ref's vectors are elsewhere
    solo.git("fetch", "-q", "origin", f"{REF}:{REF}")
    pack = context(solo, PROMPTS[1], LOCAL)
    refused = [w["message"] for w in pack["warnings"] if w["code"] == "index-ref-refused"]
    assert refused and "LLMWIKI_VECTOR_STORE is not set" in refused[0]
    assert pack["primary"][0]["id"] == "concepts/blobs"  # ranked lexically from the live pages


def test_status_reads_an_index_whose_vectors_live_in_the_shared_store(
    origin: Repo, pg_uri: str
) -> None:
    """``wiki_status`` (MCP) opens the store with the setting, the variable's or the config's:
    an index built into the shared store is reported indexed, never as missing vectors."""
    from llmwiki_git.pages.status import wiki_status
    from llmwiki_git.workspace import Workspace

    assert origin.llmwiki("index", env={**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri}).returncode == 0
    by_variable = wiki_status(
        Workspace.open(origin.root, environ={**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri})
    ).to_json()
    (origin.root / ".llmwiki" / "config.toml").write_text(f'vector_store = "{pg_uri}"\n')
    by_config = wiki_status(Workspace.open(origin.root, environ=LOCAL)).to_json()
    for status in (by_variable, by_config):
        assert "storeProblem" not in status, status
        assert status["indexed"] is True and status["indexedPages"] > 0


def keyword_forms(pg_uri: str) -> list[tuple[str, str]]:
    """The connection strings issue 34 found leaking, each for the test database (a local
    socket, whose trust login ignores the password): (string, the password it holds)."""
    from llmwiki_git.retrieval.conninfo import parse

    at = parse(pg_uri)
    host, db = at["host"], at["dbname"]
    return [
        (f"host={host} user=postgres dbname={db} password = S3cretPW!", "S3cretPW!"),
        (f"host={host} dbname={db} user=postgres password='S3cret PW!'", "S3cret PW!"),
        (f"host={host} dbname={db} user=postgres password=S3cret\\ PW", "S3cret PW"),
        (f"dbname = {db}  password =  'it\\'s S3cret' host = {host} user=postgres", "it's S3cret"),
        (f"postgresql://postgres:S3cret%20PW%21@/{db}?host={host}", "S3cret PW!"),
        (f"postgres:///{db}?host={host}&password=S3cretPW!&user=postgres", "S3cretPW!"),
    ]


def leaked(secret: str, text: str) -> list[str]:
    """The pieces of ``secret`` (whitespace and quotes apart, 3 characters or more) in ``text``."""
    pieces = {p for p in secret.replace("'", " ").split() if len(p) >= 3} | {secret}
    return sorted(p for p in pieces if p in text)


def test_only_host_port_and_database_of_any_connection_string_are_printed(
    origin: Repo, pg_uri: str
) -> None:
    """Issue 34 item 1: keyword/value strings (spaces around ``=``, quoted values, backslash
    escapes) and URIs are read as libpq reads them; the success note, the ``--json`` notes
    and the "unreachable" error show the host, port and database name, nothing else."""
    from llmwiki_git.retrieval.conninfo import parse

    at = parse(pg_uri)
    shown = f"postgresql:///{at['dbname']}?host={at['host']}"
    for form, secret in keyword_forms(pg_uri):
        proc = origin.llmwiki("index", "--json", env={**LOCAL, "LLMWIKI_VECTOR_STORE": form})
        assert proc.returncode == 0, proc.stderr
        (note,) = json.loads(proc.stdout)["notes"]
        assert note.startswith(f"vectors in the shared store {shown} ("), note
        assert leaked(secret, proc.stdout + proc.stderr) == [], form
        assert "postgres " not in note and "user" not in note
        proc = origin.llmwiki("index", env={**LOCAL, "LLMWIKI_VECTOR_STORE": form})
        assert proc.returncode == 0 and f"vectors in the shared store {shown} (" in proc.stderr
        assert leaked(secret, proc.stdout + proc.stderr) == [], form
    for form, secret in [
        ("host=127.0.0.1 port=1 user=teamrole dbname=w password = S3cretPW!", "S3cretPW!"),
        ("host=127.0.0.1 port=1 dbname=w user=teamrole password='S3cret PW!'", "S3cret PW!"),
        ("host=127.0.0.1 port=1 dbname=w user=teamrole password=S3cret\\ PW", "S3cret PW"),
        ("postgresql://teamrole:S3cretPW!@127.0.0.1:1/w", "S3cretPW!"),
    ]:
        down = {**LOCAL, "LLMWIKI_VECTOR_STORE": form}
        proc = origin.llmwiki("index", env=down)
        assert proc.returncode == 1 and "postgresql://127.0.0.1:1/w is unreachable" in proc.stderr
        assert leaked(secret, proc.stdout + proc.stderr) == [] and "teamrole" not in proc.stderr
        pack = json.loads(origin.llmwiki("context", "blob", "--json", env=down).stdout)
        assert [w["code"] for w in pack["warnings"]] == ["vector-store-unavailable"]
        assert leaked(secret, json.dumps(pack)) == []
        proc = origin.llmwiki("query", "what does a blob store", "--debug", env=down)
        assert proc.returncode == 0 and "--- Retrieval debug ---" in proc.stdout + proc.stderr
        assert "postgresql://127.0.0.1:1/w" in proc.stdout + proc.stderr
        assert leaked(secret, proc.stdout + proc.stderr) == [] and "teamrole" not in proc.stderr


def test_an_unsupported_scheme_is_a_configuration_error(origin: Repo) -> None:
    """``mysql://x@y/z`` never reaches the driver (which was handed the redacted display
    text): exit 2, naming what is supported; a read says so too instead of degrading."""
    for setting in ("mysql://x@y/z", "not a connection string"):
        env = {**LOCAL, "LLMWIKI_VECTOR_STORE": setting}
        for args in (("index",), ("context", "blob", "--json")):
            proc = origin.llmwiki(*args, env=env)
            assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
            assert "postgresql://" in proc.stderr and "sqlite:///" in proc.stderr
            assert "configured vector store" not in proc.stderr and "x@y" not in proc.stderr


def test_mcp_replies_name_the_store_by_host_port_and_database(
    origin: Repo, pg_uri: str, tmp_path: Path
) -> None:
    """Issue 34 item 1, over MCP (`llmwiki serve` in a real process, the SDK's client): with
    an unreachable store written as keyword/value pairs, the search, context pack and status
    replies name it by host, port and database, never its password or user."""
    import os
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    assert origin.llmwiki("index", env={**LOCAL, "LLMWIKI_VECTOR_STORE": pg_uri}).returncode == 0
    down = "host=127.0.0.1 port=1 dbname=w user=teamrole password='S3cret PW!'"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "llmwiki_git", "serve", "--root", str(origin.root)],
        env={**os.environ, **LOCAL, "LLMWIKI_VECTOR_STORE": down},
        cwd=str(origin.root),
    )
    replies: list[str] = []

    async def main() -> None:
        with open(tmp_path / "server.log", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for tool, args in (
                        ("search_pages", {"query": "what does a blob store", "limit": 3}),
                        ("get_context_pack", {"prompt": "what does a blob store"}),
                        ("wiki_status", {}),
                    ):
                        result = await s.call_tool(tool, args)
                        replies.append(result.content[0].text)

    anyio.run(main)
    said = "\n".join(replies) + (tmp_path / "server.log").read_text()
    assert "postgresql://127.0.0.1:1/w" in said
    assert "S3cret" not in said and "teamrole" not in said

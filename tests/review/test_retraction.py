"""`llmwiki retract sources/x.md`: ONE retraction/1 candidate deletes the source and the pages
written from it alone, and rewrites the pages that drew on it too (offline: marked
`retracted:`, its citations removed; with a model: rewritten from the other sources). Links to
the deleted pages refuse approval until fixed or `--allow-broken`. Candidates stay strict:
a hostile branch touching sources/ any other way is refused. Both layouts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from llmwiki_git.publication.candidates import body_digest

from ..checks.test_stale_check import fed
from ..conftest import Repo, page
from ..servers import json_response, serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
X = "# Paper X\n\nX says the sky is green, as measured at noon.\nMore about x.\n"
Y = "# Paper Y\n\nY says the sky is blue, as measured at noon.\n"


@pytest.fixture(params=["wiki", "root"])
def wiki(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    """Sources x and y compiled to notes; `sky` written from both; `other` links x's note."""
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/start.md", page("Start", "The wiki."))
    if not prefix:
        repo.write("index.md", "# My vault\n\nSee [[start]].\n")
    repo.write("sources/x.md", X)
    repo.write("sources/y.md", Y)
    repo.commit("sources")
    assert repo.llmwiki("compile", "--publish", env=FAST).returncode == 0
    blob = {s: repo.git("rev-parse", f"HEAD:sources/{s}.md").strip() for s in "xy"}
    repo.write(
        f"{prefix}concepts/sky.md",
        fed(
            "Sky",
            "Green ^[x.md:3-3]; blue ^[y.md:3-3, x.md:4-4]. Notes: [[x]], "
            "[[y]].\n\n```\n^[x.md:1-1] in code stays\n```",
            {"sources/x.md": blob["x"], "sources/y.md": blob["y"]},
        ),
    )
    repo.write(f"{prefix}concepts/other.md", page("Other", "See [[x|paper X's note]] and [[sky]]."))
    repo.commit("pages")
    return repo, prefix


def retract(repo: Repo, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = repo.llmwiki("retract", "sources/x.md", "--json", *args, env={**FAST, **(env or {})})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert isinstance(out, dict)
    return out


def test_offline_retraction_end_to_end(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    note, sky, other = (f"{prefix}concepts/{n}.md" for n in ("x", "sky", "other"))
    head = repo.git("rev-parse", "HEAD").strip()
    dry = retract(repo, "--dry-run")
    assert dry["deleted"] == [note] and dry["rewritten"] == [{"target": sky, "how": "marked"}]
    assert [(b["path"], b["target"]) for b in dry["breaks"]] == [
        (other, "x")
    ]  # sky's own link is unlinked
    assert dry["candidate"] is None and repo.git("branch", "--list", "llmwiki/review/*") == ""

    run = retract(repo)
    branch, cid = run["candidate"]["branch"], run["candidate"]["id"]
    assert cid.startswith("retract-x-") and repo.git("rev-parse", "HEAD").strip() == head
    assert [p["target"] for p in run["candidate"]["pages"]] == [note, sky, "sources/x.md"]
    trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)", branch)
    assert "Llmwiki-Kind: retraction/1" in trailers and "Llmwiki-Retracts: sources/x.md" in trailers
    rewritten = repo.git("show", f"{branch}:{sky}")
    assert "x.md" not in rewritten.replace("^[x.md:1-1] in code stays", "").replace(
        "- sources/x.md\n---", "---"
    )
    assert (
        "retracted:\n- sources/x.md\n" in rewritten
        and "Green; blue ^[y.md:3-3]. Notes: x, [[y]]." in rewritten
    )
    assert "^[x.md:1-1] in code stays" in rewritten

    refused = repo.llmwiki("review", "approve", cid, env=FAST)
    assert (
        refused.returncode == 1 and f"{other}:4: broken link [[x|paper X's note]]" in refused.stderr
    )
    assert (repo.root / "sources/x.md").exists()
    shown = repo.llmwiki("review", "show", cid, env=FAST).stdout
    assert "retracts: sources/x.md" in shown and "Approval would be refused (broken)" in shown
    # the user fixes the link on the branch; the retraction then passes without --allow-broken
    repo.write(other, page("Other", "See [[sky]]."))
    repo.commit("unlink x's note")
    done = repo.llmwiki("review", "approve", cid, env=FAST)
    assert done.returncode == 0, done.stderr
    assert not (repo.root / "sources/x.md").exists() and not (repo.root / note).exists()
    check = json.loads(repo.llmwiki("check", "--json", env=FAST).stdout)["problems"]
    assert [(p["path"], p["code"], p["target"]) for p in check] == [
        (sky, "stale-page", "sources/x.md")
    ]


def test_allow_broken_approves_a_retraction_and_nothing_else(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    out = retract(repo, "--publish", "--allow-broken")
    assert out["approved"] and out["refusal"] is None
    assert not (repo.root / "sources/x.md").exists()
    broken = json.loads(repo.llmwiki("check", "--json", env=FAST).stdout)["problems"]
    assert [(p["path"], p["code"]) for p in broken if p["severity"] == "error"] == [
        (f"{prefix}concepts/other.md", "broken-link")
    ]
    repo.write("sources/z.md", "# Z\n\nZ.\n")
    repo.commit("z")
    staged = json.loads(repo.llmwiki("compile", "--json", env=FAST).stdout)["candidate"]["id"]
    wrong = repo.llmwiki("review", "approve", staged, "--allow-broken", env=FAST)
    assert wrong.returncode == 2 and "applies to retractions only" in wrong.stderr
    assert (
        repo.llmwiki("retract", "sources/x.md", env=FAST).returncode == 2
    )  # nothing names it any more
    assert (
        "needs --publish"
        in repo.llmwiki("retract", "sources/z.md", "--allow-broken", env=FAST).stderr
    )


def test_with_a_model_the_shared_page_is_rewritten_from_what_is_left(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    asked: list[str] = []

    def model(
        path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        user = body["messages"][1]["content"]
        asked.append(user)
        reply = {
            "title": "Sky",
            "summary": "The sky, per Y.",
            "body": "Blue ^[y.md:3-3], green ^[x.md:3-3].",
        }
        return json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(reply)},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    with serve(model) as (url, _):
        out = retract(repo, env={"OPENAI_BASE_URL": f"{url}/v1", "LLMWIKI_MODEL": "m"})
    sky = f"{prefix}concepts/sky.md"
    assert out["rewritten"] == [{"target": sky, "how": "model"}] and len(asked) == 1
    assert "sources/x.md was RETRACTED" in asked[0] and "Source file: y.md" in asked[0]
    assert "Source file: x.md" not in asked[0]
    written = repo.git("show", f"{out['candidate']['branch']}:{sky}")
    assert "Blue ^[y.md:3-3], green." in written  # a citation of the retracted source is dropped
    assert "sources/x.md" not in written and "retracted" not in written
    trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)", out["candidate"]["branch"])
    assert (
        "Llmwiki-Prompt: retraction/1" in trailers and "Llmwiki-Source: sources/y.md " in trailers
    )


# -- hostile branches --------------------------------------------------------------------------


def forge(
    repo: Repo,
    cid: str,
    changes: dict[str, Any],
    trailers: list[tuple[str, str]],
    kind: str = "retraction/1",
    base: str | None = None,
) -> None:
    """A candidate branch built by hand: ``changes`` (path -> text, None to delete, ("link",
    target) for a symlink, ("exec", text)) on ``base``, with the trailer block given (each
    listed file's target, precondition and digest filled in from ``trailers``)."""
    base = base or repo.git("rev-parse", "HEAD").strip()
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.root / ".git" / "forge-index")}

    def git(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run(
                ["git", *args], cwd=repo.root, env=env, input=data, capture_output=True, check=True
            )
            .stdout.decode()
            .strip()
        )

    git("read-tree", base)
    for path, value in changes.items():
        if value is None:
            git("update-index", "--force-remove", path)
            continue
        mode, text = (
            ("120000", value[1])
            if isinstance(value, tuple) and value[0] == "link"
            else ("100755", value[1])
            if isinstance(value, tuple)
            else ("100644", value)
        )
        blob = git("hash-object", "-w", "--stdin", data=text.encode())
        git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
    tree = git("write-tree")
    block = [
        ("Llmwiki-Candidate", cid),
        ("Llmwiki-Kind", kind),
        *trailers[:-1],
        ("Llmwiki-Base", base),
        trailers[-1],
    ]
    message = "forged\n\n" + "".join(f"{k}: {v}\n" for k, v in block if k)
    commit = git("commit-tree", tree, "-p", base, "-m", message)
    repo.git("update-ref", f"refs/heads/llmwiki/review/{cid}", commit)


def files(*entries: tuple[str, str, str]) -> list[tuple[str, str]]:
    return [
        pair
        for target, pre, digest in entries
        for pair in (
            ("Llmwiki-Target", target),
            ("Llmwiki-Precondition", pre),
            ("Llmwiki-Body-Digest", digest),
        )
    ]


HOSTILE = [
    "second-source",
    "source-written",
    "outside-sources",
    "compile-deletes-source",
    "symlink-source",
    "two-retracts",
    "retracts-on-compile",
    "no-retracts",
    "hidden-source",
]


@pytest.mark.parametrize("root", ["wiki", ""])
@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_retraction_is_refused(repo: Repo, case: str, root: str) -> None:
    a = f"{root}/concepts/a.md" if root else "concepts/a.md"
    repo.write(a, page("A", "A."))
    repo.write("sources/x.md", X)
    repo.write("sources/y.md", Y)
    if case == "symlink-source":
        os.remove(repo.root / "sources/x.md")
        os.symlink("y.md", repo.root / "sources/x.md")
    if case == "hidden-source":
        repo.write("sources/.secret/x.md", X)
    repo.commit("wiki")
    blob = {
        p: repo.git("rev-parse", f"HEAD:{p}").strip() for p in ("sources/x.md", "sources/y.md", a)
    }
    source = "sources/.secret/x.md" if case == "hidden-source" else "sources/x.md"
    if case == "hidden-source":
        blob[source] = repo.git("rev-parse", f"HEAD:{source}").strip()
    drop_x = (source, f"blob {blob[source]}", "absent")
    retracts = ("Llmwiki-Retracts", source)
    plan: dict[str, tuple[dict[str, Any], list[tuple[str, str]], str]] = {
        "second-source": (
            {source: None, "sources/y.md": None},
            files(drop_x, ("sources/y.md", f"blob {blob['sources/y.md']}", "absent")) + [retracts],
            "retraction/1",
        ),
        "source-written": (
            {source: "# rewritten\n"},
            files((source, f"blob {blob[source]}", body_digest("# rewritten\n"))) + [retracts],
            "retraction/1",
        ),
        "outside-sources": (
            {a: None},
            files((a, f"blob {blob[a]}", "absent")) + [("Llmwiki-Retracts", a)],
            "retraction/1",
        ),
        "compile-deletes-source": ({source: None}, files(drop_x) + [("", "")], "compile/1"),
        "symlink-source": ({source: None}, files(drop_x) + [retracts], "retraction/1"),
        "two-retracts": (
            {source: None},
            files(drop_x) + [("Llmwiki-Retracts", "sources/y.md"), retracts],
            "retraction/1",
        ),
        "retracts-on-compile": ({source: None}, files(drop_x) + [retracts], "compile/1"),
        "no-retracts": ({source: None}, files(drop_x) + [("", "")], "retraction/1"),
        "hidden-source": ({source: None}, files(drop_x) + [retracts], "retraction/1"),
    }
    changes, trailers, kind = plan[case]
    cid = "retract-x-0123abcd"
    forge(repo, cid, changes, trailers, kind)
    listed = json.loads(repo.llmwiki("review", "list", "--json", env=FAST).stdout)["candidates"]
    assert [c["id"] for c in listed] == [cid] and listed[0]["citationStatus"] == "malformed"
    done = repo.llmwiki("review", "approve", cid, env=FAST)
    assert done.returncode == 1, done.stdout + done.stderr
    not_page = (
        "not a .md page under the wiki root (wiki)"
        if root
        else "a source (in sources/), not a page"
    )
    expected = {
        "second-source": f"'sources/y.md' is {not_page}",
        "source-written": "may only delete",
        "outside-sources": "not a page under the wiki root nor a file in sources/",
        "compile-deletes-source": f"'sources/x.md' is {not_page}",
        "symlink-source": "a symlink",
        "two-retracts": "malformed trailer",
        "retracts-on-compile": "malformed trailer",
        "no-retracts": "malformed trailer",
        "hidden-source": "hidden folder",
    }[case]
    assert expected in done.stderr, done.stderr
    for path in ("sources/x.md", "sources/y.md", a):
        assert (repo.root / path).exists() or os.path.islink(repo.root / path)
    assert repo.git("status", "--porcelain") == ""


def test_retract_refuses_what_is_no_source(repo: Repo, tmp_path: Path) -> None:
    repo.write("wiki/concepts/a.md", page("A", "A."))
    repo.write("sources/x.md", X)
    repo.commit("wiki")
    for bad, why in (
        ("wiki/concepts/a.md", "is not a file in sources/"),
        ("../x.md", "is not a file in sources/"),
        ("sources/none.md", "nothing to retract"),
    ):
        done = repo.llmwiki("retract", bad, env=FAST)
        assert done.returncode == 2 and why in done.stderr, (bad, done.stderr)

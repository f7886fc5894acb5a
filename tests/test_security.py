"""Issue 12: each attack an outsider can mount with files and git plumbing, as a test.

Real repositories in tmp_path and the real CLI in subprocesses; nothing we own is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import Repo, copy_demo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
TOKEN = "ghp_SECRETTOKEN1234567890"


def demo_in(repo: Repo, layout: str) -> str:
    """The demo wiki in ``layout`` (``wiki`` folder or a vault at the root); returns the
    prefix pages live under."""
    copy_demo(repo.root)
    if layout == "vault":
        for item in (repo.root / "wiki").iterdir():
            shutil.move(str(item), repo.root / item.name)
        (repo.root / "wiki").rmdir()
        shutil.rmtree(repo.root / ".llmwiki")
        (repo.root / "index.md").write_text("# My vault home\n\nHand-written [[blobs]] index.\n")
    repo.commit("demo wiki")
    repo.git("config", "remote.origin.url", f"https://user:{TOKEN}@example.com/r.git")
    return "wiki/" if layout == "wiki" else ""


def leak_free(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert "top-secret-env" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_symlinked_pages_into_dot_git_or_dotenv_are_never_read(repo: Repo, layout: str) -> None:
    prefix = demo_in(repo, layout)
    up = "../.." if prefix else ".."
    repo.write(".env", "API_KEY=top-secret-env remote origin url\n")
    (repo.root / ".gitignore").write_text(".env\n")
    os.symlink(f"{up}/.git/config", repo.root / f"{prefix}concepts/gitcfg.md")
    os.symlink(f"{up}/.env", repo.root / f"{prefix}concepts/dotenv.md")
    os.symlink("blobs.md", repo.root / f"{prefix}concepts/blob-alias.md")  # inside: still a page
    for args in (
        ["query", "remote origin url"],
        ["context", "remote origin url API_KEY", "--json"],
        ["index"],
        ["query", "remote origin url"],
    ):
        leak_free(repo.llmwiki_process(*args, env=FAST))
    check = repo.llmwiki_process("check", "--json", env=FAST)
    leak_free(check)
    assert check.stdout, check.stderr
    found = {(p["path"], p["code"]) for p in json.loads(check.stdout)["problems"]}
    assert (f"{prefix}concepts/gitcfg.md", "symlink-escape") in found
    assert (f"{prefix}concepts/dotenv.md", "symlink-escape") in found
    # inside the wiki: a page of its own name, read and checked (its title is blobs.md's, twice)
    assert {code for path, code in found if path.endswith("blob-alias.md")} <= {
        "duplicate-title",
        "alias-collision",
    }
    pack = json.loads(repo.llmwiki_process("context", "blobs", "--json", env=FAST).stdout)
    assert "concepts/blob-alias" in json.dumps(pack) or "concepts/blobs" in json.dumps(pack)


def test_symlink_in_a_pull_request_is_reported_not_read(repo: Repo) -> None:
    prefix = demo_in(repo, "wiki")
    base = repo.git("rev-parse", "HEAD").strip()
    os.symlink("../../.git/config", repo.root / f"{prefix}concepts/gitcfg.md")
    head = repo.commit("add a symlink")
    proc = repo.llmwiki("check", "--json", "--base", base, "--head", head)
    leak_free(proc)
    assert ("wiki/concepts/gitcfg.md", "symlink-escape") in {
        (p["path"], p["code"]) for p in json.loads(proc.stdout)["problems"]
    }


def sources_demo(repo: Repo, cite: str) -> None:
    demo_in(repo, "wiki")
    repo.write("wiki/concepts/blobs.md", f"---\ntitle: Blobs\n---\nBlob facts ^[{cite}:1-2].\n")
    repo.commit("cite a source")


def test_sources_folder_symlinked_to_etc_is_refused(repo: Repo) -> None:
    sources_demo(repo, "passwd")
    os.symlink("/etc", repo.root / "sources")
    proc = repo.llmwiki("context", "blob facts", "--json", "--include-sources", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "root:" not in proc.stdout
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert blobs["sourceWindows"] == []
    assert any("leaves" in w["message"] for w in blobs["warnings"])


def test_fifo_source_is_refused_at_once(repo: Repo) -> None:
    sources_demo(repo, "pipe.txt")
    (repo.root / "sources").mkdir()
    os.mkfifo(repo.root / "sources" / "pipe.txt")
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [*repo.llmwiki_cmd(), "context", "blob facts", "--json", "--include-sources"],
            cwd=repo.root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **FAST},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("context hung on a FIFO under sources/")
    assert proc.returncode == 0, proc.stderr
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert any("FIFO" in w["message"] for w in blobs["warnings"]), blobs["warnings"]
    assert time.monotonic() - started < 60


def test_huge_sparse_source_is_refused_without_reading_it(repo: Repo) -> None:
    sources_demo(repo, "big.txt")
    (repo.root / "sources").mkdir()
    with open(repo.root / "sources" / "big.txt", "wb") as handle:
        handle.write(b"line one\nline two\n")
        handle.truncate(300 * 1024 * 1024)
    proc = repo.llmwiki("context", "blob facts", "--json", "--include-sources", env=FAST)
    assert proc.returncode == 0, proc.stderr
    blobs = next(p for p in json.loads(proc.stdout)["primary"] if p["id"] == "concepts/blobs")
    assert blobs["sourceWindows"] == []
    assert any("over the 16 MB limit" in w["message"] for w in blobs["warnings"]), blobs["warnings"]


def test_committed_activity_log_symlink_is_not_written_through(repo: Repo, tmp_path: Path) -> None:
    demo_in(repo, "wiki")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, repo.root / ".llmwiki" / "activity.log")
    repo.git("add", "-f", ".llmwiki/activity.log")
    repo.git("commit", "-q", "-m", "a hostile symlink")
    proc = repo.llmwiki("query", "what is a blob?", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert "activity-log-refused" in proc.stderr


def test_symlinked_state_folder_is_refused(repo: Repo, tmp_path: Path) -> None:
    demo_in(repo, "wiki")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(repo.root / ".llmwiki")
    os.symlink(elsewhere, repo.root / ".llmwiki")
    proc = repo.llmwiki("query", "what is a blob?", env=FAST)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1 and "symlink" in proc.stderr
    assert list(elsewhere.iterdir()) == []


# --- hostile review candidates ------------------------------------------------------------


def forge(
    repo: Repo,
    cid: str,
    target: str,
    mode: str = "100644",
    content: bytes = b"Forged [[blobs]] answer.\n",
    *,
    sha: str | None = None,
    base: str | None = None,
    kind: str = "validated-answer/1",
) -> str:
    """A candidate branch built with git plumbing only, as an outsider could push it: one
    commit on ``base`` adding ``target`` with ``mode``, trailers and a body digest that match."""
    from llmwiki_git.publication.candidates import body_digest

    base = base or repo.git("rev-parse", "HEAD").strip()
    if sha is None:
        sha = (
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo.root,
                input=content,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
    tree = _tree_with(repo, f"{base}^{{tree}}", target.split("/"), mode, sha)
    message = (
        f"llmwiki: candidate {cid}\n\nQuestion: forged\n\nLlmwiki-Candidate: {cid}\n"
        f"Llmwiki-Kind: {kind}\nLlmwiki-Target: {target}\nLlmwiki-Precondition: absent\n"
        f"Llmwiki-Body-Digest: {body_digest(content)}\nLlmwiki-Base: {base}\n"
    )
    commit = repo.git("commit-tree", tree, "-p", base, "-m", message).strip()
    repo.git("update-ref", f"refs/heads/llmwiki/review/{cid}", commit)
    return commit


def _tree_with(repo: Repo, tree: str | None, parts: list[str], mode: str, sha: str) -> str:
    """``tree`` with ``parts`` set to (mode, sha), built with mktree (which, unlike the
    index, lets a path through ``.git`` in, as a hostile push can)."""
    entries = {}
    if tree is not None:
        for line in repo.git("ls-tree", "-z", tree).split("\0"):
            if line:
                meta, name = line.split("\t", 1)
                entries[name] = meta
    if len(parts) == 1:
        kind = "commit" if mode == "160000" else "blob"
        entries[parts[0]] = f"{mode} {kind} {sha}"
    else:
        old = entries.get(parts[0])
        sub = _tree_with(repo, old.split()[2] if old else None, parts[1:], mode, sha)
        entries[parts[0]] = f"040000 tree {sub}"
    text = "".join(f"{meta}\t{name}\0" for name, meta in entries.items())
    return subprocess.run(
        ["git", "mktree", "-z"],
        cwd=repo.root,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


HOSTILE = [
    ("cfg-00000001", "wiki/queries/cfg.md", "120000", b"../../.git/config", "not-a-regular-file"),
    (
        "exe-00000002",
        "wiki/queries/exe.md",
        "100755",
        b"Forged [[blobs]] answer.\n",
        "not-a-regular-file",
    ),
    ("sub-00000003", "wiki/queries/sub.md", "160000", None, "not-a-regular-file"),
    ("x-00000004", "notes/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("evil-00000005", "queries/evil.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    (
        "x-00000006",
        ".github/workflows/queries/x.md",
        "100644",
        b"Forged [[blobs]].\n",
        "bad-target",
    ),
    ("x-00000007", "wiki/concepts/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
    ("x-00000008", ".git/queries/x.md", "100644", b"Forged [[blobs]].\n", "bad-target"),
]


@pytest.mark.parametrize("cid,target,mode,content,code", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_candidates_are_refused_by_show_and_approve(
    repo: Repo, cid: str, target: str, mode: str, content: bytes | None, code: str
) -> None:
    demo_in(repo, "wiki")
    tip = repo.git("rev-parse", "HEAD").strip()
    forge(repo, cid, target, mode, content or b"", sha=tip if content is None else None)
    shown = repo.llmwiki("review", "show", cid, "--json", env=FAST)
    assert shown.returncode == 0, shown.stderr
    verdict = json.loads(shown.stdout)["verdict"]
    assert verdict["ok"] is False and verdict["code"] == code, verdict
    approved = repo.llmwiki("review", "approve", cid, env=FAST)
    leak_free(approved)
    assert approved.returncode == 1 and "reject it" in approved.stderr, approved.stderr
    assert repo.git("rev-parse", "HEAD").strip() == tip
    assert not (repo.root / "wiki" / "queries").exists()
    leak_free(repo.llmwiki("query", "remote origin url", env=FAST))


def test_one_gitlink_candidate_never_breaks_the_others(repo: Repo) -> None:
    demo_in(repo, "wiki")
    tip = repo.git("rev-parse", "HEAD").strip()
    forge(repo, "sub-00000003", "wiki/queries/sub.md", "160000", sha=tip)
    good = "good-0000000a"
    forge(repo, good, "wiki/queries/good.md", content=b"A blob is content [[blobs]].\n")
    listed = repo.llmwiki("review", "list", "--json", env=FAST)
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)["candidates"]}
    assert rows[good]["citationStatus"] == "1 resolved, 0 pending, 0 broken"
    assert (
        rows["sub-00000003"]["citationStatus"] == "malformed"
        and "gitlink" in rows["sub-00000003"]["notes"][0]
    )
    text = repo.llmwiki("review", "list", env=FAST)
    assert text.returncode == 0 and "warning: sub-00000003" in text.stderr
    approved = repo.llmwiki("review", "approve", good, env=FAST)
    assert approved.returncode == 0, approved.stderr
    assert (
        repo.root / "wiki" / "queries" / "good.md"
    ).read_text() == "A blob is content [[blobs]].\n"


def test_reject_works_when_the_rejected_ref_exists(repo: Repo) -> None:
    demo_in(repo, "wiki")
    first = forge(repo, "why-0000000b", "wiki/queries/why.md")
    repo.git("update-ref", "refs/llmwiki/rejected/why-0000000b", first)
    repo.git("update-ref", "-d", "refs/heads/llmwiki/review/why-0000000b")
    second = forge(
        repo, "why-0000000b", "wiki/queries/why.md", content=b"Another [[blobs]] answer.\n"
    )
    proc = repo.llmwiki("review", "reject", "why-0000000b")
    assert proc.returncode == 0, proc.stderr
    assert repo.git("rev-parse", "refs/llmwiki/rejected/why-0000000b").strip() == first
    assert repo.git("rev-parse", "refs/llmwiki/rejected/why-0000000b-2").strip() == second
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""


# --- the gate fails closed ----------------------------------------------------------------

UNCHECKABLE = {
    "nul": b"---\ntitle: Hidden\n---\nSee [[nowhere-hidden]] <!-- \x00 -->\n",
    "oversize": b"See [[nowhere-hidden]]\n" + b"x" * (9 * 1024 * 1024),
    "latin1": "caf\xe9 [[nowhere-hidden]]\n".encode("latin-1"),
}


@pytest.mark.parametrize("kind", sorted(UNCHECKABLE))
def test_hook_refuses_a_page_it_cannot_fully_check(repo: Repo, kind: str) -> None:
    demo_in(repo, "wiki")
    repo.write("wiki/concepts/hidden.md", UNCHECKABLE[kind])
    repo.git("add", "-A")
    proc = repo.llmwiki("check", "--staged", "--base", "HEAD", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [p for p in json.loads(proc.stdout)["problems"] if p["severity"] == "error"]
    refused = [p for p in errors if p["code"] == "unchecked-page"]
    assert [p["path"] for p in refused] == ["wiki/concepts/hidden.md"]
    assert "must be fully checkable" in refused[0]["message"]
    # an unchanged page that was already there is not the change's fault: no error
    repo.commit("let it in with --no-verify")
    repo.write("wiki/concepts/other.md", "fine [[blobs]]\n")
    repo.git("add", "-A")
    assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 0


def test_action_fails_a_pull_request_adding_a_nul_page(repo: Repo, tmp_path: Path) -> None:
    from .test_action import pr_event, run_action

    demo_in(repo, "wiki")
    base = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("wiki/concepts/hidden.md", UNCHECKABLE["nul"])
    head = repo.commit("a page with a NUL byte")
    run = run_action(
        repo, tmp_path / "gh", event=pr_event(base, head, "feature"), inputs={"fail-on": "broken"}
    )
    assert not run.success and run.outcomes["check"] == "failure"
    assert any("llmwiki unchecked-page" in line for line in run.commands), run.commands


def test_answer_with_a_nul_is_refused_before_any_write(repo: Repo) -> None:
    from .answer.test_query_cli import openai_env, sse_answer
    from .servers import serve

    demo_in(repo, "wiki")
    before = repo.git("rev-parse", "HEAD").strip()
    with serve(sse_answer("Blobs are content [[blobs]] \x00 hidden [[nowhere]].")) as (url, _):
        proc = repo.llmwiki("query", "what is a blob?", "--save", env={**openai_env(url), **FAST})
    assert proc.returncode == 1, proc.stderr
    assert "contains NUL bytes" in proc.stderr
    assert repo.git("rev-parse", "HEAD").strip() == before
    assert not (repo.root / "wiki" / "queries").exists()
    assert b"\x00" not in (repo.root / "wiki" / "index.md").read_bytes()


def test_bad_bytes_in_a_question_never_crash(repo: Repo) -> None:
    demo_in(repo, "wiki")
    proc = subprocess.run(
        [*repo.llmwiki_cmd(), "query", b"blob \xff store", "--save"],
        cwd=repo.root,
        capture_output=True,
        env={**os.environ, **FAST},
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert b"Traceback" not in proc.stderr and b"Internal error" not in proc.stderr


# --- safe parsing and output --------------------------------------------------------------

BOMB = (
    "---\ntitle: Bomb\na: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    + "---\nBoom.\n"
)


def test_yaml_alias_bomb_is_refused_in_milliseconds(repo: Repo) -> None:
    assert len(BOMB) < 1000
    code = (
        "import sys, time; from llmwiki_git.wiki import frontmatter; t = time.perf_counter(); "
        "m = frontmatter.parse(sys.stdin.read()); "
        "print(m.data == {}, 'aliases' in (m.error or ''), time.perf_counter() - t < 1.0)"
    )
    proc = subprocess.run(
        [os.sys.executable, "-c", code],
        input=BOMB,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo.root,
    )
    assert proc.stdout.split() == ["True", "True", "True"], (
        proc.stdout + proc.stderr
    )  # unbounded: 9**9 values


def test_links_on_a_device_is_a_clear_error(repo: Repo) -> None:
    demo_in(repo, "wiki")
    proc = subprocess.run(
        [*repo.llmwiki_cmd(), "links", "/dev/zero"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


ESC = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;https://e.vil\x1b\\\u009b31m"


def test_terminal_output_never_carries_control_sequences(repo: Repo) -> None:
    from .answer.test_query_cli import openai_env, sse_answer
    from .servers import serve

    demo_in(repo, "wiki")
    repo.write(
        f"wiki/concepts/evil{ESC[:3]}.md", f"---\ntitle: Evil {ESC}\n---\nA blob [[x{ESC}]].\n"
    )
    repo.commit("hostile names")
    outputs = [repo.llmwiki("check"), repo.llmwiki("context", "evil blob", env=FAST)]
    with serve(sse_answer(f"A blob {ESC} is [[blobs]] and [[nope{ESC}]].")) as (url, _):
        outputs.append(repo.llmwiki("query", "what is a blob?", env={**openai_env(url), **FAST}))
    forge(repo, "evil-0000000c", "wiki/queries/evil.md", content=f"Evil {ESC} [[blobs]]\n".encode())
    outputs += [repo.llmwiki("review", "show", "evil-0000000c"), repo.llmwiki("review", "list")]
    for proc in outputs:
        text = proc.stdout + proc.stderr
        assert "\x1b" not in text and "\x07" not in text and "\u009b" not in text, text
    assert "\\x1b" in outputs[0].stdout  # shown, visibly escaped


def test_step_summary_escapes_markdown_and_html(repo: Repo, tmp_path: Path) -> None:
    from .test_action import pr_event, run_action

    demo_in(repo, "wiki")
    base = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write(
        "wiki/concepts/a`b<img src=x>.md", "[[<img src=x onerror=alert(1)>`|`x\r]] [[a|b]]\n"
    )
    head = repo.commit("hostile names")
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head, "feature"))
    table = [line for line in run.summary.splitlines() if line.startswith("| <code>")]
    assert table, run.summary
    for row in table:
        assert "<img" not in row and "`" not in row and "\r" not in row
        assert row.count("|") == 6  # the five cells stay five cells


def test_hook_install_quotes_the_interpreter_path(repo: Repo, tmp_path: Path) -> None:
    """An interpreter whose path holds ``$( )``: installed by the real CLI run from that very
    path, then the hook runs at commit time; the command substitution must never run."""
    import sys

    venv = Path(sys.prefix)
    odd = tmp_path / "py$(touch pwned)"  # the hook runs in the repository root
    odd.mkdir()
    for name in ("bin", "lib", "pyvenv.cfg"):
        if (venv / name).exists():
            (odd / name).symlink_to(venv / name)
    python = odd / "bin" / Path(sys.executable).name
    demo_in(repo, "wiki")
    proc = subprocess.run(
        [str(python), "-m", "llmwiki_git", "hooks", "install"],
        cwd=repo.root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    repo.write("wiki/concepts/new.md", "fine [[blobs]]\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "runs the hook")
    assert not (repo.root / "pwned").exists() and not (tmp_path / "pwned").exists()
    assert "fine [[blobs]]" in repo.git(
        "show", "HEAD:wiki/concepts/new.md"
    )  # the hook ran and passed


# --- the store is verified, not trusted ---------------------------------------------------

LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}


def _index(repo: Repo) -> dict:
    proc = repo.llmwiki("index", "--json", env=LOCAL)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _meta(repo: Repo) -> dict:
    return json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())


@pytest.mark.parametrize("first_row", [999999, -5, "7", True])
def test_out_of_range_rows_are_detected_and_rebuilt(repo: Repo, first_row: object) -> None:
    pytest.importorskip("onnxruntime")
    demo_in(repo, "wiki")
    chunks = _index(repo)["chunks"]
    meta = _meta(repo)
    meta["pages"][0]["firstRow"] = first_row
    (repo.root / ".llmwiki" / "embeddings.json").write_text(json.dumps(meta))
    for args in (["query", "what is a blob?"], ["context", "what is a blob?", "--json"]):
        proc = repo.llmwiki(*args, env=LOCAL)
        assert proc.returncode == 0, proc.stderr
        assert "embeddings.json is corrupt" in proc.stderr + proc.stdout
    rebuilt = _index(repo)
    assert rebuilt["embedded"] == chunks and rebuilt["notes"], rebuilt
    assert "corrupt" not in repo.llmwiki("query", "what is a blob?", env=LOCAL).stderr


def test_nan_and_random_vectors_are_detected_and_rebuilt(repo: Repo) -> None:
    pytest.importorskip("onnxruntime")
    demo_in(repo, "wiki")
    chunks = _index(repo)["chunks"]
    path = repo.root / ".llmwiki" / "embeddings.bin"
    data = bytearray(path.read_bytes())
    data[32:] = b"\x00\x00\xc0\x7f" * ((len(data) - 32) // 4)  # float32 NaN everywhere
    path.write_bytes(bytes(data))
    proc = repo.llmwiki("query", "what is a blob?", env=LOCAL)
    assert proc.returncode == 0 and "NaN or infinite" in proc.stderr, proc.stderr
    rebuilt = _index(repo)
    assert rebuilt["embedded"] == chunks and any(
        "NaN" in n or "digest" in n for n in rebuilt["notes"]
    )
    data = bytearray(path.read_bytes())
    data[32:] = bytes(range(256)) * ((len(data) - 32) // 256) + bytes((len(data) - 32) % 256)
    path.write_bytes(bytes(data))
    rebuilt = _index(repo)
    assert rebuilt["embedded"] == chunks and rebuilt["reused"] == 0, rebuilt


def test_store_file_replaced_by_a_folder_is_rebuilt(repo: Repo) -> None:
    pytest.importorskip("onnxruntime")
    demo_in(repo, "wiki")
    chunks = _index(repo)["chunks"]
    path = repo.root / ".llmwiki" / "embeddings.bin"
    path.unlink()
    path.mkdir()
    proc = repo.llmwiki("query", "what is a blob?", env=LOCAL)
    assert proc.returncode == 0 and "embeddings.bin is not a regular file" in proc.stderr, (
        proc.stderr
    )
    rebuilt = _index(repo)
    assert rebuilt["embedded"] == chunks and path.is_file()


def test_log_md_symlinked_elsewhere_is_never_copied_into_a_commit(
    repo: Repo, tmp_path: Path
) -> None:
    demo_in(repo, "wiki")
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY top-secret-env\n")
    (repo.root / "log.md").unlink()
    os.symlink(secret, repo.root / "log.md")
    repo.commit("a hostile log.md")
    proc = repo.llmwiki("query", "what is a blob?", "--save", env=FAST)
    assert "Traceback" not in proc.stderr and "log.md" in proc.stderr, proc.stderr
    assert "PRIVATE KEY" not in repo.git("log", "-p", "--all")
    assert secret.read_text() == "PRIVATE KEY top-secret-env\n"


def test_candidate_branch_name_and_verdict_are_escaped_in_the_step_summary(
    repo: Repo, tmp_path: Path
) -> None:
    from .test_action import _shim, pr_event, run_action, seed

    cid = "x`<img>-0123abcd"
    verdict = {
        "ok": False,
        "code": "forged",
        "message": "bad <img src=x onerror=alert(1)> `code` | cell\r\x1b[2J",
    }
    env = _shim(tmp_path, json.dumps({"version": 1, "id": cid, "verdict": verdict}))
    base = seed(repo)
    repo.git("checkout", "-q", "-b", f"llmwiki/review/{cid}")
    repo.write("wiki/queries/x.md", "[[alpha]]\n")
    head = repo.commit("candidate")
    run = run_action(
        repo, tmp_path / "gh", event=pr_event(base, head, f"llmwiki/review/{cid}"), env=env
    )
    line = next(line for line in run.summary.splitlines() if line.startswith("Review candidate"))
    assert "<img" not in line and "`" not in line and "\r" not in line and "\x1b" not in line, line
    assert "&#60;img&#62;" in line


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_the_gate_refuses_page_names_with_control_or_bidi_characters(
    repo: Repo, layout: str
) -> None:
    """Issue 34, item 7: a page whose file name holds a C1 control or a bidi character is an
    error (control-character-name) of `check` and of the hook's staged check; a name in
    another script and right-to-left marks inside the text are fine."""
    prefix = demo_in(repo, layout)
    fine = f"{prefix}concepts/café-שלום.md"
    repo.write(fine, "---\ntitle: Café\n---\nשלום \u200f[[blobs]] are fine.\n")
    repo.commit("a fine page")
    assert repo.llmwiki("check", env=FAST).returncode == 0
    bad = {f"{prefix}concepts/\u202egpj.md": "\\u202e", f"{prefix}a\u009b31mred.md": "\\x9b"}
    for path in bad:
        repo.write(path, "---\ntitle: Red\n---\nLinks to [[blobs]].\n")
    repo.git("add", "-A")
    for args in (("check", "--json"), ("check", "--staged", "--base", "HEAD", "--json")):
        proc = repo.llmwiki(*args, env=FAST)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        found = [p for p in json.loads(proc.stdout)["problems"] if p["severity"] == "error"]
        assert {p["path"] for p in found} == set(bad), found
        assert all(p["code"] == "control-character-name" for p in found), found
        for p in found:
            assert bad[p["path"]] in p["message"] and "rename it" in p["message"], p
    text = repo.llmwiki("check", env=FAST)
    assert text.stdout.count("the file name holds the control or bidi character") == 2, text
    assert "\u202e" not in text.stdout and "\u009b" not in text.stdout, text.stdout
    repo.git("rm", "-q", "--cached", *bad)
    for path in bad:
        (repo.root / path).unlink()
    assert repo.llmwiki("check", "--staged", "--base", "HEAD", env=FAST).returncode == 0

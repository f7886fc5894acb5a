"""The GitHub Action's entry point (``action.yml``): ``python -m llmwiki_git.action
check|candidate|publish``.

Every input arrives through an environment variable that ``action.yml`` sets with ``env:``
(``LLMWIKI_INPUT_PATH``, ``_BASE``, ``_HEAD``, ``_FAIL_ON``, ``_SUMMARY``; the pull
request's branches as ``LLMWIKI_HEAD_REF`` and ``LLMWIKI_BASE_REF``), never pasted into a
shell line, and is validated here. The check itself is the ``llmwiki check --format github`` command, run in a child
process on resolved commit ids; this module adds what only the Action needs: defaults for
push events, a clear error when a shallow clone lacks the base commit, ``fail-on``, the
``summary`` switch, the review-candidate step, and the ``publish-index`` step (``llmwiki index
--publish`` after a push to the default branch, then ``refs/llmwiki/index`` pushed).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from . import github
from .errors import LlmwikiError, UsageError
from .gitstore.datarefs import fetch_tip, push_ref
from .publication import kinds
from .publication.candidates import BRANCH_PREFIX, is_candidate_id
from .wording import plural
from .workspace import Workspace

FAIL_ON = ("broken", "warnings", "never")
FETCH_HINT = (
    "use actions/checkout with fetch-depth: 0, so that the clone holds the commits to compare"
)
TITLE = "llmwiki action"
#: The id GitHub gives github.event.before when there was nothing before (sha1 or sha256).
NULL_COMMIT = re.compile(r"0{40}|0{64}")


def _input(environ: Mapping[str, str], name: str) -> str:
    value = environ.get("LLMWIKI_INPUT_" + name.upper().replace("-", "_"), "").strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UsageError(f"input {name} {value!r} contains control characters")
    return value


def _choice(environ: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = _input(environ, name).lower() or default
    if value not in allowed:
        raise UsageError(f"input {name} is {value!r}: use one of {', '.join(allowed)}")
    return value


def _shallow(ws: Workspace) -> bool:
    return ws.require_git("the action").is_shallow()


def _commit(ws: Workspace, value: str, name: str) -> str:
    commit = ws.require_git("the action").rev_parse(
        value
    )  # --end-of-options: "--output=x" is no flag
    if commit is None:
        raise UsageError(
            f"{name} commit {value!r} is not in this clone{' (a shallow clone)' if _shallow(ws) else ''}",
            hint=FETCH_HINT,
        )
    return commit


def _range(ws: Workspace, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(base, head) commit ids; base None for a root commit (then every problem is new)."""
    head = _commit(ws, _input(environ, "head") or "HEAD", "head")
    base = _input(environ, "base")
    if base and NULL_COMMIT.fullmatch(base):
        # github.event.before on the first push of a new branch (or a tag): there is no
        # "before"; compare with the parent of head, as with no base at all.
        print(
            f"::notice title={TITLE}::base is the all-zero commit id (the first push of a branch): "
            "comparing head with its parent"
        )
        base = ""
    if base:
        return _commit(ws, base, "base"), head
    if ws.require_git("the action").rev_parse(f"{head}~1") is None and not _shallow(ws):
        return None, head  # the first commit of a repository
    return _commit(ws, f"{head}~1", "base"), head


def _outputs(text: str) -> dict[str, int]:
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if value.isdigit():
            found[key] = int(value)
    return found


def check(environ: Mapping[str, str]) -> int:
    fail_on = _choice(environ, "fail-on", "broken", FAIL_ON)
    summary = _choice(environ, "summary", "true", ("true", "false")) == "true"
    path = _input(environ, "path")
    ws = Workspace.open(Path.cwd(), wiki_dir=path or None)  # ConfigError for "/abs" or "../x"
    ws.require_git("the action")
    if path and not ((ws.project or ws.root) / (ws.settings.wiki_dir or "")).is_dir():
        raise UsageError(
            f"input path {path!r} is not a folder in the checkout",
            hint="give the wiki folder relative to the repository root, or leave path out: "
            "the default is wiki/ when it exists, else the repository root",
        )
    base, head = _range(ws, environ)
    args = [
        sys.executable,
        "-m",
        "llmwiki_git",
        *([f"--wiki-dir={path}"] if path else []),
        "check",
        "--format",
        "github",
    ]
    args += [f"--base={base}", f"--head={head}"] if base else [f"--rev={head}"]
    env = dict(environ)
    if not summary:
        env.pop("GITHUB_STEP_SUMMARY", None)
    with tempfile.TemporaryDirectory() as tmp:
        env["GITHUB_OUTPUT"] = os.path.join(tmp, "output")
        sys.stdout.flush()
        code = subprocess.run(args, env=env).returncode
        written = (
            Path(env["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
            if os.path.exists(env["GITHUB_OUTPUT"])
            else ""
        )
    if code not in (0, 1):
        print(
            github.command(
                "error",
                f"llmwiki check failed with exit code {code}; see the log above",
                title=TITLE,
            )
        )
        return code
    if environ.get("GITHUB_OUTPUT"):
        with open(environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as handle:
            handle.write(written)
    counts = _outputs(written)
    broken, warnings = counts.get("broken", 0), counts.get("warnings", 0)
    errors = broken > 0 or code == 1
    failed = {"broken": errors, "warnings": errors or warnings > 0, "never": False}[fail_on]
    what = f"new in {head[:12]} since {base[:12]}" if base else f"in {head[:12]}"
    print(
        f"llmwiki: {broken} broken, {plural(warnings, 'warning')} {what}; fail-on: {fail_on} -> {'fail' if failed else 'pass'}"
    )
    return 1 if failed else 0


def _summary(environ: Mapping[str, str], text: str) -> None:
    if (
        environ.get("GITHUB_STEP_SUMMARY")
        and _choice(environ, "summary", "true", ("true", "false")) == "true"
    ):
        with open(environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(text)


def _onto(ws: Workspace, environ: Mapping[str, str]) -> str:
    """What an approval would move: the pull request's base branch as fetched
    (``refs/remotes/origin/<base_ref>``, its newest tip), else the base commit."""
    git = ws.require_git("the action")
    base_ref = environ.get("LLMWIKI_BASE_REF", "").strip()
    if base_ref and base_ref.isprintable() and git.rev_parse(f"refs/remotes/origin/{base_ref}"):
        return f"refs/remotes/origin/{base_ref}"
    base = _input(environ, "base")
    if not base:
        raise UsageError(
            "no base branch to judge the candidate's approval onto",
            hint="run the action on pull_request events",
        )
    return _commit(ws, base, "base")


def _not_validated(environ: Mapping[str, str], cid: str, why: str) -> int:
    print(
        github.command(
            "notice",
            f"candidate validation needs a newer llmwiki: {why}, so candidate {cid} was not validated",
            title="llmwiki review",
        )
    )
    _summary(
        environ,
        f"\nReview candidate <code>{github.md_text(cid)}</code>: not validated (needs a newer llmwiki).\n",
    )
    return 0


def _kind_line(view: object) -> str:
    """The summary's line naming the candidate's kind as its row shows it (`review show
    --json`'s ``kind``: from the branch's trailers, so escaped), and what approval holds it to."""
    kind = view.get("kind") if isinstance(view, dict) else None
    row = kinds.row(kind) if isinstance(kind, str) else None
    if row is None:
        return ""
    return f"\nA {row.shows_as} (<code>{github.md_text(row.name)}</code>): {github.md_text(row.promise)}.\n"


def candidate(environ: Mapping[str, str]) -> int:
    """Would ``llmwiki review approve`` accept the candidate this pull request comes from?"""
    fail_on = _choice(environ, "fail-on", "broken", FAIL_ON)
    ref = environ.get("LLMWIKI_HEAD_REF", "")
    if not ref.startswith(BRANCH_PREFIX):
        print("not a review candidate branch: nothing to validate")
        return 0
    cid = ref[len(BRANCH_PREFIX) :]
    if not is_candidate_id(cid):
        raise UsageError(
            f"branch {ref!r} does not name a review candidate (llmwiki/review/<slug>-<8 hex>)"
        )
    cli = [sys.executable, "-m", "llmwiki_git"]
    probe = subprocess.run([*cli, "review", "show", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        return _not_validated(environ, cid, "this version has no `llmwiki review`")
    proc = _review_show(environ, cli, ref, cid)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or "no output"
        print(
            github.command(
                "error",
                f"llmwiki review show {cid} failed ({proc.returncode}): {detail}",
                title="llmwiki review",
            )
        )
        return 1
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    # the verdict of review.approve.evaluate: {"ok": bool, "code": ..., "message": ...}
    verdict = data.get("verdict") if isinstance(data, dict) else None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("ok"), bool):
        print(
            github.command(
                "warning",
                f"cannot tell whether candidate {cid} would be approved: `llmwiki review show --json` gave no verdict",
                title="llmwiki review",
            )
        )
        return 0
    passed = _report_verdict(environ, cid, verdict, _kind_line(data))
    return 0 if passed or fail_on == "never" else 1


def _review_show(
    environ: Mapping[str, str], cli: list[str], ref: str, cid: str
) -> subprocess.CompletedProcess[str]:
    """``llmwiki review show --json`` of the candidate on branch ``ref``, onto the branch
    the pull request targets (the checkout's remote branch made local first)."""
    ws = Workspace.open(Path.cwd())
    git = ws.require_git("the action")
    head = _commit(ws, _input(environ, "head") or "HEAD", "head")
    onto = _onto(ws, environ)
    # actions/checkout fetches branches as refs/remotes/origin/*: give review its local branch
    git.update_ref(f"refs/heads/{ref}", head, "", check=False)
    sys.stdout.flush()
    return subprocess.run(
        [*cli, "review", "show", cid, "--json", f"--onto={onto}"], capture_output=True, text=True
    )


def _report_verdict(
    environ: Mapping[str, str], cid: str, verdict: Mapping[str, object], shown: str
) -> bool:
    """The verdict as an annotation and in the job summary; True when approval would pass."""
    if verdict["ok"]:
        print(
            github.command(
                "notice", f"review candidate {cid}: approval would pass", title="llmwiki review"
            )
        )
        _summary(
            environ,
            f"\nReview candidate <code>{github.md_text(cid)}</code>: approval would pass.\n"
            + shown,
        )
        return True
    why = str(verdict.get("message") or verdict.get("code") or "no reason given")
    print(
        github.command(
            "error",
            f"review candidate {cid}: approval would be refused: {why}",
            title="llmwiki review",
        )
    )
    _summary(
        environ,
        f"\nReview candidate <code>{github.md_text(cid)}</code>: approval would be refused: "
        f"{github.md_text(why)}\n" + shown,
    )
    return False


INDEX_REF = "refs/llmwiki/index"  # retrieval.indexref.REF (a test keeps them equal)


def _default_branch(environ: Mapping[str, str]) -> str:
    """The repository's default branch, from the event payload (a push event names it)."""
    path = environ.get("GITHUB_EVENT_PATH", "")
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        event = {}
    repository = event.get("repository") if isinstance(event, dict) else None
    branch = repository.get("default_branch") if isinstance(repository, dict) else None
    return branch if isinstance(branch, str) else ""


def publish(environ: Mapping[str, str]) -> int:
    """``publish-index: true``: on a push to the default branch, fetch the last published
    index (the next one's parent), run ``llmwiki index --publish --json`` and push
    ``refs/llmwiki/index`` to origin; on any other event or branch, a notice and nothing."""
    if _choice(environ, "publish-index", "false", ("true", "false")) != "true":
        return 0
    path = _input(environ, "path")
    ref, default = environ.get("GITHUB_REF", ""), _default_branch(environ)
    if environ.get("GITHUB_EVENT_NAME") != "push" or not default or ref != f"refs/heads/{default}":
        where = default or "the default branch"
        print(
            github.command(
                "notice",
                f"publish-index: the index is published after a push to {where} only; "
                "nothing published",
                title=TITLE,
            )
        )
        return 0
    ws = Workspace.open(Path.cwd(), wiki_dir=path or None)
    git = ws.require_git("publishing the index")
    fetch_tip(git, "origin", INDEX_REF)  # the next snapshot's parent, when there is one
    args = [sys.executable, "-m", "llmwiki_git", *([f"--wiki-dir={path}"] if path else [])]
    sys.stdout.flush()
    code = subprocess.run([*args, "index", "--publish", "--json"], env=dict(environ)).returncode
    if code != 0:
        print(
            github.command(
                "error",
                f"llmwiki index --publish failed with exit code {code}; see the log above",
                title=TITLE,
            )
        )
        return code
    if not push_ref(git, "origin", INDEX_REF):
        print(
            github.command(
                "error",
                f"could not push {INDEX_REF} to origin: the job needs `permissions: contents: "
                "write` (and a checkout that kept its credentials)",
                title=TITLE,
            )
        )
        return 1
    print(f"llmwiki: the index of {ref[len('refs/heads/') :]} is published on {INDEX_REF}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    steps = {"check": check, "candidate": candidate, "publish": publish}
    if len(args) != 1 or args[0] not in steps:
        print(
            "usage: python -m llmwiki_git.action check|candidate|publish  (inputs come from LLMWIKI_INPUT_* variables)",
            file=sys.stderr,
        )
        return 2
    try:
        return steps[args[0]](os.environ)
    except LlmwikiError as exc:
        print(github.command("error", str(exc), title=TITLE))
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

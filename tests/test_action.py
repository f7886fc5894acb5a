"""The GitHub Action (`action.yml`) run as a runner runs it: metadata parsed with PyYAML,
expressions evaluated here, each `run:` step executed by bash in a real git repository with
the variables GitHub sets. Offline: the install step is skipped with
LLMWIKI_ACTION_SKIP_INSTALL=1 (the package is installed in the test environment), except in
the test of the install step itself, which fakes the interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import REPO_ROOT, Repo, page

ACTION_PATH = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ACTION_PATH / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]

# --- a small evaluator for the GitHub expressions action.yml uses -------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|(?P<name>[A-Za-z_][\w.\-]*))"
)
_STATUS = ("success", "failure", "always", "cancelled")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression {text!r} at {pos}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Eval:
    """Recursive descent over ||, &&, !, ==, !=, calls, literals and context paths."""

    def __init__(self, text: str, ctx: dict[str, Any], failed: bool) -> None:
        self.toks, self.i, self.ctx, self.failed = _tokens(text), 0, ctx, failed

    def run(self) -> Any:
        value = self.or_()
        assert self.i == len(self.toks), f"trailing tokens in expression: {self.toks[self.i :]}"
        return value

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        self.i += 1
        return self.toks[self.i - 1]

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value or right
        return value

    def and_(self) -> Any:
        value = self.not_()
        while self.peek() == "&&":
            self.take()
            right = self.not_()
            value = value and right
        return value

    def not_(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not self.not_()
        left = self.atom()
        if self.peek() in ("==", "!="):
            op = self.take()[1]
            equal = (
                _str(left).lower() == _str(self.atom()).lower()
            )  # GitHub compares strings ignoring case
            return equal if op == "==" else not equal
        return left

    def atom(self) -> Any:
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return int(text)
        if text == "(":
            value = self.or_()
            assert self.take()[1] == ")"
            return value
        if kind == "name" and self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.or_())
                if self.peek() == ",":
                    self.take()
            self.take()
            return self.call(text, args)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        value: Any = self.ctx
        for part in text.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def call(self, name: str, args: list[Any]) -> Any:
        if name == "startsWith":
            return _str(args[0]).lower().startswith(_str(args[1]).lower())
        if name == "contains":
            return _str(args[1]).lower() in _str(args[0]).lower()
        status = {
            "success": not self.failed,
            "failure": self.failed,
            "always": True,
            "cancelled": False,
        }
        if name in status:
            return status[name]
        raise AssertionError(f"the test runner does not implement {name}()")


def interpolate(text: str, ctx: dict[str, Any], failed: bool = False) -> str:
    return re.sub(
        r"\$\{\{(.*?)\}\}", lambda m: _str(_Eval(m.group(1), ctx, failed).run()), str(text)
    )


def condition(text: str | None, ctx: dict[str, Any], failed: bool) -> bool:
    expr = (text or "success()").strip()
    if expr.startswith("${{") and expr.endswith("}}"):
        expr = expr[3:-2]
    if not any(re.search(rf"\b{s}\(\)", expr) for s in _STATUS):
        expr = f"success() && ({expr})"
    return bool(_Eval(expr, ctx, failed).run())


# --- the runner --------------------------------------------------------------------------


def _read_outputs(path: Path) -> dict[str, str]:
    """Parse a GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM` blocks."""
    found, lines = {}, path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            found[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        name, _, value = line.partition("=")
        found[name] = value
        i += 1
    return found


@dataclass
class Run:
    success: bool
    outcomes: dict[str, str]
    stdout: str
    stderr: str
    outputs: dict[str, str]
    step_outputs: dict[str, dict[str, str]]
    summary: str
    logs: dict[str, str] = field(default_factory=dict)

    @property
    def commands(self) -> list[str]:
        """Workflow-command lines (annotations, notices) the runner would act on."""
        return [line for line in self.stdout.splitlines() if line.startswith("::")]


def pr_event(
    base: str, head: str, head_ref: str = "feature/links", base_ref: str = "main"
) -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "number": 7,
            "base": {"sha": base, "ref": base_ref},
            "head": {"sha": head, "ref": head_ref},
        },
    }


def run_action(
    repo: Repo,
    tmp: Path,
    *,
    inputs: dict[str, str] | None = None,
    event: dict[str, Any] | None = None,
    event_name: str = "pull_request",
    env: dict[str, str] | None = None,
    skip_install: bool = True,
    cwd: Path | None = None,
) -> Run:
    """Run action.yml's steps in order, the way the runner does for a composite action."""
    inputs = {"python": sys.executable, **(inputs or {})}
    event = event if event is not None else {}
    pr = event.get("pull_request") or {}
    tmp.mkdir(parents=True, exist_ok=True)
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    workspace = cwd or repo.root
    sha = repo.git("rev-parse", "HEAD").strip() if cwd is None else ""
    github_ctx = {
        "event": event,
        "event_name": event_name,
        "sha": sha,
        "workspace": str(workspace),
        "action_path": str(ACTION_PATH),
        "head_ref": pr.get("head", {}).get("ref", ""),
        "base_ref": pr.get("base", {}).get("ref", ""),
        "ref": f"refs/pull/{pr['number']}/merge" if pr else event.get("ref", "refs/heads/main"),
    }
    base_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_")) and k != "LLMWIKI_ACTION_SKIP_INSTALL"
    }
    base_env.update(
        {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(ACTION_PATH),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_SHA": sha,
            "GITHUB_REF": github_ctx["ref"],
            "GITHUB_HEAD_REF": github_ctx["head_ref"],
            "GITHUB_BASE_REF": github_ctx["base_ref"],
            "RUNNER_TEMP": str(runner_temp),
            **(env or {}),
        }
    )
    if skip_install:
        base_env["LLMWIKI_ACTION_SKIP_INSTALL"] = "1"
    declared = ACTION["inputs"]
    assert set(inputs) <= set(declared), f"undeclared inputs {set(inputs) - set(declared)}"
    ctx: dict[str, Any] = {"github": github_ctx, "steps": {}, "inputs": {}}
    ctx["inputs"] = {
        name: inputs[name] if name in inputs else interpolate(spec.get("default", ""), ctx)
        for name, spec in declared.items()
    }
    failed, outcomes, step_outputs, logs = False, {}, {}, {}
    out_all, err_all, summary = [], [], ""
    for number, step in enumerate(STEPS):
        sid = step.get("id", f"__{number}")
        if not condition(step.get("if"), ctx, failed):
            outcomes[sid] = "skipped"
            ctx["steps"][sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            continue
        files = {
            name: tmp / f"{sid}.{name}"
            for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH")
        }
        for path in files.values():
            path.write_text("")
        script = tmp / f"{sid}.sh"
        script.write_text(step["run"], encoding="utf-8")
        step_env = {
            **base_env,
            **{k: str(v) for k, v in files.items()},
            **{k: interpolate(v, ctx, failed) for k, v in (step.get("env") or {}).items()},
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
        )
        out_all.append(proc.stdout)
        err_all.append(proc.stderr)
        logs[sid] = proc.stdout + proc.stderr
        summary += files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")
        outcome = "success" if proc.returncode == 0 else "failure"
        failed = failed or proc.returncode != 0
        outcomes[sid] = outcome
        step_outputs[sid] = _read_outputs(files["GITHUB_OUTPUT"])
        ctx["steps"][sid] = {
            "outputs": step_outputs[sid],
            "outcome": outcome,
            "conclusion": outcome,
        }
    outputs = {name: interpolate(spec["value"], ctx) for name, spec in ACTION["outputs"].items()}
    return Run(
        not failed,
        outcomes,
        "".join(out_all),
        "".join(err_all),
        outputs,
        step_outputs,
        summary,
        logs,
    )


# --- fixtures ----------------------------------------------------------------------------


def as_pull_request(repo: Repo, branch: str, commit: str, main: str) -> None:
    """The clone a pull_request job checks out: the candidate ``branch`` only on the remote
    (``origin/<branch>``, not a local branch), origin's main at ``main``, HEAD detached at
    the candidate's ``commit``."""
    repo.git("update-ref", f"refs/remotes/origin/{branch}", commit)
    repo.git("update-ref", "-d", f"refs/heads/{branch}")
    repo.git("update-ref", "refs/remotes/origin/main", main)
    repo.git("checkout", "-q", "--detach", commit)


def seed(repo: Repo) -> str:
    repo.write(
        "wiki/concepts/alpha.md", page("Alpha", "# Alpha\n\nLinks to [[beta]].\n\n## Usage\n")
    )
    repo.write("wiki/concepts/beta.md", page("Beta", "Back to [[alpha#usage]].\n"))
    repo.write("wiki/concepts/delta.md", page("Delta", "See [[alpha]] and [[beta]].\n"))
    return repo.commit("seed")


def pr(
    repo: Repo,
    tmp_path: Path,
    change: dict[str, str],
    head_ref: str = "feature/links",
    **kwargs: Any,
) -> Run:
    base = seed(repo)
    repo.git("checkout", "-q", "-b", head_ref)
    for rel, text in change.items():
        repo.write(rel, text)
    head = repo.commit("change")
    return run_action(repo, tmp_path / "gh", event=pr_event(base, head, head_ref), **kwargs)


GAMMA_BROKEN = {"wiki/concepts/gamma.md": page("Gamma", "See [[Nowhere]] and [[alpha]].\n")}
BROKEN_ANNOTATION = "::error file=wiki/concepts/gamma.md,line=4,col=5,title=llmwiki broken-link::broken link [[Nowhere]]"
BROKEN_ROW = "| <code>wiki/concepts/gamma.md</code> | 4 | 5 | error | broken link &#91;&#91;Nowhere&#93;&#93; |"


# --- the metadata ------------------------------------------------------------------------


def test_metadata_is_a_composite_action_with_optional_inputs_and_step_outputs() -> None:
    assert ACTION["name"] and ACTION["description"] and ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {
        "path",
        "base",
        "head",
        "fail-on",
        "summary",
        "publish-index",
        "index-extras",
        "python",
    }
    assert ACTION["inputs"]["publish-index"]["default"] == "false"
    for name, spec in ACTION["inputs"].items():
        assert spec["description"] and spec["required"] is False and "default" in spec, name
    assert ACTION["inputs"]["base"]["default"] == "${{ github.event.pull_request.base.sha }}"
    assert ACTION["inputs"]["head"]["default"] == "${{ github.event.pull_request.head.sha }}"
    assert (
        ACTION["inputs"]["fail-on"]["default"] == "broken"
        and ACTION["inputs"]["summary"]["default"] == "true"
    )
    assert ACTION["inputs"]["python"]["default"] == "python3"
    ids = [s.get("id") for s in STEPS]
    for name, spec in ACTION["outputs"].items():
        assert spec["description"] and spec["value"] == f"${{{{ steps.check.outputs.{name} }}}}"
    assert set(ACTION["outputs"]) == {"broken", "warnings", "checked"} and "check" in ids


def test_no_expression_in_any_run_line_and_every_run_step_declares_bash() -> None:
    """Inputs and branch names reach the scripts only through env: (script injection)."""
    for step in STEPS:
        if "run" in step:
            assert step["shell"] == "bash", step.get("id")
            assert "${{" not in step["run"], step.get("id")
    used = {
        m
        for s in STEPS
        for v in (s.get("env") or {}).values()
        for m in re.findall(r"inputs\.([\w-]+)", v)
    }
    assert used == set(ACTION["inputs"])  # every input is used, and only through env:
    check = next(s for s in STEPS if s.get("id") == "check")
    assert set(check["env"]) >= {
        "LLMWIKI_INPUT_PATH",
        "LLMWIKI_INPUT_BASE",
        "LLMWIKI_INPUT_HEAD",
        "LLMWIKI_INPUT_FAIL_ON",
        "LLMWIKI_INPUT_SUMMARY",
    }


def test_expression_evaluator_follows_github_rules() -> None:
    ctx = {
        "github": {"head_ref": "LLMWIKI/Review/x", "event": {}},
        "steps": {"a": {"outcome": "success"}},
    }
    assert interpolate("${{ github.event.pull_request.base.sha }}", ctx) == ""
    assert condition("${{ startsWith(github.head_ref, 'llmwiki/review/') }}", ctx, failed=False)
    assert not condition("startsWith(github.head_ref, 'llmwiki/review/')", ctx, failed=True)
    assert condition("!cancelled() && steps.a.outcome == 'success'", ctx, failed=True)


# --- pull requests -----------------------------------------------------------------------


def test_clean_pull_request_passes(repo: Repo, tmp_path: Path) -> None:
    run = pr(
        repo, tmp_path, {"wiki/concepts/gamma.md": page("Gamma", "See [[alpha]] and [[beta]].\n")}
    )
    assert run.success, run.stdout + run.stderr
    assert run.outcomes == {
        "install": "success",
        "check": "success",
        "candidate": "skipped",
        "publish": "skipped",
    }
    assert run.outputs == {"broken": "0", "warnings": "0", "checked": "4"}
    assert run.commands == []
    assert run.summary == "### llmwiki check\n\n4 pages checked: 0 errors, 0 warnings.\n\n"


def test_pull_request_adding_a_broken_link_fails_with_annotation_summary_and_outputs(
    repo: Repo, tmp_path: Path
) -> None:
    run = pr(repo, tmp_path, GAMMA_BROKEN)
    assert not run.success and run.outcomes["check"] == "failure"
    assert run.commands == [BROKEN_ANNOTATION]
    assert BROKEN_ROW in run.summary.splitlines()
    assert run.summary == (
        "### llmwiki check\n\n4 pages checked: 1 error, 0 warnings.\n\n"
        "| file | line | col | severity | problem |\n|---|---|---|---|---|\n" + BROKEN_ROW + "\n"
    )
    assert run.outputs == {"broken": "1", "warnings": "0", "checked": "4"}
    assert "1 broken, 0 warnings new in" in run.stdout and "fail-on: broken -> fail" in run.stdout


def test_checks_the_event_commits_not_the_checked_out_tree(repo: Repo, tmp_path: Path) -> None:
    """On pull_request, actions/checkout checks out a merge commit: the range comes from
    the event, whatever HEAD is."""
    base = seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[Nowhere]]\n")
    head = repo.commit("break")
    repo.git("checkout", "-q", "--detach", base)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head))
    assert run.commands == [
        "::error file=wiki/concepts/gamma.md,line=1,col=1,title=llmwiki broken-link::broken link [[Nowhere]]"
    ]


def test_renaming_a_page_annotates_the_untouched_pages_linking_to_it(
    repo: Repo, tmp_path: Path
) -> None:
    base = seed(repo)
    repo.git("checkout", "-q", "-b", "rename")
    repo.git("mv", "wiki/concepts/alpha.md", "wiki/concepts/alpha-renamed.md")
    head = repo.commit("rename alpha")
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head, "rename"))
    assert not run.success
    assert run.commands == [
        "::error file=wiki/concepts/beta.md,line=4,col=9,title=llmwiki broken-link::broken link [[alpha#usage]]",
        "::error file=wiki/concepts/delta.md,line=4,col=5,title=llmwiki broken-link::broken link [[alpha]]",
    ]
    assert run.outputs["broken"] == "2"


def test_fail_on_never_reports_but_passes(repo: Repo, tmp_path: Path) -> None:
    run = pr(repo, tmp_path, GAMMA_BROKEN, inputs={"fail-on": "never"})
    assert run.success and run.commands == [BROKEN_ANNOTATION]
    assert run.outputs["broken"] == "1" and BROKEN_ROW in run.summary


def test_fail_on_warnings_fails_on_a_new_broken_anchor(repo: Repo, tmp_path: Path) -> None:
    change = {"wiki/concepts/gamma.md": "[[alpha#No Such]]\n"}
    warning = '::warning file=wiki/concepts/gamma.md,line=1,col=1,title=llmwiki missing-heading::missing heading [[alpha#No Such]]: no heading "No Such" in concepts/alpha'
    strict = pr(repo, tmp_path, change, inputs={"fail-on": "warnings"})
    assert not strict.success and strict.outputs == {"broken": "0", "warnings": "1", "checked": "4"}
    assert strict.commands == [warning] and "fail-on: warnings -> fail" in strict.stdout
    default = run_action(
        repo, tmp_path / "gh2", event=json.loads((tmp_path / "gh" / "event.json").read_text())
    )
    assert default.success and default.outputs["warnings"] == "1"


def test_more_than_50_problems_gives_50_annotations_and_a_full_summary(
    repo: Repo, tmp_path: Path
) -> None:
    change = {
        f"wiki/concepts/bad{f}.md": "".join(f"[[missing-{f}-{i}]]\n" for i in range(12))
        for f in range(6)
    }
    run = pr(repo, tmp_path, change)
    annotations = run.commands
    assert len(annotations) == 50  # GitHub keeps at most 50 per job
    for f in range(6):
        assert sum(f"bad{f}.md," in a for a in annotations) <= 10  # and 10 per file
    assert sum(f"bad{f}.md," in a for a in annotations for f in range(5)) == 50
    rows = [line for line in run.summary.splitlines() if line.startswith("| <code>wiki/")]
    assert len(rows) == 72  # the summary has every problem
    assert run.outputs == {"broken": "72", "warnings": "0", "checked": "9"}


def test_summary_false_writes_no_summary(repo: Repo, tmp_path: Path) -> None:
    run = pr(repo, tmp_path, GAMMA_BROKEN, inputs={"summary": "false"})
    assert (
        run.summary == "" and run.commands == [BROKEN_ANNOTATION] and run.outputs["broken"] == "1"
    )


def test_path_input_checks_a_wiki_in_a_subfolder(repo: Repo, tmp_path: Path) -> None:
    repo.write("docs/kb/a.md", "# A\n[[b]]\n")
    repo.write("docs/kb/b.md", "# B\n")
    repo.write("notes/other.md", "[[not-a-wiki-link-we-check]]\n")
    base = repo.commit("seed")
    repo.write("docs/kb/c.md", "[[a]] [[zzz]]\n")
    head = repo.commit("add c")
    run = run_action(repo, tmp_path / "gh", inputs={"path": "docs/kb"}, event=pr_event(base, head))
    assert run.commands == [
        "::error file=docs/kb/c.md,line=1,col=7,title=llmwiki broken-link::broken link [[zzz]]"
    ]
    assert run.outputs == {"broken": "1", "warnings": "0", "checked": "3"}


def test_root_layout_wiki_without_path_and_the_path_hint(repo: Repo, tmp_path: Path) -> None:
    """A vault at the repository root next to the user's index.md and log.md: leaving the
    path input out checks it; `path: wiki` (the docs' subfolder example) says what to do."""
    repo.write("index.md", "# My index\n[[alpha]]\n")
    repo.write("log.md", "# Log\n")
    repo.write("alpha.md", "# Alpha\n[[index]]\n")
    base = repo.commit("vault")
    repo.write("beta.md", "[[alpha]] [[gone]]\n")
    head = repo.commit("add beta")
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head))
    assert run.commands == [
        "::error file=beta.md,line=1,col=11,title=llmwiki broken-link::broken link [[gone]]"
    ]
    assert run.outputs == {"broken": "1", "warnings": "0", "checked": "4"}
    wrong = run_action(repo, tmp_path / "gh2", inputs={"path": "wiki"}, event=pr_event(base, head))
    assert not wrong.success and "leave path out" in wrong.commands[0]


# --- push events, shallow clones, the first commit ------------------------------------------


def test_new_branch_push_with_all_zero_before_compares_with_the_parent(
    repo: Repo, tmp_path: Path
) -> None:
    """`base: ${{ github.event.before }}` on the first push of a branch is 40 zeros."""
    seed(repo)
    repo.git("checkout", "-q", "-b", "feature/new")
    repo.write("wiki/concepts/gamma.md", page("Gamma", "See [[Nowhere]] and [[alpha]].\n"))
    head = repo.commit("break on a new branch")
    run = run_action(
        repo,
        tmp_path / "gh",
        inputs={"base": "0" * 40},
        event={"ref": "refs/heads/feature/new", "before": "0" * 40, "after": head},
        event_name="push",
    )
    assert run.commands[0].startswith(
        "::notice title=llmwiki action::base is the all-zero commit id"
    )
    assert run.commands[1:] == [BROKEN_ANNOTATION] and run.outputs["broken"] == "1"
    assert "fetch-depth" not in run.stdout + run.stderr


def test_push_event_compares_head_with_its_parent(repo: Repo, tmp_path: Path) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", page("Gamma", "See [[Nowhere]] and [[alpha]].\n"))
    head = repo.commit("break on main")
    run = run_action(
        repo, tmp_path / "gh", event={"ref": "refs/heads/main", "after": head}, event_name="push"
    )
    assert run.outputs["broken"] == "1" and run.commands == [BROKEN_ANNOTATION]
    assert run.outcomes["candidate"] == "skipped"


def test_push_of_a_first_commit_checks_everything(repo: Repo, tmp_path: Path) -> None:
    repo.write("wiki/a.md", "[[b]]\n")
    repo.commit("first")
    run = run_action(repo, tmp_path / "gh", event={"ref": "refs/heads/main"}, event_name="push")
    assert run.commands == [
        "::error file=wiki/a.md,line=1,col=1,title=llmwiki broken-link::broken link [[b]]"
    ]


def _with_origin(repo: Repo, tmp_path: Path) -> Path:
    """A bare ``origin`` holding main, as the clone a push job checks out has."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "origin", "main")
    return origin


def _published(where: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "refs/llmwiki/index"],
        cwd=where,
        capture_output=True,
        text=True,
    ).stdout.strip()


PUSH_TO_MAIN = {"ref": "refs/heads/main", "repository": {"default_branch": "main"}}
LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}  # the job's provider: the built-in model


def test_publish_index_after_a_push_to_the_default_branch(repo: Repo, tmp_path: Path) -> None:
    """Issue 39: `publish-index: true` runs `llmwiki index --publish` after a push to the
    default branch and pushes refs/llmwiki/index to origin; the next push publishes a child
    of it (the last snapshot fetched first, as docs/team.md's job does)."""
    seed(repo)
    origin = _with_origin(repo, tmp_path)
    run = run_action(
        repo,
        tmp_path / "gh",
        inputs={"publish-index": "true"},
        event=PUSH_TO_MAIN,
        event_name="push",
        env=LOCAL,
    )
    assert run.success and run.outcomes["publish"] == "success", run.logs
    first = _published(origin)
    assert first and first == _published(repo.root)
    assert "published on refs/llmwiki/index" in run.logs["publish"]
    from llmwiki_git.action import INDEX_REF
    from llmwiki_git.retrieval.indexref import REF

    assert INDEX_REF == REF
    repo.git("update-ref", "-d", "refs/llmwiki/index")  # a fresh runner's clone lacks it
    repo.write("wiki/concepts/gamma.md", page("Gamma", "New, about [[alpha]].\n"))
    repo.commit("gamma")
    repo.git("push", "-q", "origin", "main")
    again = run_action(
        repo,
        tmp_path / "gh2",
        inputs={"publish-index": "true"},
        event=PUSH_TO_MAIN,
        event_name="push",
        env=LOCAL,
    )
    assert again.success and again.outcomes["publish"] == "success", again.logs
    second = _published(origin)
    assert second != first
    assert repo.git("rev-parse", f"{second}^").strip() == first  # fetched, then built upon


def test_publish_index_only_when_asked_and_on_the_default_branch(
    repo: Repo, tmp_path: Path
) -> None:
    seed(repo)
    origin = _with_origin(repo, tmp_path)
    off = run_action(repo, tmp_path / "gh1", event=PUSH_TO_MAIN, event_name="push", env=LOCAL)
    assert off.success and off.outcomes["publish"] == "skipped"
    pull = pr(repo, tmp_path / "pr", {"wiki/concepts/gamma.md": "[[alpha]]\n"}, env=LOCAL)
    assert pull.outcomes["publish"] == "skipped"
    other = run_action(
        repo,
        tmp_path / "gh2",
        inputs={"publish-index": "true"},
        event={"ref": "refs/heads/feature", "repository": {"default_branch": "main"}},
        event_name="push",
        env=LOCAL,
    )
    assert other.success and other.outcomes["publish"] == "success"
    assert any("published after a push to main only" in c for c in other.commands)
    assert _published(origin) == "" and _published(repo.root) == ""


def test_publish_index_that_cannot_push_fails_clearly(repo: Repo, tmp_path: Path) -> None:
    seed(repo)  # no origin: the push fails, as it does without contents: write
    run = run_action(
        repo,
        tmp_path / "gh",
        inputs={"publish-index": "true"},
        event=PUSH_TO_MAIN,
        event_name="push",
        env=LOCAL,
    )
    assert not run.success and run.outcomes["publish"] == "failure"
    assert any("could not push refs/llmwiki/index" in c for c in run.commands)


def test_shallow_clone_without_the_base_commit_fails_clearly(repo: Repo, tmp_path: Path) -> None:
    base = seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[alpha]]\n")
    head = repo.commit("add gamma")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo.root}", str(clone)], check=True
    )
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head), cwd=clone)
    assert not run.success and run.outcomes["check"] == "failure"
    assert run.commands == [
        f"::error title=llmwiki action::base commit '{base}' is not in this clone (a shallow clone)"
        "%0A  hint: use actions/checkout with fetch-depth: 0, so that the clone holds the commits to compare"
    ]
    assert run.outputs == {"broken": "", "warnings": "", "checked": ""}
    push = run_action(
        repo, tmp_path / "gh2", event={"ref": "refs/heads/main"}, event_name="push", cwd=clone
    )
    assert not push.success and push.commands[0].startswith(
        "::error title=llmwiki action::base commit "
    )
    assert "fetch-depth: 0" in push.commands[0]


# --- review candidates -------------------------------------------------------------------

SHIM = """
import os
mode = os.environ.get("FAKE_LLMWIKI_REVIEW")
if mode:
    import click
    from llmwiki_git import cli as _cli
    _cli.cli.commands.pop("review", None)
    if mode != "absent":
        @_cli.cli.group(help="fake review")
        def review():
            pass

        def show(cid, as_json, onto=None):
            assert as_json
            with open(os.environ["FAKE_LLMWIKI_REVIEW_LOG"], "a") as log:
                log.write(f"{cid} {onto}\\n")
            click.echo(mode)

        show = click.argument("cid")(click.option("--json", "as_json", is_flag=True, help="json")(show))
        show = click.option("--onto", help="onto")(show)
        review.command("show", help="fake show")(show)
"""


def _shim(tmp_path: Path, mode: str) -> dict[str, str]:
    """A sitecustomize that replaces `llmwiki review` for the processes the action starts:
    "absent" removes it; otherwise `review show` prints ``mode`` (its JSON)."""
    folder = tmp_path / "shim"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(SHIM)
    return {
        "PYTHONPATH": str(folder),
        "FAKE_LLMWIKI_REVIEW": mode,
        "FAKE_LLMWIKI_REVIEW_LOG": str(tmp_path / "review.log"),
    }


QUERY_PAGE = {"wiki/queries/why.md": "[[alpha]]\n"}
CANDIDATE = "llmwiki/review/why-0123abcd"


def test_candidate_branch_without_llmwiki_review_gives_a_notice(repo: Repo, tmp_path: Path) -> None:
    run = pr(repo, tmp_path, QUERY_PAGE, head_ref=CANDIDATE, env=_shim(tmp_path, "absent"))
    assert run.success and run.outcomes == {
        "install": "success",
        "check": "success",
        "candidate": "success",
        "publish": "skipped",
    }
    assert run.commands == [
        "::notice title=llmwiki review::candidate validation needs a newer llmwiki: this version has no "
        "`llmwiki review`, so candidate why-0123abcd was not validated"
    ]
    assert (
        "Review candidate <code>why-0123abcd</code>: not validated (needs a newer llmwiki)."
        in run.summary
    )


def test_candidate_step_runs_even_when_the_check_failed(repo: Repo, tmp_path: Path) -> None:
    run = pr(repo, tmp_path, GAMMA_BROKEN, head_ref=CANDIDATE, env=_shim(tmp_path, "absent"))
    assert run.outcomes == {
        "install": "success",
        "check": "failure",
        "candidate": "success",
        "publish": "skipped",
    }
    assert run.commands[0] == BROKEN_ANNOTATION and run.commands[1].startswith(
        "::notice title=llmwiki review::"
    )


def test_candidate_that_would_be_approved(repo: Repo, tmp_path: Path) -> None:
    verdict = {
        "ok": True,
        "code": "ok",
        "message": "why-0123abcd can be approved onto refs/remotes/origin/main",
    }
    env = _shim(tmp_path, json.dumps({"version": 1, "id": "why-0123abcd", "verdict": verdict}))
    base = seed(repo)
    repo.git(
        "update-ref", "refs/remotes/origin/main", base
    )  # the base branch as actions/checkout fetches it
    repo.git("checkout", "-q", "-b", CANDIDATE)
    repo.write("wiki/queries/why.md", "[[alpha]]\n")
    head = repo.commit("candidate")
    repo.git("checkout", "-q", "--detach")
    repo.git("branch", "-q", "-D", CANDIDATE)  # only refs/remotes/origin/... in a CI clone
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, head, CANDIDATE), env=env)
    assert run.success and run.commands == [
        "::notice title=llmwiki review::review candidate why-0123abcd: approval would pass"
    ]
    assert (tmp_path / "review.log").read_text() == "why-0123abcd refs/remotes/origin/main\n"
    assert (
        repo.git("rev-parse", f"refs/heads/{CANDIDATE}").strip() == head
    )  # review show finds its branch
    assert "Review candidate <code>why-0123abcd</code>: approval would pass." in run.summary


def test_candidate_that_would_be_refused_fails_unless_fail_on_never(
    repo: Repo, tmp_path: Path
) -> None:
    refused = {
        "id": "why-0123abcd",
        "verdict": {
            "ok": False,
            "code": "candidate-edited",
            "message": "the body was edited after staging",
        },
    }
    env = _shim(tmp_path, json.dumps(refused))
    run = pr(repo, tmp_path, QUERY_PAGE, head_ref=CANDIDATE, env=env)
    assert not run.success and run.outcomes["candidate"] == "failure"
    assert run.commands == [
        "::error title=llmwiki review::review candidate why-0123abcd: approval would be refused: the body was edited after staging"
    ]
    base = json.loads((tmp_path / "gh" / "event.json").read_text())["pull_request"]["base"]["sha"]
    assert (
        tmp_path / "review.log"
    ).read_text() == f"why-0123abcd {base}\n"  # no origin/main: the base commit
    lenient = run_action(
        repo,
        tmp_path / "gh2",
        inputs={"fail-on": "never"},
        env=env,
        event=json.loads((tmp_path / "gh" / "event.json").read_text()),
    )
    assert lenient.success and lenient.commands[0].startswith("::error title=llmwiki review::")


def test_real_candidate_staged_by_llmwiki(repo: Repo, tmp_path: Path) -> None:
    """A candidate made by the real staging code, checked out the way actions/checkout does
    on pull_request: a detached merge commit, branches only as refs/remotes/origin/*."""
    stage = pytest.importorskip("llmwiki_git.review.stage")
    from llmwiki_git.workspace import Workspace

    base = seed(repo)
    staged = stage.stage_candidate(
        Workspace.open(repo.root), "What links to beta?", "Alpha links to [[beta]].", None
    )
    cid = staged.branch.removeprefix("llmwiki/review/")
    as_pull_request(repo, staged.branch, staged.commit, base)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, staged.commit, staged.branch))
    assert run.outcomes == {
        "install": "success",
        "check": "success",
        "candidate": "success",
        "publish": "skipped",
    }, run.stdout + run.stderr
    assert run.commands == [
        f"::notice title=llmwiki review::review candidate {cid}: approval would pass"
    ]


@pytest.mark.parametrize("case", ["passes", "lost-update", "breaks-a-link"])
def test_real_page_candidate_is_validated_as_approval_would(
    repo: Repo, tmp_path: Path, case: str
) -> None:
    """A page/1 candidate (`review stage` / MCP propose_page) on a pull request from
    llmwiki/review/*: the Action gives approval's verdict, lost updates and newly broken links
    in untouched pages included."""
    from llmwiki_git.review.stagepage import PageEdit, stage_pages
    from llmwiki_git.workspace import Workspace

    base = seed(repo)
    read = repo.git("rev-parse", f"{base}:wiki/concepts/beta.md").strip()
    edit = (
        PageEdit("wiki/concepts/alpha.md", None)
        if case == "breaks-a-link"
        else PageEdit(
            "wiki/concepts/beta.md", page("Beta", "Back to [[alpha#usage]], edited.\n"), read
        )
    )
    (staged,) = stage_pages(Workspace.open(repo.root), [edit])
    onto = base
    if case == "lost-update":
        repo.write(
            "wiki/concepts/beta.md", page("Beta", "Back to [[alpha#usage]], changed meanwhile.\n")
        )
        onto = repo.commit("meanwhile")
    cid = staged.candidate_id
    as_pull_request(repo, staged.branch, staged.commit, onto)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, staged.commit, staged.branch))
    if case == "passes":
        assert run.outcomes["candidate"] == "success", run.stdout + run.stderr
        assert run.commands == [
            f"::notice title=llmwiki review::review candidate {cid}: approval would pass"
        ]
        return
    assert run.outcomes["candidate"] == "failure", run.stdout + run.stderr
    refused = [c for c in run.commands if c.startswith("::error title=llmwiki review::")]
    assert len(refused) == 1 and "approval would be refused" in refused[0]
    assert (
        "lost update refused" if case == "lost-update" else "wiki/concepts/delta.md"
    ) in refused[0]


def test_a_compile_run_on_a_pull_request_is_validated_as_approval_would(
    repo: Repo, tmp_path: Path
) -> None:
    """A compile/1 candidate (several pages, one commit) on a pull request from
    llmwiki/review/*: the gate and the Action accept a run that approval would accept."""
    from llmwiki_git.compiler.service import compile_wiki
    from llmwiki_git.workspace import Workspace

    seed(repo)
    repo.write(
        "sources/greek.md",
        "# Greek letters\n\nAlpha comes first and Beta second, as every child learns.\n",
    )
    repo.write(
        "sources/latin.md",
        "# Latin letters\n\nThe Latin alphabet took its letters from the Greek one.\n",
    )
    base = repo.commit("sources")
    result = compile_wiki(Workspace.open(repo.root), environ={})
    staged = result.candidate
    assert staged is not None and len(staged.files) == 2
    as_pull_request(repo, staged.branch, staged.commit, base)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, staged.commit, staged.branch))
    assert run.outcomes == {
        "install": "success",
        "check": "success",
        "candidate": "success",
        "publish": "skipped",
    }, run.stdout + run.stderr
    assert run.commands == [
        f"::notice title=llmwiki review::review candidate {staged.candidate_id}: approval would pass"
    ]


# --- the install step --------------------------------------------------------------------


def test_install_step_makes_a_virtualenv_and_installs_the_actions_checkout(
    repo: Repo, tmp_path: Path
) -> None:
    """Offline: a fake interpreter records the calls, fakes `-m venv` / `-m pip`, and runs
    everything else with the real one."""
    log = tmp_path / "python.log"
    fake = tmp_path / "bin" / "fakepython"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/bash\n"
        f"printf '%s\\n' \"$0 $*\" >> '{log}'\n"
        'if [ "$1" = -m ] && [ "$2" = venv ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi\n'
        'if [ "$1" = -m ] && [ "$2" = pip ]; then exit 0; fi\n'
        f"exec '{sys.executable}' \"$@\"\n"
    )
    fake.chmod(0o755)
    run = pr(repo, tmp_path, GAMMA_BROKEN, inputs={"python": str(fake)}, skip_install=False)
    venv = tmp_path / "gh" / "runner-temp" / "llmwiki-action-venv"
    assert log.read_text().splitlines() == [
        f"{fake} -m venv {venv}",
        f"{venv}/bin/python -m pip install --quiet --disable-pip-version-check {ACTION_PATH}",
        f"{venv}/bin/python -m llmwiki_git.action check",
    ]
    assert run.step_outputs["install"] == {"python": f"{venv}/bin/python"}
    assert run.commands == [BROKEN_ANNOTATION]


# --- hostile inputs ----------------------------------------------------------------------

PAYLOADS = [
    '"; touch pwned1; echo "',
    "$(touch pwned2)",
    "`touch pwned3`",
    "x\ntouch pwned4\n::notice::injected",
    "'; touch pwned5; '",
    "--output=pwned6",
]
ALLOWED_COMMANDS = (
    "::error title=llmwiki action::",
    "::error title=llmwiki review::",
    "::error file=",
    "::warning file=",
    "::notice title=llmwiki review::",
)


def _assert_harmless(run: Run, tmp_path: Path) -> None:
    assert not [p for p in tmp_path.rglob("pwned*")] and not list(ACTION_PATH.glob("pwned*"))
    for line in run.commands:
        assert line.startswith(ALLOWED_COMMANDS), line  # no command smuggled in through a newline


@pytest.mark.parametrize("name", ["path", "base", "head", "fail-on", "summary", "python"])
@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hostile_inputs_run_nothing_and_are_reported(
    repo: Repo, tmp_path: Path, name: str, payload: str
) -> None:
    run = pr(repo, tmp_path, {"wiki/concepts/gamma.md": "[[alpha]]\n"}, inputs={name: payload})
    _assert_harmless(run, tmp_path)
    assert not run.success
    assert run.commands and run.commands[0].startswith("::error title=llmwiki action::")


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hostile_head_branch_names_run_nothing(repo: Repo, tmp_path: Path, payload: str) -> None:
    base = seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[alpha]]\n")
    head = repo.commit("change")
    plain = run_action(repo, tmp_path / "gh1", event=pr_event(base, head, payload))
    _assert_harmless(plain, tmp_path)
    assert plain.success and plain.outcomes["candidate"] == "skipped"
    candidate = run_action(
        repo, tmp_path / "gh2", event=pr_event(base, head, "llmwiki/review/" + payload)
    )
    _assert_harmless(candidate, tmp_path)
    assert not candidate.success and candidate.outcomes["candidate"] == "failure"
    assert (
        candidate.commands[0].startswith("::error title=llmwiki action::branch ")
        and "does not name a review candidate" in candidate.commands[0]
    )


@pytest.mark.parametrize("path", ["../..", "/etc", "wiki/../../outside"])
def test_path_outside_the_repository_is_refused(repo: Repo, tmp_path: Path, path: str) -> None:
    run = pr(repo, tmp_path, {"wiki/concepts/gamma.md": "[[alpha]]\n"}, inputs={"path": path})
    assert not run.success and run.outputs["checked"] == ""
    assert run.commands == [
        f"::error title=llmwiki action::wiki_dir '{path}' must be a folder inside the repository"
    ]


@pytest.mark.parametrize(
    "cid",
    [
        "$(touch${IFS}pwned7)-0123abcd",
        "`touch${IFS}pwned8`-0123abcd",
        "x;touch${IFS}pwned9-0123abcd",
    ],
)
def test_candidate_ids_with_shell_syntax_are_only_ever_arguments(
    repo: Repo, tmp_path: Path, cid: str
) -> None:
    run = pr(
        repo,
        tmp_path,
        QUERY_PAGE,
        head_ref="llmwiki/review/" + cid,
        env=_shim(tmp_path, json.dumps({"verdict": {"ok": True}})),
    )
    _assert_harmless(run, tmp_path)
    assert run.success and run.commands == [
        f"::notice title=llmwiki review::review candidate {cid}: approval would pass"
    ]
    assert (tmp_path / "review.log").read_text().split(" ")[0] == cid


def test_the_docs_show_the_job_summary_as_it_is_written() -> None:
    """Regression (issue 23): docs/github-action.md showed backticks and [[Nowhere]] where the
    summary holds <code> and &#91;&#91; (the escaping that keeps file names from acting)."""
    from llmwiki_git.github import summary
    from llmwiki_git.problems import make

    doc = (REPO_ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    shown = doc.split("and this markdown in the job summary:\n\n```markdown\n", 1)[1].split(
        "```", 1
    )[0]
    written = summary(
        [make("wiki/concepts/gamma.md", 4, 5, "broken-link", "broken link [[Nowhere]]", "nowhere")],
        4,
    )
    assert shown == written


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hostile_index_extras_install_nothing(repo: Repo, tmp_path: Path, payload: str) -> None:
    seed(repo)
    run = run_action(
        repo,
        tmp_path / "gh",
        inputs={"publish-index": "true", "index-extras": payload},
        event=PUSH_TO_MAIN,
        event_name="push",
    )
    _assert_harmless(run, tmp_path)
    assert not run.success and run.outcomes["install"] == "failure"
    assert run.commands == [
        "::error title=llmwiki action::input index-extras: give extra names separated by "
        "commas (local, remote, postgres)"
    ]

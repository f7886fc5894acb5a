"""Issue 22, item 5: nothing llmwiki prints in text mode can start a GitHub workflow command
(``::error …``, ``::add-mask::``, the older ``##[…]``), whatever a file name, page or answer
holds -- a newline in a file name included -- while `check --format github` still emits its
own annotations (the merge hook: tests/test_hooks.py)."""

from __future__ import annotations

import io

import pytest

from llmwiki_git.terminal import SafeStream

from ..conftest import Repo, page

INJECTED = "::error file=README.md,line=1::INJECTED"


def command_lines(text: str) -> list[str]:
    """The lines a GitHub runner would take for workflow commands (it trims leading spaces)."""
    return [line for line in text.split("\n") if line.lstrip().startswith("::") or "##[" in line]


@pytest.fixture(params=["wiki", "vault"])
def hostile(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = "wiki/" if request.param == "wiki" else ""
    if not prefix:
        repo.write("index.md", "# My vault\n")
    repo.write(f"{prefix}concepts/blobs.md", page("Blobs", "A blob stores file contents."))
    # a newline in the name, and a name that is itself a command at the start of a line
    repo.write(f"{prefix}x\n{INJECTED}.md", page("X", "A blob [[nowhere]] and ##[error]old-style."))
    repo.write(f"{INJECTED}.md", page("Y", "A blob [[nowhere-else]]."))
    repo.commit("hostile names")
    return repo, prefix


def test_text_output_never_starts_a_workflow_command(hostile: tuple[Repo, str]) -> None:
    repo, prefix = hostile
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    outputs = {
        "check": repo.llmwiki("check", env=env),
        "check --staged": repo.llmwiki("check", "--rev", "HEAD", env=env),
        "context": repo.llmwiki("context", "what is a blob", env=env),
        "links": repo.llmwiki("links", f"{prefix}x\n{INJECTED}.md", env=env),
        "query": repo.llmwiki("query", "what does a blob store", env=env),
    }
    for name, proc in outputs.items():
        assert "Traceback" not in proc.stderr, (name, proc.stderr)
        assert command_lines(proc.stdout + "\n" + proc.stderr) == [], (
            name,
            proc.stdout + proc.stderr,
        )
    shown = outputs["check"].stdout
    assert "x\\n::error file=README.md,line=1::INJECTED.md:" in shown, (
        shown
    )  # one line: the newline shown
    assert "nowhere" in shown and ("nowhere-else" in shown) == (
        not prefix
    )  # the root file is a vault page


def test_github_format_still_annotates_and_escapes_the_file_property(
    hostile: tuple[Repo, str],
) -> None:
    repo, prefix = hostile
    proc = repo.llmwiki("check", "--format", "github")
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    # the root file is a page of the vault only; the newline in a name is an error of its own
    # (control-character-name, issue 34)
    assert len(annotations) == (2 if prefix else 3), proc.stdout
    assert sum("control-character-name::" in a for a in annotations) == 1, proc.stdout
    assert all(a.startswith("::error file=") for a in annotations), proc.stdout
    assert all(
        a.count("::") == 2 for a in annotations
    )  # the name's own "::" is escaped in the property
    assert "%0A" in "".join(annotations)


@pytest.mark.parametrize(
    "pieces",
    [
        [":", ":error::x\n"],
        ["  ", ":", ":warning::x\n"],
        ["\u00a0::notice::x\n"],
        ["ok\n::", "error::x\n"],
        ["##", "[error]x\n"],
        ["a ##[error]x\n"],
        ["line\r\n::error::x\r\n"],
        ["\t::add-mask::secret\n"],
    ],
)
def test_the_stream_disarms_commands_split_across_writes(pieces: list[str]) -> None:
    inner = io.StringIO()
    stream = SafeStream(inner)
    for piece in pieces:
        stream.write(piece)
    assert command_lines(inner.getvalue()) == [], inner.getvalue()
    assert inner.getvalue().replace("\\x3a", ":").replace("\\u005b", "[").replace(
        "\\x0d", ""
    ).replace("\u00a0", "") == "".join(pieces).replace("\r", "").replace("\u00a0", "")


def test_ordinary_text_is_left_alone() -> None:
    inner = io.StringIO()
    stream = SafeStream(inner)
    text = "# Context\n\n## Pages\n- a: b :: c\nkey: value\n  - item ::x\n:single colon\n#[tag]\n"
    for index in range(0, len(text), 3):  # in pieces, as a streamed answer arrives
        stream.write(text[index : index + 3])
    assert inner.getvalue() == text


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_json_output_stays_json_with_an_old_style_command_in_a_page(
    repo: Repo, layout: str
) -> None:
    """Issue 34, item 4: the filter shows ``##[`` as ``##\\u005b`` -- a JSON escape, so
    ``--json`` output still parses (to the page's own text) and no line starts a command."""
    import json

    prefix = "wiki/" if layout == "wiki" else ""
    if not prefix:
        repo.write("index.md", "# My vault\n")
    body = "A blob stores file contents. Logs use ##[group]Blobs and ##[endgroup] markers."
    repo.write(f"{prefix}concepts/blobs.md", page("Blobs ##[group]", body))
    repo.commit("a page mentioning ##[group]")
    env = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    for args in (("context", "what is a blob", "--json"), ("query", "what is a blob", "--json")):
        proc = repo.llmwiki(*args, env=env)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert command_lines(proc.stdout + "\n" + proc.stderr) == [], proc.stdout
        parsed = json.loads(proc.stdout)  # failed before: "\x5b" is no JSON escape
        assert "##[group]" in json.dumps(parsed, ensure_ascii=False), (args, parsed)


def test_the_escape_is_one_every_format_reads() -> None:
    inner = io.StringIO()
    SafeStream(inner).write('{"text": "see ##[group]x"}\n')
    assert inner.getvalue() == '{"text": "see ##\\u005b' + 'group]x"}\n'

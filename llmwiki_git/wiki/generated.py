"""Ownership of llmwiki's generated files: the table of contents and the journal.

``index.md`` (at the wiki root) and ``log.md`` (at the project root) are llmwiki's only where
llmwiki owns them: absent, or in llmwiki's generated format (the TypeScript tool's exact
index format counts, so its wikis keep working). Every version of the file llmwiki can see
-- the one at HEAD, the one in the git index and the one in the work tree -- must be
generated; one human-written version makes the file the user's, and then no command ever
rewrites it. llmwiki keeps its own copy in the state folder instead (``.llmwiki/index.md``,
``.llmwiki/log.md``, not committed) and says so once.

A generated file nobody edited is llmwiki's to overwrite even when it differs from HEAD (an
``llmwiki index`` run leaves an uncommitted ``index.md``): its own output never blocks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import confine
from ..errors import PathRefused
from ..gitstore.git import Git
from ..gitstore.transaction import write_atomic

INDEX = "index.md"
LOG = "log.md"
LOG_HEADER = b"# Log\n\n"
NOTICE = "ownership-notice"

_INDEX_LINE = re.compile(
    r"^(# Knowledge Wiki|## .+|- \*\*\[\[[^\]\n]+\]\]\*\*( — .*)?|- \*\*\[[^\]\n]+\]\([^)\n]+\)\*\*( — .*)?"
    r"|_\d+ pages? \| Generated [^_\n]+_)$"
)
_FOOTER = re.compile(r"^_\d+ pages? \| Generated [^_\n]+_$")
_HEADING_FIRST = re.compile(r"\s*#")
_LOG_LINE = re.compile(r"^(# Log|## \[\d{4}-\d\d-\d\dT[\d:.]+Z\] [^|\n]+ \| .*|- .*)$")


def is_generated_index(data: bytes) -> bool:
    """The generated table of contents: ``# Knowledge Wiki``, section headings, entry lines,
    and the ``_N pages | Generated …_`` footer as its last line; nothing else."""
    try:
        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        return False
    return (
        len(lines) >= 2
        and lines[0] == "# Knowledge Wiki"
        and bool(_FOOTER.match(lines[-1]))
        and all(_INDEX_LINE.match(line) for line in lines)
    )


def is_generated_log(data: bytes) -> bool:
    """llmwiki's journal: an optional ``# Log`` title, then ``## [time] op | description``
    entries with ``- detail`` lines; nothing else."""
    try:
        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        return False
    if not lines:
        return True
    body = lines[1:] if lines[0] == "# Log" else lines
    return (not body or body[0].startswith("## [")) and all(_LOG_LINE.match(line) for line in body)


def _versions(git: Git | None, top: Path, rel: str, head: str | None) -> list[bytes]:
    found = []
    if git is not None:
        for spec in ([f"{head}:{rel}"] if head else []) + [f":{rel}"]:
            blob = git.object_id(spec)
            if blob:
                found.append(git.read_blob(blob))
    path = top / rel
    if path.is_symlink() or (path.exists() and not path.is_file()):
        found.append(b"\0not a regular file\0")
    elif path.is_file():
        found.append(path.read_bytes())
    return found


def owned(git: Git | None, top: Path, rel: str, head: str | None, kind: str) -> bool:
    """Whether llmwiki owns ``rel`` (``kind`` = "index" | "log") at HEAD, in the index and in
    the work tree."""
    check = is_generated_index if kind == "index" else is_generated_log
    return all(check(v) for v in _versions(git, top, rel, head))


@dataclass
class Generated:
    """Where the table of contents and the journal go for one write."""

    index_rel: str | None  # committed path, or None: the user owns it
    log_rel: str | None
    local_index: Path  # llmwiki's own copies when the user owns the committed ones
    local_log: Path
    notes: list[str]


def index_path(wiki_root: str) -> str:
    """``index.md`` at the wiki root, from the repository root."""
    return f"{wiki_root}/{INDEX}" if wiki_root else INDEX


def log_path(project_prefix: str) -> str:
    """``log.md`` at the project root, from the repository root."""
    return f"{project_prefix}/{LOG}" if project_prefix else LOG


def paths_for(
    git: Git | None,
    top: Path,
    state_dir: Path,
    head: str | None,
    *,
    wiki_root: str,
    project_prefix: str,
) -> Generated:
    index_rel, log_rel = index_path(wiki_root), log_path(project_prefix)
    in_vault = wiki_root == project_prefix
    own_index, notes = decide(git, top, state_dir, head, index_rel, INDEX, in_vault=in_vault)
    own_log, log_notes = decide(git, top, state_dir, head, log_rel, LOG, in_vault=in_vault)
    return Generated(
        index_rel if own_index else None,
        log_rel if own_log else None,
        state_dir / INDEX,
        state_dir / LOG,
        notes + log_notes,
    )


def index_owned(
    git: Git | None,
    top: Path,
    state_dir: Path,
    head: str | None,
    *,
    wiki_root: str,
    project_prefix: str,
) -> tuple[bool, list[str]]:
    """Whether llmwiki may write ``index.md`` at the wiki root outside a commit (``llmwiki
    index``), by the rule every commit follows, and the notices to print once."""
    rel = index_path(wiki_root)
    return decide(git, top, state_dir, head, rel, INDEX, in_vault=wiki_root == project_prefix)


def decide(
    git: Git | None,
    top: Path,
    state_dir: Path,
    head: str | None,
    rel: str,
    name: str,
    *,
    in_vault: bool,
) -> tuple[bool, list[str]]:
    """Whether llmwiki owns ``rel`` (``name`` = INDEX | LOG), and the notices to print once.
    ``in_vault``: the pages sit at the project root, beside the user's notes."""
    kind = "index" if name == INDEX else "log"
    own = owned(git, top, rel, head, kind)
    notes: list[str] = []
    folder = rel.rpartition("/")[0]
    if own and in_vault and not _versions(git, top, rel, head) and _holds_notes(git, head, folder):
        # A vault (pages at the root beside the user's own notes): llmwiki never adds a note
        # the user did not ask for -- an absent index.md or log.md stays absent.
        notes += notice(
            state_dir,
            f"absent-{name}",
            f"this vault has no {rel}, and llmwiki adds no note you did not ask for: "
            f"its {'table of contents' if name == INDEX else 'journal'} goes to "
            f"{state_dir.name}/{name} (commit an empty {rel} to have it kept there)",
        )
        return False, notes  # absent: "your own page" would name a file that is not there
    if not own and name == INDEX:
        notes += notice(
            state_dir,
            "index",
            f"{rel} is your own page, so llmwiki never rewrites it; its "
            f"generated table of contents goes to {state_dir.name}/{INDEX} instead",
        )
    elif not own:
        notes += notice(
            state_dir,
            "log",
            f"{rel} is your own file, so llmwiki never writes to it; its journal "
            f"goes to {state_dir.name}/{LOG} instead",
        )
    return own, notes


def _holds_notes(git: Git | None, head: str | None, root: str) -> bool:
    """Whether the folder ``root`` holds notes at ``head`` (a ``.md`` file other than
    ``index.md``, ``log.md`` and the ``sources/``): a vault of the user's, not a wiki llmwiki
    starts from nothing."""
    if git is None or head is None:
        return False
    prefix = f"{root}/" if root else ""
    skip = {f"{prefix}{INDEX}", f"{prefix}{LOG}"}
    if root:
        paths = [e.path for e in git.ls_tree_under(head, f":(top,literal){root}")]
    else:  # the whole tree
        paths = git.tree_paths(head)
    return any(
        p.lower().endswith(".md") and p not in skip and not p.startswith(f"{prefix}sources/")
        for p in paths
    )


def notice(state_dir: Path, key: str, text: str) -> list[str]:
    """``[text]`` the first time ``key`` is noticed in this project, then ``[]``."""
    marker = state_dir / NOTICE
    try:  # non-blocking and size-capped: a FIFO or a huge file in its place is no notice record
        seen = set(
            confine.read_file(marker, max_bytes=64 * 1024, name=NOTICE)
            .decode("utf-8", "replace")
            .split()
        )
    except PathRefused:
        seen = set()
    if key in seen:
        return []
    try:
        write_state_file(marker, ("\n".join(sorted(seen | {key})) + "\n").encode())
    except (OSError, PathRefused):
        pass
    return [text]


def appended_log(old: bytes | None, entry: str) -> bytes:
    return (old if old else LOG_HEADER) + entry.encode("utf-8")


def write_state_file(path: Path, data: bytes) -> None:
    """Replace ``path``, a file of the state folder, confined to the project folder holding
    that folder (neither ``.llmwiki`` nor the file may be a symlink)."""
    write_atomic(path, data, root=path.parent.parent)


def write_local_log(path: Path, entry: str) -> None:
    """Append ``entry`` to llmwiki's own journal in the state folder."""
    old = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    write_state_file(path, appended_log(old, entry))


# -- evidence ------------------------------------------------------------------------------
# The generated table of contents and the journal are link-checked like any page but never
# evidence (DESIGN §2): not retrieved, not in context packs, not grounding for an answer. A
# user's own hand-written ``index.md`` is an ordinary page; ``log.md`` at the root of the
# wiki is the journal whoever wrote it, and so is any page in the journal's format.


def is_journal(path: str, wiki_root: str) -> bool:
    """``path`` (from the repository root) is ``log.md`` at the root of the wiki."""
    return path == (f"{wiki_root}/{LOG}" if wiki_root else LOG)


def is_evidence(path: str, wiki_root: str, text: str) -> bool:
    """Whether a page may ground an answer or enter a context pack."""
    if is_journal(path, wiki_root):
        return False
    if not _HEADING_FIRST.match(
        text
    ):  # both generated forms open with a "#" line: most pages do not
        return True
    data = text.encode("utf-8")
    return not (is_generated_index(data) or (text.strip() and is_generated_log(data)))

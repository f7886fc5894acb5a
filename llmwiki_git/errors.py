"""The one exception tree of llmwiki-git; the CLI turns these into messages and exit codes.

    LlmwikiError                    exit 1 (unless a subclass says otherwise)
    ├── UsageError                  exit 2: bad flags or arguments the parser could not catch
    │   └── ArgumentError           MCP tool arguments that do not match the input schema
    ├── ConfigError                 exit 2: unreadable or invalid .llmwiki/config.toml
    ├── NotARepository              exit 2: no wiki / git work tree where one is needed
    ├── MissingDependency           exit 2: an optional extra (local, remote, mcp) is missing
    ├── WikiError                   a page or the wiki cannot be read as asked
    │   ├── PageReadError           one page's bytes could not be read (reported as a page issue)
    │   ├── PathRefused             a path the confinement rule refuses (confine.py)
    │   ├── InputRefused            a file `llmwiki ingest` cannot take (binary, empty, outside...)
    │   ├── SourceRefused           a source citation's line window cannot be shown
    │   └── FrontmatterRefused      a frontmatter cannot take new aliases without other changes
    ├── GitError                    a git command failed (cmd, returncode, stderr)
    ├── WriteRefused                a write refused before anything changed (gitstore/)
    │   ├── DirtyPaths              a path to write has uncommitted edits
    │   ├── RefChanged              the branch moved meanwhile (compare-and-swap failed)
    │   ├── UnsafePath              not a plain repository-relative file path
    │   ├── MoveRefused             `llmwiki mv` or `merge-pages` refused (a target exists, a link would break)
    │   └── LockBusy                the repository lock is held and waiting timed out
    ├── FollowIncomplete            the branch moved; some edited work-tree paths were kept
    ├── CandidateNotFound           no review candidate with that id
    ├── ApprovalRefused             an approval refused (its verdict attached)
    ├── ProviderError               a model provider could not be reached or refused
    │   ├── RetryableStreamError    an in-stream error worth a retry before any text
    │   └── MalformedOutput         a model's reply is not what compile asked for (names the source)
    └── RetrievalError              the search state cannot be used
        ├── StoreError              the embedding store is missing, corrupt or of another model
        ├── IndexRefError           refs/llmwiki/index refused (another model, forged, damaged) or absent
        ├── LexicalIndexError       the lexical index is missing, corrupt or of another version
        └── EmbeddingUnavailable    the local embedding model cannot be loaded

    Interrupted (a KeyboardInterrupt) Ctrl-C, with what the interrupted work kept: exit 130

Ctrl-C (SIGINT) exits 130, as shells report a command that SIGINT ended, with one line on
stderr. Anything else escaping to the CLI is a bug: exit 3 with a one-line hint to re-run with
``--traceback``. Below the three entry points (cli/app.py, mcp_server.py, action.py) code
catches these or named builtin exceptions, never ``Exception`` (tests/test_exceptions.py);
:data:`DATA_ERRORS` and :data:`BEST_EFFORT_ERRORS` name the two usual sets.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


class LlmwikiError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(LlmwikiError):
    exit_code = 2


class ConfigError(LlmwikiError):
    exit_code = 2


class ConninfoError(ConfigError):
    """Not a connection string libpq would accept (the reason names no value: it may hold a
    password). Raised by ``retrieval/conninfo.py``; the store turns it into its own message."""


class TrailerBlockError(LlmwikiError):
    """A trailer block that breaks a rule of ``publication.trailers.SCHEMA``; caught inside
    ``trailers.parse``, which answers None (a malformed candidate), never shown as such."""


class NotARepository(LlmwikiError):
    exit_code = 2


class WikiError(LlmwikiError):
    pass


class PageReadError(WikiError):
    """One page's bytes could not be read; ``code`` is the page issue it is reported as
    (``unreadable-page``, ``page-too-large``, ``symlink-escape``)."""

    def __init__(self, path: str, reason: str, *, code: str = "unreadable-page") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.code = code


class PathRefused(WikiError):
    """A path that leaves its root, is not a regular file, is too large, or would be written
    through a symlink (see confine.py)."""

    def __init__(
        self, path: str, reason: str, *, code: str = "path-refused", hint: str | None = None
    ) -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason
        self.code = code  # symlink-escape | not-regular-file | too-large | unreadable | symlink-write | path-refused


class InputRefused(WikiError):
    """A file ``llmwiki ingest`` cannot take: binary, empty, symlinked, outside the
    repository, too large or unreadable. Nothing was written."""

    def __init__(self, name: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"cannot ingest {name}: {reason}; nothing was written", hint=hint)
        self.name = name
        self.reason = reason


class SourceRefused(WikiError):
    """A source citation whose line window cannot be read (outside ``sources/``, missing...)."""


class FrontmatterRefused(WikiError):
    """A page's frontmatter cannot take an edit (``merge-pages`` adding aliases) without
    changing how the rest of it reads: malformed, or aliases that are not a list."""


class ArgumentError(UsageError):
    """Arguments that do not match an MCP tool's input schema."""


class GitError(LlmwikiError):
    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str) -> None:
        shown = " ".join(cmd)
        detail = stderr.strip() or "(no output)"
        super().__init__(f"git command failed ({returncode}): {shown}\n  {detail}")
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stderr = stderr


#: How to install an extra: no release is published, so from a clone or a git URL, never a
#: bare registry name (``pip install 'llmwiki-git[local]'`` finds nothing).
def install_hint(extras: str) -> str:
    return (
        f"in your clone of llmwiki-git: pip install '.[{extras}]' (no release is published: from a git URL, "
        f"pip install 'llmwiki-git[{extras}] @ git+URL@COMMIT')"
    )


#: How to install what query, context, index and serve need (the ``local`` extra).
LOCAL_INSTALL_HINT = install_hint("local")
#: Third-party modules of the retrieval extras: their absence is a missing extra, not a bug.
RETRIEVAL_MODULES = frozenset({"numpy", "httpx"})


class MissingDependency(LlmwikiError):
    """An optional dependency (an extra of the distribution) is not installed."""

    exit_code = 2


class WriteRefused(LlmwikiError):
    """A write refused before anything was changed."""


class DirtyPaths(WriteRefused):
    """A path the write would change has uncommitted edits; nothing was written."""

    def __init__(self, paths: list[str], untracked: Sequence[str] = ()) -> None:
        from shlex import quote

        shown = ", ".join(paths)
        steps = []
        tracked = [p for p in paths if p not in untracked]
        if tracked:
            steps.append("git stash push -- " + " ".join(quote(p) for p in tracked))
        steps += [f"mv {quote(p)} {quote(p + '.mine')}" for p in paths if p in untracked]
        super().__init__(
            f"refusing to write: uncommitted changes to {shown}; nothing was changed",
            hint="commit or stash those changes first ("
            + "; ".join(steps)
            + "), then run the command again",
        )
        self.paths = paths
        self.untracked = list(untracked)


class RefChanged(WriteRefused):
    """The branch moved since it was read; nothing was written."""

    def __init__(self, ref: str, expected: str | None, actual: str | None) -> None:
        super().__init__(
            f"{ref} moved while llmwiki was writing (expected {expected or 'no commit yet'}, "
            f"found {actual or 'no commit'}); nothing was written",
            hint="run the command again",
        )
        self.ref = ref
        self.expected = expected
        self.actual = actual


class UnsafePath(WriteRefused):
    """A path given to commit_paths is not a plain repo-relative file path."""


class MoveRefused(WriteRefused):
    """``llmwiki mv`` (or ``merge-pages``: ``verb`` "merge") refused before anything moved;
    ``reasons`` says each thing in the way."""

    def __init__(
        self, what: str, reasons: Sequence[str], hint: str | None = None, verb: str = "move"
    ) -> None:
        shown = "\n  ".join(reasons[:20]) + (
            f"\n  … and {len(reasons) - 20} more" if len(reasons) > 20 else ""
        )
        super().__init__(f"refusing to {verb} {what}; nothing was changed:\n  {shown}", hint=hint)
        self.reasons = list(reasons)


class LockBusy(WriteRefused):
    """The project lock is held by a live process and waiting for it timed out. ``owner``
    is the holder's record (a ``gitstore.lock.LockOwner``) or None while it is written."""

    def __init__(self, path: Path, owner: Any, waited: float) -> None:
        if owner is None:
            who = "another process (its owner record is still being written)"
        else:
            who = f"pid {owner.pid}"
            if owner.command:
                who += f" ({owner.command})"
            import socket  # only here: ~2 ms off every command's imports (the hook's budget)

            if owner.host and owner.host != socket.gethostname():
                who += f" on host {owner.host}"
            if owner.since is not None:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.since))
                who += f", since {stamp} ({_age(time.time() - owner.since)} ago)"
        holder = f"pid {owner.pid}" if owner is not None else "that process"
        super().__init__(
            f"the project lock {path} is held by {who}; gave up after {waited:.1f}s",
            hint=f"wait for {holder} to finish and run the command again; the lock frees itself when "
            f"the process exits, even if it crashes (do not delete {path}: that would let two "
            "writers in at once)",
        )
        self.path = path
        self.owner = owner


class GitLockHeld(WriteRefused):
    """One of git's own lock files (``index.lock``, ``HEAD.lock``, a ref's ``.lock``,
    ``packed-refs.lock``) exists, so git would refuse a step of the write; decided before any
    ref moves (or, in recovery, before the remaining steps run)."""

    def __init__(self, paths: Sequence[Path], what: str, *, recovering: bool = False) -> None:
        from shlex import quote

        shown = ", ".join(str(p) for p in paths)
        if recovering:
            message = f"an interrupted {what} is not finished: git's lock {shown} is held, and the rest waits for it"
            after = "then run any llmwiki command (e.g. `llmwiki review list`) to finish it"
        else:
            message = f"refusing {what}: git's lock {shown} is held; nothing was changed"
            after = "then run the command again"
        super().__init__(
            message,
            hint="another git command is running in this repository, or one was killed and left the lock behind: "
            f"wait for it to finish; if no git command is running, remove the stale lock "
            f"(rm {' '.join(quote(str(p)) for p in paths)}), {after}",
        )
        self.paths = list(paths)


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


class FollowIncomplete(LlmwikiError):
    """The branch moved, but some work-tree paths were edited meanwhile and were kept."""


class CandidateNotFound(LlmwikiError):
    def __init__(self, candidate_id: str) -> None:
        super().__init__(
            f"no review candidate {candidate_id!r}",
            hint="run `llmwiki review list` to see the open ones",
        )


class ApprovalRefused(LlmwikiError):
    """An approval refused; ``verdict`` is the review's ``Verdict`` (message, code, details)."""

    def __init__(self, verdict: Any) -> None:
        view = verdict.details.get("threeWay")
        super().__init__(verdict.message + (f"\n\n{view.rstrip()}" if view else ""))
        self.verdict = verdict


class ProviderError(LlmwikiError):
    """A model provider could not be reached or refused the request."""

    def __init__(
        self, provider: str, message: str, *, hint: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(f"{provider}: {message}", hint=hint)
        self.provider = provider
        self.status = status


class RetryableStreamError(ProviderError):
    """An error event inside a stream that is worth retrying if no text was yielded yet."""


class MalformedOutput(ProviderError):
    """A model's reply that is not what ``llmwiki compile`` asked for; the message names the
    source it was about. Nothing was staged."""


class RetrievalError(LlmwikiError):
    """The search state (store, lexical index, embedding model) cannot be used as it is."""


class StoreError(RetrievalError):
    """The store is missing, corrupt, truncated, or from another embedding model."""

    def __init__(self, message: str, code: str = "embedding-store-missing") -> None:
        super().__init__(message, hint="run `llmwiki index` to build or rebuild it")
        self.code = code


class IndexRefError(RetrievalError):
    """``refs/llmwiki/index`` (the index published with git) cannot be used or written: no
    such ref on the remote, another model, or a forged, damaged or oversized payload."""


class LexicalIndexError(RetrievalError):
    """The lexical index on disk is missing, incomplete, corrupt or of another version."""


class EmbeddingUnavailable(RetrievalError):
    """The local embedding model cannot be loaded (a package or file is missing)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, raised in place of the KeyboardInterrupt by work that kept what it had done
    (``index`` keeps the chunks embedded so far); the message says what was kept."""

    exit_code = 130

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.closed = 0  # model requests in flight that the interruption closed

    def __str__(self) -> str:
        return self.message


#: What reading a wiki, git objects, caches or state files raises when the data is broken
#: or unreachable: validation turns these into "unavailable" instead of crashing. A bug
#: (TypeError, AttributeError, KeyError...) is not in the list: it reaches the CLI as one.
DATA_ERRORS: tuple[type[Exception], ...] = (LlmwikiError, OSError, ValueError)
#: What an optional step (an embedding model, a search-index refresh after a write) may
#: raise, including an extra that is not installed: the step is skipped with a warning.
BEST_EFFORT_ERRORS: tuple[type[Exception], ...] = DATA_ERRORS + (ImportError,)


def missing_extra(exc: ModuleNotFoundError) -> MissingDependency | None:
    """The error to show for ``exc`` when it is a retrieval extra that is not installed."""
    if exc.name not in RETRIEVAL_MODULES:
        return None
    return MissingDependency(
        f"this command needs {exc.name}, which the base install (enough for check, links, "
        "hooks and review) does not include",
        hint=LOCAL_INSTALL_HINT,
    )

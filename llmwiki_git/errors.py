"""The one exception tree of llmwiki-git; the CLI turns these into messages and exit codes.

    LlmwikiError                    exit 1 (unless a subclass says otherwise)
    ├── UsageError                  exit 2: bad flags or arguments the parser could not catch
    ├── ConfigError                 exit 2: unreadable or invalid .llmwiki/config.toml
    ├── NotARepository              exit 2: no wiki / git work tree where one is needed
    ├── WikiError                   a page or the wiki cannot be read as asked
    │   ├── PageReadError           one page's bytes could not be read
    │   └── PathRefused             a path the confinement rule refuses (confine.py)
    ├── GitError                    a git command failed (cmd, returncode, stderr)
    └── MissingDependency           exit 2: an optional extra (local, remote, mcp) is missing

Anything else escaping to the CLI is a bug: exit 3 with a one-line hint to re-run with
``--traceback``.
"""

from __future__ import annotations

from collections.abc import Sequence


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


class NotARepository(LlmwikiError):
    exit_code = 2


class WikiError(LlmwikiError):
    pass


class PageReadError(WikiError):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class PathRefused(WikiError):
    """A path that leaves its root, is not a regular file, is too large, or would be written
    through a symlink (see confine.py)."""

    def __init__(self, path: str, reason: str, *, code: str = "path-refused", hint: str | None = None) -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason
        self.code = code  # symlink-escape | not-regular-file | too-large | unreadable | symlink-write | path-refused


class GitError(LlmwikiError):
    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str) -> None:
        shown = " ".join(cmd)
        detail = stderr.strip() or "(no output)"
        super().__init__(f"git command failed ({returncode}): {shown}\n  {detail}")
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stderr = stderr


#: How to install what query, context, index and serve need (the ``local`` extra).
LOCAL_INSTALL_HINT = "pip install 'llmwiki-git[local]' (from a clone: pip install '.[local]')"
#: Third-party modules of the retrieval extras: their absence is a missing extra, not a bug.
RETRIEVAL_MODULES = frozenset({"numpy", "httpx"})


class MissingDependency(LlmwikiError):
    """An optional dependency (an extra of the distribution) is not installed."""

    exit_code = 2


def missing_extra(exc: ModuleNotFoundError) -> MissingDependency | None:
    """The error to show for ``exc`` when it is a retrieval extra that is not installed."""
    if exc.name not in RETRIEVAL_MODULES:
        return None
    return MissingDependency(
        f"this command needs {exc.name}, which the base install (enough for check, links, "
        "hooks and review) does not include",
        hint=LOCAL_INSTALL_HINT,
    )

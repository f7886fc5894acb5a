"""llmwiki-git: a git-native LLM wiki. The public library API.

The names below are loaded on first use (PEP 562), not when the package is imported: every
command imports this package first, and eager imports here cost `llmwiki context` and the
hook ~0.05-0.09 s for modules they do not need (measured, issue 15).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checks import CheckResult, check_wiki, new_problems
    from .errors import LlmwikiError
    from .problems import Problem
    from .wiki.citations import Citation, StaticPending, citation_report, format_report
    from .wiki.model import Page, Wiki, load_wiki
    from .wiki.slug import parse_target, slugify
    from .workspace import Workspace

#: Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    "CheckResult": ".checks",
    "check_wiki": ".checks",
    "new_problems": ".checks",
    "LlmwikiError": ".errors",
    "Problem": ".problems",
    "Citation": ".wiki.citations",
    "StaticPending": ".wiki.citations",
    "citation_report": ".wiki.citations",
    "format_report": ".wiki.citations",
    "Page": ".wiki.model",
    "Wiki": ".wiki.model",
    "load_wiki": ".wiki.model",
    "parse_target": ".wiki.slug",
    "slugify": ".wiki.slug",
    "Workspace": ".workspace",
}

__all__ = [
    "CheckResult",
    "Citation",
    "LlmwikiError",
    "Page",
    "Problem",
    "StaticPending",
    "Wiki",
    "Workspace",
    "check_wiki",
    "citation_report",
    "format_report",
    "load_wiki",
    "new_problems",
    "parse_target",
    "slugify",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

"""llmwiki-git: a git-native LLM wiki. The public library API."""

from __future__ import annotations

from .checks import CheckResult, check_wiki, new_problems
from .errors import LlmwikiError
from .problems import Problem
from .wiki.citations import Citation, StaticPending, citation_report, format_report
from .wiki.model import Page, Wiki, load_wiki
from .wiki.slug import parse_target, slugify
from .workspace import Workspace

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

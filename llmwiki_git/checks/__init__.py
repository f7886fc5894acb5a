"""The check engine: broken wikilinks found, cached and derived, returned as a `CheckResult`.

One job per module:

* `result`: `CheckResult` (the value every renderer reads), new-since-base, fail-closed;
* `links`: link classification, the one copy (a target text's outcome, a page's problems);
* `checker`: the whole-wiki check and the names fingerprint;
* `delta`: a tree's result derived from another tree's plus their diff (the hook's path);
* `cache`: the cache files in the git dir; `version`: their version, derived from the code;
* `engine`: which of those a check of a scope uses (the composition root calls only this).
"""

from __future__ import annotations

from .checker import check_wiki
from .result import CheckResult, fail_closed, new_problems

__all__ = ["CheckResult", "check_wiki", "fail_closed", "new_problems"]

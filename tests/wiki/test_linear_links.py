"""Issue 22, item 4: link scanning and stripping stay linear in the input on every path (the
check, retrieval's chunk cleaning, `links`, the MCP tools, the offline answerer).

No timing here (benchmarks/bracket_flood.py measures: a page of 2,000,000 "[" and a 7 MB page
of links). Instead a lint over every regular expression of the package finds the shape that
made ``context`` take minutes: a pattern that starts with a literal prefix (``[``, ``[[``,
``^[``, ``<!--``) and whose first unbounded repeat can consume a run of that prefix before
something required must follow. On a run of the prefix every position starts an attempt
that rescans the rest of the run: quadratic. The lint is checked against the patterns it
caught, so it cannot pass by seeing nothing."""

from __future__ import annotations

import importlib
import pkgutil
import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as P  # type: ignore[import-not-found]

import pytest

import llmwiki_git
from llmwiki_git.markup import strip_comments

REPEATS = tuple(
    x for x in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)) if x is not None
)
CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}


def _can_match(item: tuple, char: str, dotall: bool) -> bool:
    """Whether a one-character matcher of a parsed pattern matches ``char``."""
    op, av = item
    if op is C.LITERAL:
        return chr(av) == char
    if op is C.NOT_LITERAL:
        return chr(av) != char
    if op is C.ANY:
        return dotall or char != "\n"
    if op is C.IN:
        negate, hit = False, False
        for o, a in av:
            if o is C.NEGATE:
                negate = True
            elif o is C.LITERAL:
                hit |= chr(a) == char
            elif o is C.RANGE:
                hit |= a[0] <= ord(char) <= a[1]
            elif o is C.CATEGORY:
                hit |= re.match(CATEGORIES.get(a, "."), char) is not None
        return hit != negate
    return False


def _flatten(seq: object) -> list[tuple]:
    out: list[tuple] = []
    for op, av in seq:  # type: ignore[attr-defined]
        if op is C.SUBPATTERN:
            out += _flatten(av[-1])
        elif op is getattr(C, "ATOMIC_GROUP", None):
            out += _flatten(av)
        else:
            out.append((op, av))
    return out


def _required(item: tuple) -> bool:
    op, av = item
    if op in REPEATS:
        return av[0] > 0
    return op not in (C.AT, C.ASSERT, C.ASSERT_NOT)


def quadratic_prefix(pattern: re.Pattern[str]) -> str | None:
    """The literal prefix a run of which makes ``pattern`` quadratic (see the module doc), or
    None. Anchored patterns (one start per line) and patterns not starting with a literal
    are not judged."""
    items = _flatten(P.parse(pattern.pattern, pattern.flags))
    if not items or items[0][0] is C.AT:
        return None
    dotall = bool(pattern.flags & re.S)
    prefix = ""
    for index, (op, av) in enumerate(items):
        if op is C.LITERAL:
            prefix += chr(av)
            continue
        if op in REPEATS and av[1] is C.MAXREPEAT:
            if not prefix:
                return None
            body = _flatten(av[2])
            alternatives = (
                [_flatten(b) for b in body[0][1][1]]
                if len(body) == 1 and body[0][0] is C.BRANCH
                else [body]
            )
            consumes = any(
                len(alt) == 1 and all(_can_match(alt[0], c, dotall) for c in prefix)
                for alt in alternatives
            )
            return prefix if consumes and any(map(_required, items[index + 1 :])) else None
        if op in REPEATS and av[0] == 0:
            continue  # an optional start such as "!?"
        return None
    return None


def package_patterns() -> dict[str, re.Pattern[str]]:
    found = {}
    for info in pkgutil.walk_packages(llmwiki_git.__path__, "llmwiki_git."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[f"{info.name}.{name}"] = value
    return found


#: Patterns of the code before issue 22, each quadratic on a run of its prefix (measured:
#: 2x the input, about 4x the time), and their linear forms now in the package.
BEFORE = {
    r"!?\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]": "[[",
    r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)": "[",
    r"\[([^\]\n]+)\]\[[^\]\n]*\]": "[",
    r"\[\^[^\]\n]*\]": "[^",
    r"!\[[^\]\n]*\]\([^)\n]*\)": "![",
    r"\^\[([^\]\n]+)\]": "^[",
    r"\[\[([^\]|]*)(?:\|([^\]]*))?\]\]": "[[",
}


@pytest.mark.parametrize("source,prefix", sorted(BEFORE.items()))
def test_the_lint_catches_the_patterns_that_were_quadratic(source: str, prefix: str) -> None:
    assert quadratic_prefix(re.compile(source)) == prefix
    assert quadratic_prefix(re.compile(r"<!--.*?-->", re.S)) == "<!--"


def test_no_pattern_of_the_package_rescans_a_run_of_its_prefix() -> None:
    patterns = package_patterns()
    assert len(patterns) > 50  # the walk saw the package
    risky = {name: quadratic_prefix(p) for name, p in patterns.items() if quadratic_prefix(p)}
    assert risky == {}, risky


SAMPLES = [
    "",
    "plain",
    "a <!-- b --> c",
    "<!---->",
    "<!-->",
    "x <!-- a\nb --> y <!-- c --> z",
    "<!-- open only",
    "a <!-- b --> <!-- never closed",
    "--> <!-- x -->",
    "<!--<!-- nested -->-->",
    "<!--" * 50 + "-->",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_strip_comments_is_the_lazy_regex_in_one_pass(text: str) -> None:
    assert strip_comments(text, " ") == re.sub(r"<!--.*?-->", " ", text, flags=re.S)


def test_the_linear_forms_still_strip_links_as_readers_read_them() -> None:
    from llmwiki_git.providers.extractive import clean_sentence
    from llmwiki_git.retrieval.chunking import readable_text

    text = "See [[alpha|the first]] and [[beta]], ![img](p.png) [docs](http://x.y) [ref][1] [^n] <!-- hidden -->."
    assert readable_text(text) == "See the first and beta, image img docs [ref][1] [^n] ."
    flood = "[" * 1000 + " [[alpha]] " + "![" * 500 + "^[" * 500
    assert "alpha" in readable_text(flood) and "[[alpha]]" not in readable_text(flood)
    assert clean_sentence("A [[x|ex]] b [y](u) [z][1] [^f] <!-- c --> d.") == "A ex b y z d."

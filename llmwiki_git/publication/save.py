"""``query --save``: the publication policy, re-validated under the repository lock against the
wiki as it will be after the write, then one git commit touching only the written paths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import confine
from ..errors import DATA_ERRORS, PathRefused, WriteRefused
from ..gitstore.commits import current_branch
from ..gitstore.git import Git
from ..gitstore.transaction import Intent, check_worktree
from ..wiki.citations import (
    AMBIGUOUS,
    BROKEN,
    PENDING,
    Citation,
    PendingIndex,
    ambiguity,
    citation_report,
)
from ..wiki.model import Wiki
from ..wiki.pages import MAX_PAGE_BYTES
from .document import log_entry, now_iso, page_list, query_slug, render_page
from .write import Site, commit_and_move, locked

DIRECT = "direct"
PROPOSAL = "proposal"


@dataclass
class Refusal:
    code: str  # broken | ambiguous | pending | unavailable | profile-disabled | hand-written
    targets: list[str]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "targets": self.targets, "message": self.message}


@dataclass
class Published:
    path: str
    commit: str
    slug: str


def profile_refusal(state_dir: Path) -> Refusal | None:
    """Direct saves need the default profile (the reference tool's ``profile-disabled``)."""
    path = state_dir / "profile.json"
    if not path.is_file():
        return None
    try:
        profile = confine.read_json(path, max_bytes=1024 * 1024, name="profile.json").get(
            "profileId", "default"
        )
    except (PathRefused, ValueError, AttributeError):
        profile = "unknown"
    if profile == "default":
        return None
    return Refusal(
        "profile-disabled",
        [],
        f"Saving queries is disabled in profile-enabled projects (profile {profile!r}): the direct write "
        "path is not trust-routed. Run without --save, or stage it with --save --review.",
    )


def policy_refusal(
    citations: list[Citation] | None, error: str | None, mode: str
) -> Refusal | None:
    """The publication policy table of DESIGN §5 for one citation report."""
    if citations is None:
        return Refusal(
            "unavailable",
            [],
            f"Answer publication refused: citation validation unavailable ({error})",
        )
    broken = [c.target for c in citations if c.status == BROKEN]
    pending = [c.target for c in citations if c.status == PENDING]
    if broken:
        message = f"Answer publication refused: broken citation targets: {', '.join(broken)}"
        if pending and mode == DIRECT:
            message += f"; pending citation targets: {', '.join(pending)}"
        return Refusal("broken", broken, message)
    ambiguous = [c for c in citations if c.status == AMBIGUOUS]
    if ambiguous:  # it may name another page than the one meant: a saved answer must cite exactly
        return Refusal(
            "ambiguous",
            [c.target for c in ambiguous],
            "Answer publication refused: ambiguous citation targets: "
            + "; ".join(ambiguity(c) for c in ambiguous)
            + ". Cite the page by a path that only it matches (such as [[folder/name]], or [[/name]] "
            "for a page at the wiki root)",
        )
    if pending and mode == DIRECT:
        return Refusal(
            "pending",
            pending,
            f"Answer publication refused: pending citation targets: {', '.join(pending)}"
            " (approve those review candidates first)",
        )
    return None


def body_of(document: str) -> str:
    from ..wiki.frontmatter import split

    _, offset, _ = split(document)
    return document[offset:]


def target_path(wiki: Wiki, slug: str) -> str:
    return f"{wiki.root_dir}/queries/{slug}.md" if wiki.root_dir else f"queries/{slug}.md"


def hand_written_problem(git: Git, rev: str | None, path: str) -> str | None:
    """Why an answer may not be written to ``path``: a page is there at ``rev`` that is not a
    saved answer (its frontmatter has no ``type: query``) -- someone wrote it by hand, and a
    save or an approved answer must never silently replace it. None: absent, or an answer."""
    if rev is None:
        return None
    blob = git.blob_at(rev, path)
    if blob is None:
        return None
    from ..wiki.frontmatter import parse

    text = git.read_blob(blob)[:MAX_PAGE_BYTES].decode("utf-8", "replace")
    if parse(text).data.get("type") == "query":
        return None
    return (
        f"{path} is a page someone wrote, not a saved answer (its frontmatter has no `type: query`); "
        "an answer never replaces it"
    )


HAND_WRITTEN_HINT = (
    "ask in other words (the page name comes from the question), or rename or move that page first"
)


def precheck(site: Site, question: str) -> None:
    """Refuse a save before any answer is generated (and paid for) when the page it would
    write has uncommitted edits; repeated under the lock by :func:`publish`. Under the lock
    too: another writer's commit in progress (branch moved, work tree still following) must
    not look like an edit of the user's."""
    git = site.git
    current_branch(git)  # a detached HEAD refuses now, not after the answer
    with locked(site):
        try:
            path = target_path(site.load_wiki("HEAD"), query_slug(question))
        except DATA_ERRORS:  # an unreadable wiki: publish() refuses it as "validation unavailable"
            return
        head = git.rev_parse("HEAD")
        check_worktree(git, Intent("", head, head or "", "save", [path]))
        problem = hand_written_problem(git, head, path)
        if problem is not None:
            raise WriteRefused(
                f"refusing to save: {problem}; nothing was changed", hint=HAND_WRITTEN_HINT
            )


def publish(
    site: Site,
    *,
    question: str,
    answer: str,
    page_ids: list[str],
    pending: PendingIndex | None,
) -> Published | Refusal:
    """Validate under the repository lock against HEAD's tree with the page added, then commit
    the page, the generated ``index.md`` and the ``log.md`` entry (each where llmwiki owns it)
    as one commit, moved onto the branch as one transaction."""
    slug = query_slug(question)
    document = render_page(question, answer, now_iso())
    git = site.git
    with locked(site):
        ref = current_branch(git)
        head = git.rev_parse("HEAD")
        try:
            current = site.load_wiki("HEAD")
            path = target_path(current, slug)
            after = current.with_page(path, document)
            citations, error = citation_report(body_of(document), after, pending), None
        except DATA_ERRORS as exc:  # validation must not crash the save: it refuses it
            citations, error = None, f"{exc.__class__.__name__}: {exc}"
        refusal = policy_refusal(citations, error, DIRECT)
        if refusal is not None:
            return refusal
        problem = hand_written_problem(git, head, path)
        if problem is not None:
            return Refusal(
                "hand-written",
                [path],
                f"Answer publication refused: {problem}; {HAND_WRITTEN_HINT}",
            )
        first = " ".join(question.split())
        message = f'llmwiki: save query "{first[:60]}{"…" if len(first) > 60 else ""}"\n\nQuestion: {first}\nPage: {path}\n'
        entry = log_entry(
            "query", question, [f"Saved: [[{slug}]]", f"Pages: {page_list(page_ids)}"]
        )
        _, commit = commit_and_move(
            site,
            ref=ref,
            head=head,
            page_commit=None,
            page=(path, document),
            message=message,
            followup_message=message,
            entry=entry,
            what=f"save of {path}",
        )
    return Published(path, commit, slug)

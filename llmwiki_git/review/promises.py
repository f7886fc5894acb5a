"""What each candidate kind promises about its base, checked at approval (``review approve``,
``review show``, ``review list`` and the Action's candidate step all go through
``approve.evaluate``).

The trailers and the commit say what a candidate does; a hand-built branch can say anything
the structural check (``publication.candidates.validate``) lets through. So before its
policy runs, every candidate is held to what its kind's row (``publication/kinds.py``)
promises, read from its base alone:

* every kind: each ``Llmwiki-Source`` names a plain path inside the project's ``sources/``
  that is a file at the base with exactly that blob (:func:`sources_problem`);
* ``compile/1`` never deletes a file (:func:`compile_problem`);
* ``retraction/1`` deletes only the retracted source and pages whose recorded sources
  (``sources:`` at the base) are exactly that source, and writes only pages that named or
  cited it at the base (:func:`retraction_problem`); what its ``--allow-broken`` may break
  is limited in ``filespolicy.py``.

A broken promise is the code ``broken-promise``: the candidate can never be approved as it is.
"""

from __future__ import annotations

from ..gitstore.git import Git
from ..publication import kinds
from ..publication.candidates import SOURCE_MODES, Candidate
from ..publication.kinds import KindRow
from ..publication.trailers import ABSENT, Trailers
from ..wiki.provenance import citation_name, in_sources, named_sources
from .project import ReviewProject

CODE = "broken-promise"
_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)))


def promise_problem(
    ws: ReviewProject, candidate: Candidate, row: KindRow
) -> tuple[str, str] | None:
    """(code, message) of the first promise ``candidate`` (structurally valid, of kind
    ``row``) breaks against its base; None when it keeps them all. Public: the approval
    gate (``approve.evaluate``) calls it for every kind."""
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None
    problem = sources_problem(git, t, ws.project_prefix)
    if problem is None and row.check is not None:
        problem = kinds.call(row.check)(ws, candidate)
    if problem is None:
        return None
    return CODE, f"candidate {candidate.id} ({t.kind}) {problem}; reject it"


def sources_problem(git: Git, t: Trailers, project_prefix: str) -> str | None:
    """Why the ``Llmwiki-Source`` trailers of ``t`` lie: each must name a plain path (no
    empty, ``.`` or ``..`` part, no backslash or control character) inside the project's
    ``sources/``, a regular file at the base whose blob is the one recorded."""
    for path, blob in t.sources:
        parts = path.split("/")
        if (
            any(part in ("", ".", "..") for part in parts)
            or "\\" in path
            or any(c in _CONTROL for c in path)
            or not in_sources(path, project_prefix)
        ):
            return f"records the source {path!r}, which is not a plain path inside sources/"
        if git.file_mode(t.base, path) not in SOURCE_MODES:
            return f"records the source {path}, which is not a file at its base"
        found = git.blob_at(t.base, path)
        if found != blob:
            return (
                f"records the source {path} as blob {blob[:12]}, but at its base it is blob "
                f"{(found or '')[:12]}"
            )
    return None


def compile_problem(ws: ReviewProject, candidate: Candidate) -> str | None:
    """A compile run adds or replaces pages; it never deletes a file."""
    t = candidate.trailers
    assert t is not None
    deleted = [f.target for f in t.files if f.body_digest == ABSENT]
    if deleted:
        return f"deletes {', '.join(deleted[:5])}: a compile run never deletes a file"
    return None


def retraction_problem(ws: ReviewProject, candidate: Candidate) -> str | None:
    """A retraction deletes the retracted source and only the pages whose recorded sources at
    its base are exactly that source, and writes only pages that named or cited it there."""
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None and t.retracts is not None
    source, prefix = t.retracts, ws.project_prefix
    pages = [f for f in t.files if f.target != source]
    texts: dict[str, str] = {}
    for f in pages:
        data = git.read_blob_at(t.base, f.target)
        if data is None:
            return (
                f"writes {f.target}, which was no page at its base: a retraction only deletes "
                "or rewrites pages that drew on the source"
            )
        texts[f.target] = data.decode("utf-8", "replace")
    named = named_sources(texts, prefix)
    wiki = ws.wiki(t.base)
    name = citation_name(source, prefix)
    for f in pages:
        recorded = named.get(f.target, ())
        if f.body_digest == ABSENT:
            if recorded != (source,):
                shown = ", ".join(recorded) or "none"
                return (
                    f"deletes {f.target}, whose recorded sources at its base are not exactly "
                    f"{source} (they are: {shown})"
                )
            continue
        page = wiki.by_path.get(f.target)
        cites = page is not None and any(
            item[0] == "c" and item[1] == name for item in page.scan.sourcing
        )
        if source not in recorded and not cites:
            return f"rewrites {f.target}, which neither named nor cited {source} at its base"
    return None

"""``llmwiki retract sources/x.md``: a source withdrawn, and what it fed cleaned up, as ONE
review candidate (kind ``retraction/1``) approved through the same path as any other.

The candidate's one commit, on the current tip:

* deletes the source (a regular file in the project's ``sources/``; the ``Llmwiki-Retracts``
  trailer names it -- the only file in ``sources/`` a candidate may ever touch);
* deletes every page written from it alone (its ``sources:`` names only it);
* rewrites every other page that names or cites it: with a model, from the sources it has
  left (the model is told what was retracted); offline -- or where no other source is left --
  the page drops the source from ``sources:``/``sourceBlobs:`` and its citations of it, and
  is marked ``retracted: [sources/x.md]``, which ``llmwiki check`` reports as ``stale-page``
  until someone reviews what it still says.

Links to the deleted pages are listed as what approval would break; approval refuses them
until they are fixed, or ``--allow-broken`` (``review approve``, ``retract --publish``) says
to break them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import ApprovalRefused, UsageError
from ..gitstore.commits import current_branch
from ..gitstore.git import Git
from ..problems import Problem
from ..providers.base import ChatProvider
from ..providers.registry import make_provider, provider_name
from ..providertable import OFFLINE_CHAT
from ..publication.candidates import SOURCE_MODES, page_target_problem, source_target_problem
from ..publication.trailers import RETRACT_KIND, Recorded
from ..review.approve import Approved
from ..review.pagepolicy import link_outcome_many
from ..review.project import ReviewProject
from ..review.service import approve_candidate
from ..review.stagefiles import FileWrite, StagedFiles, stage_files
from ..wiki.frontmatter import parse
from ..wiki.model import Wiki
from ..wiki.provenance import (
    RETRACTED_KEY,
    citation_name,
    cited,
    frontmatter_paths,
    set_keys,
    sources_dir,
)
from ..wiki.scanner import prose_lines, scan_links, split_lines
from ..wiki.slug import parse_target, slugify
from .plan import Plan, make_plan
from .progress import Progress, Usage

PROMPT = "retraction/1"  # the version of the model's instruction below, recorded as Llmwiki-Prompt
_CITATION = re.compile(
    r"[ \t]?\^\[([^\[\]\n]+)\]"
)  # as compiler/concepts._CITE: linear on a run of "^["


def instruction(source: str) -> str:
    """What the model is told when it rewrites a page that drew on a retracted source."""
    return (
        f"The source {source} was RETRACTED: it must no longer contribute to the page. Rewrite the page from "
        "the sources shown only: remove every statement that only the retracted source supported, never "
        f"cite {source.rsplit('/', 1)[-1]}, and keep what the sources shown still support."
    )


@dataclass
class Rewritten:
    target: str
    how: str  # model | marked

    def to_json(self) -> dict[str, str]:
        return {"target": self.target, "how": self.how}


@dataclass
class RetractResult:
    source: str
    blob: str | None  # at the base (None: already gone; only its pages are cleaned up)
    base: str
    deleted: list[str] = field(default_factory=list)
    rewritten: list[Rewritten] = field(default_factory=list)
    breaks: list[Problem] = field(
        default_factory=list
    )  # links to the deleted pages approval would break
    candidate: StagedFiles | None = None
    approved: Approved | None = None
    refusal: str | None = None
    dry_run: bool = False
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    left_alone: list[str] = field(
        default_factory=list
    )  # pages citing it that llmwiki never writes (a user's index.md)

    @property
    def exit_code(self) -> int:
        return 1 if self.refusal else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "source": self.source,
            "blob": self.blob,
            "base": self.base,
            "dryRun": self.dry_run,
            "deleted": self.deleted,
            "rewritten": [r.to_json() for r in self.rewritten],
            "breaks": [p.to_json() for p in self.breaks],
            "model": self.model,
            "candidate": None if self.candidate is None else self.candidate.to_json(),
            "approved": None if self.approved is None else self.approved.to_json(),
            "refusal": self.refusal,
            "usage": self.usage.to_json(),
            "leftAlone": self.left_alone,
        }


def source_path(ws: ReviewProject, given: str, cwd: Path) -> str:
    """The repository path of the source named ``given`` (a path from ``cwd``, or from the
    project folder): it must lie in the project's ``sources/`` folder."""
    root = Path(ws.root).resolve()
    candidates = [Path(os.path.normpath(cwd / given))]
    project = root / ws.project_prefix if ws.project_prefix else root
    candidates.append(Path(os.path.normpath(project / given)))
    for place in candidates:
        try:
            rel = place.relative_to(root).as_posix()
        except ValueError:
            continue
        if source_target_problem(rel, ws.project_prefix) is None:
            return rel
    raise UsageError(
        f"{given} is not a file in {sources_dir(ws.project_prefix)}/",
        hint=f"name a source as {sources_dir(ws.project_prefix)}/<name> (see `git ls-files "
        f"{sources_dir(ws.project_prefix)}`)",
    )


def unlinked(text: str, wiki: Wiki, gone: set[str]) -> str:
    """``text`` with its links to the pages ``gone`` (paths; deleted by the same retraction)
    turned into their plain text (the label, else the target)."""
    if not gone or "[[" not in text:
        return text
    lines = split_lines(text)
    for occ in sorted(
        scan_links(text, parse(text).body_line), key=lambda o: (o.line, o.col), reverse=True
    ):
        found = wiki.resolve(parse_target(occ.target)).page
        if found is None or found.path not in gone:
            continue
        row = lines[occ.line - 1]
        start = occ.col - 1
        lines[occ.line - 1] = (
            row[:start] + (occ.label or occ.target.strip()) + row[start + len(occ.source_text) :]
        )
    return "\n".join(lines)


def unsourced(text: str, source: str, project_prefix: str) -> str:
    """``text`` of a page that drew on ``source`` (repository path), offline: the source gone
    from ``sources:`` and ``sourceBlobs:``, its citations removed (a citation of several
    sources keeps the others), and ``retracted:`` naming it (check: ``stale-page``)."""
    name = citation_name(source, project_prefix)
    rel = frontmatter_paths([source], project_prefix)[0]
    meta = parse(text)
    lines = split_lines(text)
    for index, line in reversed(list(prose_lines(text, meta.body_line))):
        if "^[" not in line:
            continue
        row = lines[index]
        for match in reversed(list(_CITATION.finditer(line))):
            parts = [part.strip() for part in re.split(r"[;,]", match.group(1))]
            kept = [part for part in parts if not any(n == name for n, _, _ in cited(part))]
            if len(kept) == len(parts):
                continue
            lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip(" \t"))]
            row = (
                row[: match.start()]
                + (f"{lead}^[{', '.join(kept)}]" if kept else "")
                + row[match.end() :]
            )
        lines[index] = row
    body_changed = "\n".join(lines)
    data = meta.data
    listed = data.get("sources")
    sources = [
        item
        for item in (
            listed if isinstance(listed, list) else [listed] if isinstance(listed, str) else []
        )
        if not (isinstance(item, str) and item.strip() in (rel, name))
    ]
    blobs = data.get("sourceBlobs")
    kept_blobs = (
        {k: v for k, v in blobs.items() if k not in (rel, name)}
        if isinstance(blobs, Mapping)
        else None
    )
    earlier = data.get(RETRACTED_KEY)
    retracted = [
        x
        for x in (
            earlier if isinstance(earlier, list) else [earlier] if isinstance(earlier, str) else []
        )
        if x != rel
    ] + [rel]
    updates: dict[str, Any] = {RETRACTED_KEY: retracted}
    if "sources" in data:
        updates["sources"] = sources or None
    if kept_blobs is not None:
        updates["sourceBlobs"] = kept_blobs or None
    return set_keys(body_changed, updates)


def retract(
    ws: ReviewProject,
    given: str,
    *,
    cwd: Path,
    provider: str | None = None,
    publish: bool = False,
    allow_broken: bool = False,
    dry_run: bool = False,
    concurrency: int = 4,
    environ: Mapping[str, str] | None = None,
    note: Callable[[str], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> RetractResult:
    """Retract the source ``given`` as one candidate (see the module docstring)."""
    env = ws.environ if environ is None else environ
    git = ws.require_git("retracting a source")
    at = _retracted(ws, git, given, cwd)
    source = at.source
    plan = make_plan(git, ws.wiki(at.base), at.base, ws.project_prefix)
    name = citation_name(source, ws.project_prefix)
    fed = _fed(plan, at, name)
    result = RetractResult(
        source, at.blob or None, at.base, deleted=fed.only, dry_run=dry_run, left_alone=fed.kept
    )
    writes = [FileWrite(path, None) for path in fed.only]
    name_used, _ = provider_name(provider, env, ws.settings.chat_provider)
    by_model = _by_model(plan, fed.shared, source) if name_used != OFFLINE_CHAT else []
    writes += _marked(plan, fed, by_model, source, ws.project_prefix, result)
    progress = Progress(len(by_model), on_progress)
    recorded = Recorded(retracts=source)
    if by_model and not dry_run:
        chat = make_provider(name_used, env, None, ws.settings)
        result.model = f"{name_used}/{chat.model}"
        rewrite = _Rewrite(plan, chat, progress, fed.only, by_model, source, concurrency)
        more, recorded = _rewrite_by_model(rewrite, result)
        writes += more
    elif by_model:
        result.rewritten += [Rewritten(path, "model") for path in by_model]
    result.usage = progress.usage
    if at.blob:
        writes.append(FileWrite(source, None))
    links = link_outcome_many(
        ws, at.base, {w.target: w.document for w in writes if w.target != source}
    )
    result.breaks = links.new_errors
    if dry_run:
        return result
    result.candidate = _stage(ws, result, writes, recorded, name, note)
    if result.candidate is not None and publish:
        try:
            result.approved = approve_candidate(
                ws, result.candidate.candidate_id, note, allow_broken=allow_broken
            )
        except ApprovalRefused as exc:
            result.refusal = exc.message
    return result


def _stage(
    ws: ReviewProject,
    result: RetractResult,
    writes: list[FileWrite],
    recorded: Recorded,
    name: str,
    note: Callable[[str], None] | None,
) -> StagedFiles | None:
    """The retraction's candidate, named after the source (cited as ``name``)."""
    slug = slugify(name.rsplit(".", 1)[0])[:60] or "source"
    return stage_files(
        ws,
        writes,
        kind=RETRACT_KIND,
        slug=f"retract-{slug}",
        subject=_subject(result),
        body=_body(result),
        recorded=recorded,
        base=result.base,
        note=note,
    )


class _Retracted(NamedTuple):
    """The source to retract as HEAD has it: its mode and blob ("" / None: not there)."""

    base: str
    source: str
    mode: str
    blob: str | None


def _retracted(ws: ReviewProject, git: Git, given: str, cwd: Path) -> _Retracted:
    """The source ``given`` names, at HEAD of the current branch: a regular file, or absent
    (only its pages are then cleaned up)."""
    current_branch(git)
    base = git.rev_parse("HEAD")
    if base is None:
        raise UsageError(
            "the branch has no commit yet", hint="commit the wiki and its sources first"
        )
    source = source_path(ws, given, cwd)
    mode = git.file_mode(base, source)
    if mode and mode not in SOURCE_MODES:
        raise UsageError(
            f"{source} is not a regular file at HEAD (mode {mode}); only a file can be retracted"
        )
    return _Retracted(base, source, mode, git.blob_at(base, source) if mode else None)


class _Fed(NamedTuple):
    """The pages that name or cite the retracted source: written from it ``only`` (deleted),
    ``shared`` with other sources (rewritten), and ``kept``: never llmwiki's to write."""

    only: list[str]
    shared: list[str]
    kept: list[str]


def _fed(plan: Plan, at: _Retracted, name: str) -> _Fed:
    """The pages the source (cited as ``name``) fed, by what the retraction does to them;
    UsageError when there is nothing to retract (no source, no page)."""
    source = at.source
    fed = _Fed([], [], [])
    wiki = plan.wiki
    for page in wiki.pages:
        named = [f.source for f in plan.provenance.of_page(page.path)]
        cites = any(item[0] == "c" and item[1] == name for item in page.scan.sourcing)
        if source not in named and not cites:
            continue
        if page_target_problem(page.path, wiki.root_dir) is not None:
            fed.kept.append(page.path)  # a user's own index.md or log.md: never llmwiki's to write
        elif named == [source]:
            fed.only.append(page.path)
        else:
            fed.shared.append(page.path)
    if not at.mode and not fed.only and not fed.shared and not fed.kept:
        raise UsageError(
            f"{source} is not in the commit at HEAD, and no page names or cites it: nothing to retract"
        )
    return fed


def _by_model(plan: Plan, shared: list[str], source: str) -> list[str]:
    """The shared pages a model rewrites: those with another source left to write from."""
    blobs = {s.path: s.blob for s in plan.sources}
    return [
        p
        for p in shared
        if any(f.source != source and f.source in blobs for f in plan.provenance.of_page(p))
    ]


def _marked(
    plan: Plan,
    fed: _Fed,
    by_model: list[str],
    source: str,
    project_prefix: str,
    result: RetractResult,
) -> list[FileWrite]:
    """The shared pages no model rewrites, unsourced and marked ``retracted:``, their links
    to the deleted pages made plain text (each listed in ``result.rewritten``)."""
    writes = []
    gone = set(fed.only)
    for path in fed.shared:
        if path not in by_model:
            text = unlinked(unsourced(plan.texts[path], source, project_prefix), plan.wiki, gone)
            writes.append(FileWrite(path, text))
            result.rewritten.append(Rewritten(path, "marked"))
    return writes


class _Rewrite(NamedTuple):
    """What the model's rewrite of the shared pages takes."""

    plan: Plan
    chat: ChatProvider
    progress: Progress
    deleted: list[str]
    by_model: list[str]
    source: str
    concurrency: int


def _rewrite_by_model(rewrite: _Rewrite, result: RetractResult) -> tuple[list[FileWrite], Recorded]:
    """The model's rewrites of ``by_model`` from the sources they have left (each listed in
    ``result.rewritten``), and what the trailers record: those sources, the model, the
    prompt."""
    from .concepts import asker, page_concepts, write_pages

    plan, source = rewrite.plan, rewrite.source
    left = plan.wiki
    for (
        path
    ) in rewrite.deleted:  # links to the deleted pages are no valid targets: repaired to plain text
        left = left.without_page(path)
    writes, written = write_pages(
        replace(plan, wiki=left),
        asker(rewrite.chat, rewrite.progress),
        page_concepts(plan, rewrite.by_model, frozenset({source})),
        concurrency=rewrite.concurrency,
        progress=rewrite.progress,
        instruction=instruction(source),
    )
    result.rewritten += [Rewritten(w.target, "model") for w in written]
    blobs = {s.path: s.blob for s in plan.sources}
    recorded = Recorded(
        tuple(sorted({(s, blobs[s]) for w in written for s in w.sources})),
        result.model,
        PROMPT,
        retracts=source,
    )
    return writes, recorded


def _subject(result: RetractResult) -> str:
    return (
        f"llmwiki: retract {result.source} ({len(result.deleted)} page(s) deleted, "
        f"{len(result.rewritten)} rewritten)"
    )


def _body(result: RetractResult) -> str:
    lines = [
        f"Retracted: {result.source}"
        + (f" (blob {result.blob})" if result.blob else " (already deleted)")
    ]
    lines += ["", "Deleted pages:", *[f"- {p}" for p in result.deleted]] if result.deleted else []
    lines += (
        ["", "Rewritten pages:", *[f"- {r.target} ({r.how})" for r in result.rewritten]]
        if result.rewritten
        else []
    )
    if result.breaks:
        lines += [
            "",
            "Links approval would break:",
            *[f"- {p.path}:{p.line}: {p.message}" for p in result.breaks],
        ]
    return "\n".join(lines)

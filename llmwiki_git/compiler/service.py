"""``llmwiki compile``: the sources whose blob changed since the pages they feed were written
become pages on ONE review candidate branch (kind ``compile/1``).

1. Plan (``plan.py``): at the current tip, each source whose current blob no page records,
   and no open candidate stages, is to compile. None: "Nothing to compile" -- no model
   request, no branch.
2. Write the pages, outside the lock: offline (no provider configured) one deterministic
   source note per source (``notes.py``); with a model, concept pages (``concepts.py``).
   Every page's frontmatter names its sources (``sources:``, ``sourceBlobs:``).
3. Stage, under the repository lock: if another compile recorded or staged these sources
   meanwhile, nothing is staged; otherwise one commit on the planned tip holds every page,
   each with its precondition, and the trailers record each source with its blob, the
   model and the prompt version.
4. ``--publish``: approve the candidate at once, through the same validation and transaction
   as ``llmwiki review approve``.

``--stale`` plans by page: the pages recording an older blob of a source than the source's
now are rewritten -- a source note from its source, offline or not; any other page by the
model, from every source it names -- and nothing else (no new source is compiled).
``--dry-run`` stops after the plan: no model request, no branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ApprovalRefused, Interrupted, UsageError
from ..gitstore.commits import current_branch
from ..gitstore.git import Git
from ..providers.base import ChatProvider
from ..providers.registry import make_provider, provider_name
from ..providertable import OFFLINE_CHAT
from ..publication.trailers import COMPILE_KIND, Recorded
from ..publication.write import Site, locked
from ..review.approve import Approved
from ..review.project import ReviewProject
from ..review.service import approve_candidate
from ..review.stagefiles import FileWrite, StagedFiles, stage_locked
from ..wiki.model import Wiki
from ..wiki.provenance import Fed, sources_dir
from ..wiki.slug import slugify
from . import notes
from .plan import (
    Plan,
    Repairs,
    Written,
    make_plan,
    page_path,
    still_stale,
    still_to_do,
)
from .progress import Progress, Usage

OFFLINE = OFFLINE_CHAT  # the provider that means: no model, source notes


@dataclass
class CompileResult:
    base: str
    provider: str
    model: str
    prompt: str
    compiled: list[str] = field(default_factory=list)  # source paths compiled by this run
    up_to_date: list[str] = field(default_factory=list)
    staged_elsewhere: dict[str, str] = field(
        default_factory=dict
    )  # source path -> open candidate id
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    raced: list[str] = field(
        default_factory=list
    )  # compiled meanwhile by another run: nothing staged
    pages: list[Written] = field(default_factory=list)
    candidate: StagedFiles | None = None
    approved: Approved | None = None
    refusal: str | None = None  # --publish was refused: the candidate is kept
    gate: str | None = None  # approval would refuse the run: nothing was staged (gate.py)
    usage: Usage = field(default_factory=Usage)
    stale: list[Fed] = field(
        default_factory=list
    )  # --stale: each (page, source) recording an older blob
    needs_model: list[str] = field(
        default_factory=list
    )  # --stale offline: stale pages only a model rewrites
    dry_run: bool = False
    mode: str = "changed"  # changed | stale
    source_blobs: dict[str, str] = field(
        default_factory=dict
    )  # every source at the base (for --stale's listing)

    @property
    def exit_code(self) -> int:
        return 1 if self.refusal or self.gate else 0

    def stale_json(self, blobs: dict[str, str]) -> list[dict[str, Any]]:
        pages: dict[str, list[dict[str, Any]]] = {}
        for fed in self.stale:
            pages.setdefault(fed.page, []).append(
                {"path": fed.source, "recordedBlob": fed.recorded, "blob": blobs.get(fed.source)}
            )
        return [{"page": page, "sources": sources} for page, sources in pages.items()]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "base": self.base,
            "provider": self.provider,
            "model": self.model,
            "prompt": self.prompt,
            "compiled": self.compiled,
            "upToDate": self.up_to_date,
            "stagedElsewhere": self.staged_elsewhere,
            "unreadable": [{"path": p, "reason": why} for p, why in self.unreadable],
            "raced": self.raced,
            "pages": [p.to_json() for p in self.pages],
            "candidate": None if self.candidate is None else self.candidate.to_json(),
            "approved": None if self.approved is None else self.approved.to_json(),
            "refusal": self.refusal,
            "gate": self.gate,
            "usage": self.usage.to_json(),
            "mode": self.mode,
            "dryRun": self.dry_run,
            "stale": self.stale_json(self.source_blobs),
            "needsModel": self.needs_model,
        }


def offline_writes(plan: Plan, progress: Progress) -> tuple[list[FileWrite], list[Written]]:
    """One source note per source to compile: rewritten in place where the source already
    has one, else a new page named after the source."""
    writes, written = [], []
    taken: set[str] = set()
    targets = []
    for source in plan.todo:
        existing = [
            f.page for f in plan.provenance.feeds(source.path) if plan.kind_of(f.page) == notes.KIND
        ]
        targets.append(
            existing[0]
            if existing
            else page_path(
                plan.wiki, slugify(source.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]), taken
            )
        )
    # The run's own notes are pages too: a first run links its notes to one another
    # ("related pages"), as later runs link them to the notes already there.
    after = plan.wiki
    for source, target in zip(plan.todo, targets, strict=True):
        if target not in after.by_path:
            stub = yaml.safe_dump({"title": source.title}, allow_unicode=True, width=10**6)
            after = after.with_page(target, f"---\n{stub}---\n")
    names = notes.name_table(after, plan.project_prefix)
    for source, target in zip(plan.todo, targets, strict=True):
        repairs = Repairs()
        writes.append(FileWrite(target, notes.note(source, after, target, names, repairs)))
        written.append(
            Written(
                target,
                [source.path],
                "replace" if target in plan.wiki.by_path else "add",
                repairs,
            )
        )
        progress.step(source.path)
    return writes, written


def stale_writes(
    plan: Plan, progress: Progress, chat: ChatProvider | None, concurrency: int
) -> tuple[list[FileWrite], list[Written], list[str]]:
    """``--stale``: each stale page rewritten -- a source note from its source, any other page
    by ``chat`` from every source it names (None: offline, such pages are only listed)."""
    writes: list[FileWrite] = []
    written: list[Written] = []
    needs_model: list[str] = []
    by_model: list[str] = []
    names = notes.name_table(plan.wiki, plan.project_prefix)
    sources = {s.path: s for s in plan.sources}
    as_notes = []
    for page in plan.stale_pages():
        fed = plan.provenance.of_page(page)
        if plan.kind_of(page) == notes.KIND and len(fed) == 1 and fed[0].source in sources:
            as_notes.append((page, sources[fed[0].source]))
        else:
            (needs_model if chat is None else by_model).append(page)
    progress.restart("compiling", len(as_notes))
    for page, source in as_notes:
        repairs = Repairs()
        writes.append(FileWrite(page, notes.note(source, plan.wiki, page, names, repairs)))
        written.append(Written(page, [source.path], "replace", repairs))
        progress.step(page)
    if by_model and chat is not None:
        from .concepts import asker, page_concepts, write_pages

        more, more_written = write_pages(
            plan,
            asker(chat, progress),
            page_concepts(plan, by_model),
            concurrency=concurrency,
            progress=progress,
        )
        writes += more
        written += more_written
    return writes, written, needs_model


def compile_wiki(
    ws: ReviewProject,
    *,
    provider: str | None = None,
    publish: bool = False,
    concurrency: int = 4,
    on_progress: Callable[[Progress], None] | None = None,
    note: Callable[[str], None] | None = None,
    environ: Mapping[str, str] | None = None,
    stale: bool = False,
    dry_run: bool = False,
) -> CompileResult:
    """Compile what changed into one candidate (see the module docstring). ``environ``: the
    provider keys and settings (default: the workspace's)."""
    env = ws.environ if environ is None else environ
    git = ws.require_git("compiling sources")
    base = _compiled_base(git)
    name, _ = provider_name(provider, env, ws.settings.chat_provider)
    _note_loose_sources(ws, git, note)
    plan = make_plan(git, ws.wiki(base), base, ws.project_prefix, stale=stale)
    result = _planned(plan, base, name, stale=stale, dry_run=dry_run)
    if not plan.todo or dry_run:
        return result
    progress = Progress(len(plan.stale_pages()) if stale else len(plan.todo), on_progress)
    chat = None
    if name != OFFLINE:
        from .concepts import PROMPT

        chat = make_provider(name, env, None, ws.settings)
        result.model, result.prompt = f"{name}/{chat.model}", PROMPT
    writes = _write(plan, result, progress, chat, stale=stale, concurrency=concurrency)
    if not writes and stale:
        return result
    result.usage = progress.usage
    compiled, recorded = _recorded(plan, result)
    from .gate import gate_refusal

    result.gate = gate_refusal(ws, base, writes)
    if result.gate is not None:  # approval would refuse it: never staged
        return result
    _stage(ws, _Staging(plan, writes, compiled, recorded, stale), result, note)
    if result.candidate is not None and publish:
        try:
            result.approved = approve_candidate(ws, result.candidate.candidate_id, note)
        except ApprovalRefused as exc:
            result.refusal = exc.message
    return result


def _compiled_base(git: Git) -> str:
    """The commit a run compiles: HEAD of the current branch."""
    current_branch(git)  # a detached HEAD refuses before any work
    base = git.rev_parse("HEAD")
    if base is None:
        raise UsageError(
            "the branch has no commit yet",
            hint="commit the wiki (and `llmwiki ingest` sources) first",
        )
    return base


def _note_loose_sources(ws: ReviewProject, git: Git, note: Callable[[str], None] | None) -> None:
    """Say that uncommitted sources are not read (compile reads the committed ones)."""
    folder = sources_dir(ws.project_prefix)
    loose = len(git.status_paths(f":(top,literal){folder}"))
    if loose and note is not None:
        note(
            f"{loose} uncommitted change(s) in {folder}/ are not compiled: compile reads the committed sources "
            "(commit them, or use `llmwiki ingest`)"
        )


def _planned(plan: Plan, base: str, name: str, *, stale: bool, dry_run: bool) -> CompileResult:
    """The result as the plan alone tells it (all a dry run reports)."""
    return CompileResult(
        base,
        name,
        notes.MODEL,
        notes.PROMPT,
        compiled=[s.path for s in plan.todo],
        up_to_date=[s.path for s in plan.up_to_date],
        staged_elsewhere=dict(plan.staged),
        unreadable=plan.unreadable,
        stale=plan.stale,
        dry_run=dry_run,
        mode="stale" if stale else "changed",
        source_blobs={s.path: s.blob for s in plan.sources},
    )


def _write(
    plan: Plan,
    result: CompileResult,
    progress: Progress,
    chat: ChatProvider | None,
    *,
    stale: bool,
    concurrency: int,
) -> list[FileWrite]:
    """The run's pages (into ``result.pages``) and the files they are: rewritten stale
    pages, source notes offline, or the model's concept pages."""
    if stale:
        writes, result.pages, result.needs_model = stale_writes(plan, progress, chat, concurrency)
        rewritten = {path for page in result.pages for path in page.sources}
        result.compiled = [p for p in result.compiled if p in rewritten]
        return writes
    if chat is None:
        writes, result.pages = offline_writes(plan, progress)
        return writes
    from .concepts import model_writes

    try:
        writes, result.pages = model_writes(plan, chat, concurrency=concurrency, progress=progress)
    except KeyboardInterrupt as exc:
        closed = exc.closed if isinstance(exc, Interrupted) else 0
        said = f"closed {closed} model request(s) in flight; " if closed else ""
        raise Interrupted(said + spent_before_interrupt(progress.usage, result.model)) from exc
    return writes


def _recorded(plan: Plan, result: CompileResult) -> tuple[list[tuple[str, str]], Recorded]:
    """The (source, blob) pairs the run compiled, and what its trailers record: those and
    every other source its pages name, the model and the prompt."""
    compiled = [(s.path, s.blob) for s in plan.todo if s.path in result.compiled]
    named = {path for page in result.pages for path in page.sources}
    blobs = {s.path: s.blob for s in plan.sources}
    recorded = Recorded(
        tuple(sorted(set(compiled) | {(p, blobs[p]) for p in named if p in blobs})),
        result.model,
        result.prompt,
    )
    return compiled, recorded


@dataclass(frozen=True)
class _Staging:
    """What staging a run takes from the steps before it."""

    plan: Plan
    writes: list[FileWrite]
    compiled: list[tuple[str, str]]
    recorded: Recorded
    stale: bool


def _stage(
    ws: ReviewProject,
    run: _Staging,
    result: CompileResult,
    note: Callable[[str], None] | None,
) -> None:
    """Under the repository lock: the candidate (into ``result.candidate``) unless another
    run got to these sources meanwhile (``result.raced``)."""
    git = ws.require_git("compiling sources")
    base = run.plan.base
    site = Site.of(ws, "compiling sources")
    try:
        with locked(site):
            head = git.rev_parse("HEAD") or base
            at_head = run.plan.wiki if head == base else ws.wiki(head)
            result.raced = _raced(ws, git, run, result, at_head, head)
            if result.raced:  # compiled or staged meanwhile: stage nothing
                return
            result.candidate = stage_locked(
                ws,
                run.writes,
                kind=COMPILE_KIND,
                slug="compile",
                subject=_subject(result),
                body=_body(result),
                recorded=run.recorded,
                base=base,
                root_dir=run.plan.wiki.root_dir,
            )
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _raced(
    ws: ReviewProject, git: Git, run: _Staging, result: CompileResult, at_head: Wiki, head: str
) -> list[str]:
    """The sources another run rewrote or staged since the plan (none: stage)."""
    plan = run.plan
    if run.stale:
        targets = {p.target for p in result.pages}
        wanted = {(f.page, f.source) for f in plan.stale if f.page in targets}
        kept = {
            (f.page, f.source) for f in still_stale(git, plan, at_head, head, ws.project_prefix)
        }
        return sorted({source for _, source in wanted - kept})
    left = still_to_do(git, plan, at_head, head, ws.project_prefix, run.compiled)
    if len(left) != len(run.compiled):  # another compile got there first
        return sorted({p for p, _ in run.compiled} - set(left))
    return []


def spent_before_interrupt(usage: Usage, model: str) -> str:
    """What Ctrl-C during a model compile says: nothing was staged, and what the requests
    made so far cost (they are not repeated by a later run's cache: they are spent)."""
    return (
        f"nothing was staged; {model} had answered {usage.requests} request(s), "
        f"{usage.input_tokens} tokens in, {usage.output_tokens} out"
        f"{' (some estimated)' if usage.estimated else ''}; run `llmwiki compile` again to start over"
    )


def _subject(result: CompileResult) -> str:
    pages, sources = len(result.pages), len(result.compiled)
    return f"llmwiki: compile {pages} page{'s' if pages != 1 else ''} from {sources} source{'s' if sources != 1 else ''}"


#: The heading of the repair report in a run's commit message (``review show`` reads it).
REPAIRS_HEADING = "Repairs:"


def _body(result: CompileResult) -> str:
    lines = ["Sources:", *[f"- {p}" for p in result.compiled], "", "Pages:"]
    lines += [f"- {p.target} ({'new' if p.change == 'add' else 'rewritten'})" for p in result.pages]
    repaired = [p for p in result.pages if p.repairs]
    if repaired:
        lines += ["", REPAIRS_HEADING, *[f"- {p.target}: {p.repairs.line()}" for p in repaired]]
    return "\n".join(lines)

"""Compiling with a model: the concepts of each source, then one page per concept.

1. **Extract** (one request per source, ``--concurrency`` at once): the source's numbered
   lines in, ``{"concepts": [{"name", "summary", "aliases"}]}`` out.
2. **Write** (one request per concept, merged across sources by name): the numbered lines of
   every source that names the concept, the page as it is now when it exists (it is then
   updated in place, its other frontmatter kept), and the only valid link targets -- the
   existing pages (those the sources mention first) and this run's pages. Out:
   ``{"title", "summary", "body"}`` with ``^[name.md:L-L]`` citations.
3. **Repair, without a model**: a link that does not resolve is pointed at the one page whose
   name, title or alias it matches (singular or plural); with none or several it becomes
   plain text. A citation of a file or lines the run did not show is dropped.

Both JSON steps send their schema as structured output where the server takes it, and a
reply that does not validate is asked again once (``modelask.py``); a second one that is not
the JSON asked for raises :class:`MalformedOutput` naming the source: nothing is staged and
nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import MalformedOutput
from ..providers.base import ChatProvider
from ..publication.candidates import page_target_problem
from ..review.stagefiles import FileWrite
from ..wiki.frontmatter import parse
from ..wiki.model import Page, Wiki
from ..wiki.provenance import set_keys, source_paths, stamp
from ..wiki.scanner import scan_links
from ..wiki.slug import parse_target, slugify
from .modelask import EXTRACT_SCHEMA, PAGE_SCHEMA, Asker, parallel
from .notes import KIND as NOTE_KIND
from .notes import link_text, mentioned_pages, name_table
from .plan import Plan, Repairs, Written, page_path
from .progress import Progress
from .sources import Source

PROMPT = "concept-pages/1"  # the version of the prompts below, recorded as Llmwiki-Prompt
MAX_CONCEPTS = 8
SOURCE_CHARS = 60_000  # of one source's numbered lines in one request
PAGE_SOURCE_CHARS = 120_000  # of all sources' lines in one page request, shared fairly
MAX_TARGETS = 300  # link targets listed in one page request
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_CITE = re.compile(
    r"[ \t]?\^\[([^\[\]\n]+)\]"
)  # no "[" inside: linear on a run of "^[" (tests/wiki/test_linear_links.py)
_SPAN = re.compile(r"^\s*(?P<file>.+?)(?::|#L)(?P<start>\d+)(?:-L?(?P<end>\d+))?\s*$")

EXTRACT_SYSTEM = (
    "You read one source document for a wiki and list the concepts it explains: the ideas, things "
    "or methods a reader would look up on a page of their own.\n"
    f"List at most {MAX_CONCEPTS}, the most important first. Use only what the source says.\n"
    "Reply with JSON only, no prose and no code fence, in exactly this shape:\n"
    '{"concepts": [{"name": "<short noun phrase>", "summary": "<one sentence>", "aliases": ["<other names>"]}]}'
)

PAGE_SYSTEM = (
    "You write one page of a wiki about one concept, only from the source excerpts given (their lines "
    "are numbered).\n"
    "Cite every claim with ^[FILE:START-END], using a FILE name and line numbers exactly as shown.\n"
    "Link other wiki pages only as [[TARGET]] with a TARGET from the list of valid link targets; never "
    "link anything else and never invent a link.\n"
    "When the page exists already, you are given it: update it, keeping what the sources still support.\n"
    "Reply with JSON only, no prose and no code fence, in exactly this shape:\n"
    '{"title": "<the concept>", "summary": "<one sentence>", "body": "<markdown, without frontmatter>"}'
)


@dataclass
class Concept:
    name: str
    summary: str
    aliases: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    target: str = ""
    existing: Page | None = None
    dropped: frozenset[str] = frozenset()  # sources it must no longer name or cite (a retraction)


def numbered(source: Source, budget: int = SOURCE_CHARS) -> str:
    """The source's lines after its frontmatter, each as ``<number>: <text>``, cut to
    ``budget`` characters with a marker saying which lines were left out."""
    out, used = [], 0
    lines = source.lines
    for number in range(source.body_start, len(lines) + 1):
        line = f"{number}: {lines[number - 1]}"
        if used + len(line) > budget:
            out.append(f"[... lines {number}-{len(lines)} not shown ...]")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


def parse_reply(text: str, what: str, provider: str) -> dict[str, Any]:
    """The JSON object of a reply (a code fence or prose around it is tolerated);
    MalformedOutput naming ``what`` otherwise."""
    stripped = text.strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise MalformedOutput(
            provider,
            f"malformed model output for {what}: no JSON object in the reply "
            f"({stripped[:120]!r}); nothing was staged",
        )
    try:
        data = json.loads(stripped[start : end + 1])
    except ValueError as exc:
        raise MalformedOutput(
            provider, f"malformed model output for {what}: {exc}; nothing was staged"
        ) from None
    if not isinstance(data, dict):
        raise MalformedOutput(
            provider, f"malformed model output for {what}: not a JSON object; nothing was staged"
        )
    return data


def _text(value: Any, what: str, key: str, provider: str, *, required: bool = True) -> str:
    if isinstance(value, str) and (value.strip() or not required):
        return _CONTROL.sub("", value).strip()
    raise MalformedOutput(
        provider,
        f"malformed model output for {what}: {key!r} must be a non-empty string; "
        "nothing was staged",
    )


_Asker = Asker  # compile's counted, bounded, validated model requests (modelask.py)


def extract(ask: _Asker, source: Source) -> list[Concept]:
    what = f"{source.path} (concept extraction)"
    data = ask.json(
        EXTRACT_SYSTEM,
        f"Source file: {source.name}\nTitle: {source.title}\n\n{numbered(source)}",
        step="extract",
        schema=EXTRACT_SCHEMA,
        what=what,
    )
    items = data.get("concepts")
    if not isinstance(items, list):
        raise MalformedOutput(
            ask.chat.name,
            f"malformed model output for {what}: 'concepts' must be a list; nothing was staged",
        )
    found = []
    for item in items[:MAX_CONCEPTS]:
        if not isinstance(item, dict):
            raise MalformedOutput(
                ask.chat.name,
                f"malformed model output for {what}: a concept is not an object; "
                "nothing was staged",
            )
        name = _text(item.get("name"), what, "name", ask.chat.name)
        summary = _text(item.get("summary", ""), what, "summary", ask.chat.name, required=False)
        aliases = [a.strip() for a in item.get("aliases") or [] if isinstance(a, str) and a.strip()]
        if slugify(name):
            found.append(Concept(name, summary, aliases, [source]))
    return found


def merge(per_source: Sequence[list[Concept]]) -> list[Concept]:
    """Concepts of all sources, one per slug of their name (first name and summary kept)."""
    merged: dict[str, Concept] = {}
    for concepts in per_source:
        for concept in concepts:
            key = slugify(concept.name)
            if key not in merged:
                merged[key] = Concept(
                    concept.name, concept.summary, list(concept.aliases), list(concept.sources)
                )
                continue
            kept = merged[key]
            kept.aliases += [a for a in concept.aliases if a not in kept.aliases]
            kept.sources += [s for s in concept.sources if s not in kept.sources]
    return list(merged.values())


def _page_request(concept: Concept, existing_text: str | None, targets: list[str]) -> str:
    share = PAGE_SOURCE_CHARS // max(1, len(concept.sources))
    parts = [f"Concept: {concept.name}"]
    if concept.summary:
        parts.append(f"In short: {concept.summary}")
    if concept.aliases:
        parts.append(f"Also called: {', '.join(concept.aliases)}")
    parts += [
        "",
        "Valid link targets (write [[TARGET]] exactly as listed):",
        *(f"- {t}" for t in targets),
    ]
    if existing_text is not None:
        parts += ["", "The page as it is now:", existing_text]
    for source in concept.sources:
        parts += [
            "",
            f"--- Source file: {source.name} (cite as ^[{source.name}:START-END]) ---",
            numbered(source, share),
        ]
    return "\n".join(parts)


def repair_citations(
    body: str, sources: dict[str, Source], dropped: list[str] | None = None
) -> str:
    """Citation markers kept only for files and lines the run showed (``sources/`` prefixes
    and ``#L12-L14`` forms normalized); a marker left with nothing is removed. Each part
    dropped is added to ``dropped`` (the run's repair report)."""

    def fix(match: re.Match[str]) -> str:
        kept = []
        for part in re.split(r"[;,]", match.group(1)):
            span = _SPAN.match(part)
            if span is None:
                if part.strip() and dropped is not None:
                    dropped.append(part.strip())
                continue
            name = span.group("file").strip().removeprefix("sources/")
            source = sources.get(name)
            start = int(span.group("start"))
            end = int(span.group("end") or start)
            if source is not None and 1 <= start <= end <= len(source.lines):
                kept.append(f"{name}:{start}-{end}")
            elif dropped is not None:
                dropped.append(part.strip())
        return f" ^[{', '.join(kept)}]" if kept else ""

    return _CITE.sub(fix, body)


def name_index(wiki: Wiki) -> dict[str, set[str]]:
    """Slug of every page's file name, title and aliases -> the pages answering to it."""
    by_name: dict[str, set[str]] = {}
    for page in wiki.pages:
        for name in (page.stem, page.scan.title, *page.scan.aliases):
            if name:
                by_name.setdefault(slugify(name), set()).add(page.path)
    return by_name


def repair_links(
    body: str,
    wiki: Wiki,
    by_name: dict[str, set[str]] | None = None,
    unlinked: list[str] | None = None,
) -> str:
    """Links that resolve in ``wiki`` (the wiki with this run's pages) are kept; one that
    names exactly one page by its file name, title or an alias -- singular or plural -- is
    pointed at it; any other becomes its plain text (its target added to ``unlinked``, the
    run's repair report). No model call. ``by_name`` is :func:`name_index` of ``wiki`` (made
    here when not given)."""
    by_name = name_index(wiki) if by_name is None else by_name
    lines = body.split("\n")
    for occ in sorted(scan_links(body), key=lambda o: (o.line, o.col), reverse=True):
        if occ.embed:
            continue
        target = parse_target(occ.target)
        if wiki.resolve(target).page is not None:
            continue
        slug = target.slug
        variants = {
            slug,
            f"{slug}s",
            f"{slug}es",
            slug[:-1] if slug.endswith("s") else slug,
            slug[:-2] if slug.endswith("es") else slug,
        }
        matches = set().union(*(by_name.get(v, set()) for v in variants if v))
        replacement = occ.label or occ.target.strip()
        if len(matches) == 1:
            page = wiki.by_path[matches.pop()]
            link = link_text(wiki, page)
            if link is not None:
                label = occ.label or occ.target.strip()
                replacement = (
                    f"[[{link}]]" if slugify(label) == slugify(link) else f"[[{link}|{label}]]"
                )
        if not replacement.startswith("[[") and unlinked is not None:
            unlinked.append(occ.target.strip())
        row = lines[occ.line - 1]
        start = occ.col - 1
        lines[occ.line - 1] = row[:start] + replacement + row[start + len(occ.source_text) :]
    return "\n".join(lines)


def _existing_page(plan: Plan, concept: Concept) -> Page | None:
    """The page a concept updates: the one its name resolves to, unless that is a saved
    answer, an offline source note, or no page a candidate may write (the table of contents
    or journal at the wiki root)."""
    page = plan.wiki.resolve(parse_target(concept.name)).page
    if page is None or page.kind == "query" or plan.kind_of(page.path) == NOTE_KIND:
        return None
    return page if page_target_problem(page.path, plan.wiki.root_dir) is None else None


def _targets(
    concepts: list[Concept],
    concept: Concept,
    link_of: dict[str, str],
    mentions: dict[str, list[str]],
    rest: list[tuple[str, str]],
) -> list[str]:
    """The valid link targets of one page request: this run's other pages, the pages its
    sources mention, then the rest of the wiki by id, at most :data:`MAX_TARGETS`."""
    found: dict[str, None] = {}
    for other in concepts:
        if other is not concept:
            found[link_of[other.target]] = None
    for source in concept.sources:
        for link in mentions.get(source.path, ()):
            found[link] = None
    for path, link in rest:
        if len(found) >= MAX_TARGETS:
            break
        if path != concept.target:
            found[link] = None
    return list(found)[:MAX_TARGETS]


def model_writes(
    plan: Plan, chat: ChatProvider, *, concurrency: int, progress: Progress
) -> tuple[list[FileWrite], list[Written]]:
    """The run's pages, written by ``chat`` (see the module docstring)."""
    ask = _Asker(chat, progress)
    plan.wiki.build_tables()  # resolved from several threads below: built once, first
    progress.restart("extracting concepts", len(plan.todo))

    def extract_one(source: Source) -> list[Concept]:
        found = extract(ask, source)
        progress.step(source.path)
        return found

    concepts = merge(parallel(extract_one, plan.todo, concurrency, progress))
    taken: set[str] = set()
    for concept in concepts:
        concept.existing = _existing_page(plan, concept)
        concept.target = (
            concept.existing.path
            if concept.existing is not None
            else page_path(plan.wiki, slugify(concept.name)[:80], taken)
        )
    concepts = list(
        {c.target: c for c in concepts}.values()
    )  # two names for one page: the last wins
    return write_pages(plan, ask, concepts, concurrency=concurrency, progress=progress)


def page_concepts(
    plan: Plan, pages: Sequence[str], drop: frozenset[str] = frozenset()
) -> list[Concept]:
    """One concept per existing page to rewrite (``compile --stale``, a retraction): its
    title, summary and aliases, and every source it names as it is now, less ``drop``."""
    by_path = {s.path: s for s in plan.sources}
    found = []
    for path in pages:
        page = plan.wiki.by_path[path]
        meta = parse(plan.texts.get(path, "")).data
        summary = meta.get("summary")
        sources = [
            by_path[f.source]
            for f in plan.provenance.of_page(path)
            if f.source in by_path and f.source not in drop
        ]
        found.append(
            Concept(
                page.scan.title or page.stem,
                summary if isinstance(summary, str) else "",
                list(page.scan.aliases),
                sources,
                path,
                page,
                drop,
            )
        )
    return found


def asker(chat: ChatProvider, progress: Progress) -> _Asker:
    return _Asker(chat, progress)


def write_pages(
    plan: Plan,
    ask: _Asker,
    concepts: list[Concept],
    *,
    concurrency: int,
    progress: Progress,
    instruction: str = "",
) -> tuple[list[FileWrite], list[Written]]:
    """One page per concept, written by the model (step 2 and 3 of the module docstring);
    ``instruction`` is said in every page request (a retraction says what to remove)."""
    plan.wiki.build_tables()
    after = _with_new_pages(plan.wiki, concepts)
    table = name_table(plan.wiki, plan.project_prefix)  # once: each is read by several requests
    used = {s.path: s for c in concepts for s in c.sources}
    run = _PageRun(
        plan,
        ask,
        concepts,
        instruction,
        progress,
        after,
        name_index(after),
        {c.target: link_text(after, after.by_path[c.target]) or c.target for c in concepts},
        {
            path: [link for link, _ in mentioned_pages(s, plan.wiki, names=table)]
            for path, s in used.items()
        },
        _other_targets(plan.wiki),
        {s.name: s for s in plan.sources},
    )
    progress.restart("writing pages", len(concepts))
    done = parallel(lambda concept: _write_page(run, concept), concepts, concurrency, progress)
    return [w for w, _ in done], [p for _, p in done]


def _with_new_pages(wiki: Wiki, concepts: list[Concept]) -> Wiki:
    """``wiki`` with a stub of each new concept page, so links resolve to the run's pages
    (by name and alias) too."""
    after = wiki
    for concept in concepts:
        if concept.existing is None:
            head = yaml.safe_dump(
                {"title": concept.name, "aliases": concept.aliases or None}, sort_keys=False
            )
            after = after.with_page(concept.target, f"---\n{head}---\n")
    after.build_tables()
    return after


def _other_targets(wiki: Wiki) -> list[tuple[str, str]]:
    """(path, link) of the wiki's pages a run may link to, in order, a few past
    :data:`MAX_TARGETS`."""
    rest: list[tuple[str, str]] = []
    for page in wiki.pages:
        if len(rest) > MAX_TARGETS:
            break
        text = link_text(wiki, page)
        if text is not None and page_target_problem(page.path, wiki.root_dir) is None:
            rest.append((page.path, text))
    return rest


@dataclass(frozen=True)
class _PageRun:
    """What every page request of one run shares."""

    plan: Plan
    ask: _Asker
    concepts: list[Concept]
    instruction: str
    progress: Progress
    after: Wiki  # the wiki with the run's new pages: links are repaired against it
    names: dict[str, set[str]]  # name_index(after)
    link_of: dict[str, str]  # each run page's link text
    mentions: dict[str, list[str]]  # source path -> the links of the pages it mentions
    rest: list[tuple[str, str]]  # _other_targets
    by_file: dict[str, Source]  # citation name -> source


def _write_page(run: _PageRun, concept: Concept) -> tuple[FileWrite, Written]:
    """One concept's page, asked of the model, its citations and links repaired."""
    plan, chat = run.plan, run.ask.chat
    existing_text = plan.texts.get(concept.target) if concept.existing is not None else None
    what = f"the page on {concept.name!r} from {', '.join(s.path for s in concept.sources)}"
    request = _page_request(
        concept,
        existing_text,
        _targets(run.concepts, concept, run.link_of, run.mentions, run.rest),
    )
    reply = run.ask.json(
        PAGE_SYSTEM,
        f"{run.instruction}\n\n{request}" if run.instruction else request,
        step="page",
        schema=PAGE_SCHEMA,
        what=what,
    )
    title = _text(reply.get("title", concept.name), what, "title", chat.name)
    summary = _text(reply.get("summary", ""), what, "summary", chat.name, required=False)
    body = _text(reply.get("body"), what, "body", chat.name)
    if body.startswith("---"):
        body = body[parse(body).body_offset :].lstrip("\n") or body
    shown = {name: s for name, s in run.by_file.items() if s.path not in concept.dropped}
    repairs = Repairs()
    body = repair_links(
        repair_citations(body, shown, repairs.citations_dropped),
        run.after,
        run.names,
        repairs.links_unlinked,
    )
    repairs.uncited = "^[" not in body
    document = _document(plan, concept, existing_text, title, summary, body)
    run.progress.step(concept.target)
    change = "replace" if concept.existing is not None else "add"
    return FileWrite(concept.target, document), Written(
        concept.target, [s.path for s in concept.sources], change, repairs
    )


def _document(
    plan: Plan, concept: Concept, existing_text: str | None, title: str, summary: str, body: str
) -> str:
    """The page: the existing one's frontmatter kept (summary updated) or a new one, the new
    body, and the provenance of every source it names now."""
    blobs = {s.path: s.blob for s in plan.sources}
    named = []
    if existing_text is not None:
        meta = parse(existing_text)
        named = [
            p
            for p in source_paths(meta.data.get("sources"), plan.project_prefix)
            if p in blobs and p not in concept.dropped
        ]
        head = set_keys(existing_text, {"summary": summary} if summary else {})
        text = head[: parse(head).body_offset].rstrip("\n") + "\n\n" + body.strip() + "\n"
    else:
        meta_new: dict[str, Any] = {"title": title, "summary": summary or title, "kind": "concept"}
        if concept.aliases:
            meta_new["aliases"] = concept.aliases
        head_text = yaml.safe_dump(
            meta_new, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=False
        )
        text = f"---\n{head_text}---\n\n{body.strip()}\n"
    pairs = [(p, blobs[p]) for p in named] + [(s.path, s.blob) for s in concept.sources]
    return stamp(text, pairs, plan.project_prefix)

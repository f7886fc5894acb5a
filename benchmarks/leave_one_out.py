#!/usr/bin/env python3
"""Leave-one-wiki-out evaluation of the ranking: every choice made on three wikis, measured on the fourth.

    python benchmarks/leave_one_out.py [--work DIR] [--cache DIR] [--baseline REV] [--ablations]
    python benchmarks/retrieval.py --leave-one-out -- [the same options]
    python benchmarks/leave_one_out.py --embedder openai|ollama [--test-server]
    python benchmarks/leave_one_out.py --shipped-only

The four wikis of ``../shared/corpora`` (Foam, Dendron, Hugo's docs, Logseq's docs) and the
questions of ``benchmarks/data/questions.jsonl``. Prints, as markdown:

1. per held-out wiki, before (the shipped ranking of ``--baseline``, run as a child process
   with that revision's package) and after (this tree's reading rules, the ranking config
   chosen on the other three: ``loo_lab.py``), hybrid and lexical only, with the targets;
   the config chosen on all four and whether this tree ships it; two checks (the lab re-makes
   the baseline's own ranking, and this tree's ``search.search``, question by question);
2. every page aggregation measured on all four; how often each wiki's longest page is in the
   first five;
3. with ``--ablations``: each change taken back (each cleaning step left out, each
   alternative tried) and the leave-one-out redone, per held-out wiki, and the same with the
   config fixed.

``--embedder openai|ollama`` instead measures the shipped ranking through that HTTP embedder
(with ``--test-server``: a local server serving the default model's vectors in that wire
format, which must rank exactly as the local model). Vectors are cached in ``--cache``
(outside the repository), keyed by the embedded text; the lab's arrays in ``--work``, keyed
by a digest of the code that reads pages. Always exits 0: a measurement, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import retrieval as B  # noqa: E402 - benchmarks/retrieval.py: corpus copies, questions, environment
from vector_cache import CachedEmbedder  # noqa: E402

CORPUS_NAMES = ("foam-docs", "dendron-vault", "hugo-docs", "logseq-docs")
SHORT = {
    "foam-docs": "foam",
    "dendron-vault": "dendron",
    "hugo-docs": "hugo",
    "logseq-docs": "logseq",
}
DEFAULT_CACHE = Path.home() / ".cache" / "llmwiki-bench-vectors"
DEFAULT_WORK = Path("/tmp/llmwiki-loo-bench")
#: "Before": the last commit before issue 25's work.
BASELINE = "c97a644"
#: Issue 25's targets on held-out wikis: (hit@5, MRR@10 or None).
TARGETS = {"hybrid": (0.92, 0.80), "fast": (0.85, None)}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def local_embedder(cache: Path) -> CachedEmbedder:
    from llmwiki_git.retrieval.embedders import make_embedder

    inner = make_embedder("local", {}, None)
    assert inner is not None
    return CachedEmbedder(inner, cache, log)


def index_copy(folder: Path, embedder: Any) -> dict[str, Any]:
    """Index ``folder`` in this process with the imported llmwiki_git (``embedder`` None: the
    fast option), embedding through the cache. The library's own indexer writes the store."""
    from llmwiki_git.retrieval import indexer
    from llmwiki_git.workspace import Workspace

    retrieval = Workspace.open(folder, environ=B.clean_env()).retrieval()
    wiki = retrieval._load_wiki()
    started = time.perf_counter()
    pages, skipped = indexer.read_pages(wiki)
    # full: never reuse the store's own vectors (keyed by chunk identity, which a change of the
    # embedding input within one EMBEDDING_INPUT_VERSION does not move); the cache, keyed by
    # the embedded text itself, makes that cheap.
    summary = indexer.build(
        retrieval.state,
        pages,
        embedder,
        full=True,
        skipped=skipped,
        names=indexer.names_digest(wiki),
    )
    return {
        "pages": summary.pages,
        "chunks": summary.chunks,
        "seconds": round(time.perf_counter() - started, 1),
    }


def shipped_tops(
    work: Path, cache: Path, corpora: Sequence[str], remote: dict[str, str] | None = None
) -> dict[str, Any]:
    """Per corpus and question: the first ten pages of the shipped ranking of the imported
    llmwiki_git, in the default mode (dense store, local model) and with the fast option.
    ``remote``: the environment of an HTTP embedder (``LLMWIKI_EMBEDDING_PROVIDER=openai`` or
    ``ollama`` and its settings): the dense store is then built and queried through it, by
    the library's own provider code, every text over HTTP."""
    from llmwiki_git.retrieval import search as search_mod
    from llmwiki_git.retrieval.embedders import make_embedder
    from llmwiki_git.workspace import Workspace

    questions = [q for q in B.load_questions() if q.corpus in corpora]
    if remote is None:
        embedder: Any = local_embedder(cache)
        embedder.embed(
            [q.question for q in questions]
        )  # one batch (and one cache shard) for all questions
        dense_env = B.clean_env(LLMWIKI_EMBEDDING_PROVIDER="local")
    else:
        dense_env = B.clean_env(**remote)
        embedder = make_embedder(remote["LLMWIKI_EMBEDDING_PROVIDER"], dense_env, None)
    out: dict[str, Any] = {"hybrid": {}, "fast": {}, "index": {}}
    for corpus in corpora:
        for kind in ("hybrid", "fast"):
            folder = work / kind / corpus
            B.sync_tree(B.CORPORA / corpus, folder)
            log(f"indexing {corpus} ({kind})")
            out["index"][f"{corpus}/{kind}"] = index_copy(
                folder, embedder if kind == "hybrid" else None
            )
            env = dense_env if kind == "hybrid" else B.clean_env()
            retrieval = Workspace.open(folder, environ=env).retrieval()
            loaded = retrieval.load()
            if loaded.warnings:
                log(f"{corpus} ({kind}): {loaded.warnings}")
            query_embedder = (
                (embedder if remote is None else loaded.embedder)
                if loaded.embedder is not None
                else None
            )
            paths = {p.page_id: p.path for p in loaded.store.pages}
            for q in questions:
                if q.corpus != corpus:
                    continue
                result = search_mod.search(
                    q.question,
                    loaded.store,
                    loaded.lexical,
                    query_embedder,
                    mode="rrf",
                    keep=50,
                    max_pages=10,
                )
                out[kind][q.id] = [paths.get(pid, pid) for pid, _ in result.pages]
    return out


@contextlib.contextmanager
def embedding_test_server(provider: str, cache: Path) -> Iterator[dict[str, str]]:
    """A local server on 127.0.0.1 speaking ``provider``'s embeddings wire format (OpenAI's
    ``/v1/embeddings`` or Ollama's ``/api/embed``; ``tests/servers.py``), answering with the
    default local model's vectors (through the cache). The library's HTTP embedder pointed at
    it must rank exactly as the local model does: batching, order, normalisation and the
    store's fingerprint on that path are what it checks. Yields the environment that
    configures the provider."""
    import threading

    if str(B.REPO) not in sys.path:
        sys.path.insert(0, str(B.REPO))
    from tests.servers import json_response, serve

    model = local_embedder(cache)
    lock = threading.Lock()

    def handler(
        path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with lock:  # one model call at a time; the client sends batches in order anyway
            vectors = model.embed(texts).tolist()
        if path.endswith("/embeddings"):
            return json_response(
                {
                    "object": "list",
                    "model": body.get("model"),
                    "data": [
                        {"object": "embedding", "index": i, "embedding": v}
                        for i, v in enumerate(vectors)
                    ],
                }
            )
        return json_response({"model": body.get("model"), "embeddings": vectors})

    with serve(handler, keep_alive=True) as (url, recorder):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": provider,
            "LLMWIKI_EMBEDDING_MODEL": "minilm-over-http",
        }
        env.update(
            {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "test"}
            if provider == "openai"
            else {"OLLAMA_HOST": url}
        )
        yield env
        texts = sum(
            len(b["input"]) if isinstance(b["input"], list) else 1 for _, b, _ in recorder.requests
        )
        log(
            f"test server: {len(recorder.requests)} requests, {texts} texts, "
            f"{len(set(recorder.client_ports))} connections"
        )


def run_remote(
    work: Path, cache: Path, corpora: Sequence[str], provider: str, test_server: bool
) -> None:
    """The shipped ranking through an HTTP embedder: the configured one (the environment's
    ``OPENAI_BASE_URL``/``OLLAMA_HOST`` and model), or a local test server serving the
    default model's vectors, beside the local model's own numbers (which it must equal)."""
    print("\n".join(B.machine_info()) + "\n")
    if test_server:
        with embedding_test_server(provider, cache) as env:
            remote = shipped_tops(work / f"remote-{provider}", cache, corpora, env)
        label = (
            f"`{provider}` provider -> local test server (the default model's vectors over HTTP)"
        )
    else:
        keys = (
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "OLLAMA_HOST",
            "OLLAMA_API_KEY",
            "LLMWIKI_EMBEDDING_MODEL",
        )
        env = {k: os.environ[k] for k in keys if k in os.environ}
        env["LLMWIKI_EMBEDDING_PROVIDER"] = provider
        remote = shipped_tops(work / f"remote-{provider}", cache, corpora, env)
        label = f"`{provider}` provider ({env.get('LLMWIKI_EMBEDDING_MODEL', 'its default model')})"
    local = shipped_tops(work / "tree", cache, corpora)
    print_shipped(label, remote, corpora)
    print_shipped("the default local model, in process", local, corpora)
    if test_server:
        same = remote["hybrid"] == local["hybrid"]
        print(
            f"- every question's first ten pages through HTTP {'equal' if same else '**differ from**'} the local "
            "model's"
            + (
                ""
                if same
                else f": {sum(remote['hybrid'][k] != v for k, v in local['hybrid'].items())} differ"
            )
        )
    print(f"- load average at end: {B.loadavg()}")


def baseline_tops(
    work: Path, cache: Path, rev: str, corpora: Sequence[str]
) -> dict[str, Any] | None:
    """:func:`shipped_tops` with the llmwiki_git of revision ``rev``, in a child process."""
    src = B.archive_source(rev, work / "src")
    if src is None:
        return None
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--shipped-json",
            "--work",
            str(work),
            "--cache",
            str(cache),
            "--corpora",
            ",".join(corpora),
        ],
        env=B.clean_env(PYTHONPATH=f"{src}"),
        cwd=HERE,
        capture_output=True,
        text=True,
    )
    sys.stderr.write(proc.stderr[-4000:])
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log(f"baseline {rev} failed (rc={proc.returncode})")
        return None


def hit_mrr(tops: dict[str, list[str]], questions: Sequence[Any]) -> tuple[float, float, int]:
    hits = mrr = 0.0
    n = 0
    for q in questions:
        if q.id not in tops:
            continue
        n += 1
        rank = B.first_rank(tops[q.id], q.answers)
        hits += 1.0 if rank is not None and rank <= 5 else 0.0
        mrr += 1.0 / rank if rank is not None else 0.0
    return (hits / n, mrr / n, n) if n else (float("nan"), float("nan"), 0)


def print_shipped(label: str, tops: dict[str, Any], corpora: Sequence[str]) -> None:
    questions = B.load_questions()
    print(f"| {label} | " + " | ".join(f"{SHORT[c]} hit@5 / MRR@10" for c in corpora) + " |")
    print("|---|" + "---|" * len(corpora))
    for kind in ("hybrid", "fast"):
        cells = []
        for c in corpora:
            h, m, n = hit_mrr(tops[kind], [q for q in questions if q.corpus == c])
            cells.append(f"{h:.3f} / {m:.3f} (n={n})")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print()


# ---------------------------------------------------------------------------- index variants
#
# "Before" reading rules, as c97a644 had them (benchmark copies, so that each change of this
# work can be taken back one at a time in this tree).


def old_page_title(data: Any, body: str, stem: str) -> str:
    """c97a644: the frontmatter title, else the first ``# `` line anywhere, else the stem."""
    title = data.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return stem


def old_link_label(match: Any) -> str:
    """c97a644: ``[[target|label]]`` -> label, else the target's name; an embed the same."""
    label = match.group(2)
    if label and label.strip():
        return label.strip()
    target = match.group(1).split("#", 1)[0].strip() or match.group(1).lstrip("#^").strip()
    return target.rsplit("/", 1)[-1]


def old_markdown_link(match: Any) -> str:
    return str(match.group(1))


def old_page_description(data: Any, body: str) -> str:
    """c97a644: the frontmatter descriptions only (no Logseq ``description::``)."""
    return "\n".join(
        v.strip()
        for k in ("summary", "description", "desc")
        if isinstance(v := data.get(k), str) and v.strip()
    )


def body_chunks_only(title: str, about: str, body: str) -> list[Any]:
    """Before round 2 of issue 25: a page's chunks are its body's only (a page without body
    text has none, so it can never rank)."""
    from llmwiki_git.retrieval.chunking import split_into_chunks

    return split_into_chunks(body)


def embedding_without_about(title: str, readable: str, about: str = "") -> str:
    """c97a644's embedding input: the title and the chunk, no description."""
    return f"{title}\n\n{readable}" if readable else title


_TAG_NAME = __import__("re").compile(r"</?([A-Za-z][\w-]*)[^<>\n]*>")
_URL_HOST = __import__("re").compile(r"(?:[a-z]+://)?(?:www\.)?([^/\s?#:]+)", __import__("re").I)


def tag_name(match: Any) -> str:
    """An HTML tag as its element's name (``<img src=x>`` -> ``img``); a closing tag says nothing."""
    name = _TAG_NAME.match(match.group(0))
    return "" if name is None or match.group(0).startswith("</") else f" {name.group(1)} "


def url_host(match: Any) -> str:
    """A URL as its host (``https://www.youtube.com/watch?v=x`` -> ``youtube.com``)."""
    host = _URL_HOST.match(match.group(0))
    return f" {host.group(1)} " if host else " "


BULLET = __import__("re").compile(r"^[ \t]*[-*+][ \t]+(?:\[[ xX]\][ \t]+)?", __import__("re").M)
BULLET_NEEDLES = ("- ", "* ", "+ ", "-\t", "*\t", "+\t")
NEW_STEPS = ("org block", "hidden property", "property", "macro", "block reference")
PREVIOUS_STEPS = (
    "comment",
    "reference definition",
    "fence",
    "wikilink",
    "markdown link",
    "url",
    "html tag",
    "table rule",
    "line markup",
    "inline markup",
    "block id",
    "spaces",
)
INDEXER = "llmwiki_git.retrieval.indexer"


def variants() -> dict[str, Any]:
    """name -> loo_lab.Variant: this tree ("after"), the reading rules before this work, and
    this tree with one change taken back (or one cleaning step of the previous round left
    out)."""
    from loo_lab import Variant

    no_properties = (
        (INDEXER, "page_properties", lambda body: {}),
        (INDEXER, "page_description", old_page_description),
    )
    old_titles = (INDEXER, "page_title", old_page_title)
    no_about = (INDEXER, "embedding_input", embedding_without_about)
    old_links = (("wikilink", old_link_label), ("markdown link", old_markdown_link))
    no_card = (INDEXER, "page_chunks", body_chunks_only)
    out = {
        "after": Variant("after"),
        "before": Variant(
            "before", (old_titles, *no_properties, no_about, no_card), NEW_STEPS, old_links
        ),
        "-card": Variant("-card", (no_card,)),
        "-titles": Variant("-titles", (old_titles,)),
        "-description": Variant("-description", (no_about,)),
        "+description everywhere": Variant("+description everywhere", about="all"),
        "-embed words": Variant("-embed words", steps_replaced=old_links),
        "-logseq fields": Variant("-logseq fields", no_properties),
        "html tag as its name": Variant(
            "html tag as its name", steps_replaced=(("html tag", tag_name),)
        ),
        "url as its host": Variant("url as its host", steps_replaced=(("url", url_host),)),
        "+bullet": Variant(
            "+bullet", steps_added=(("bullet", "line markup", (BULLET_NEEDLES, BULLET, "")),)
        ),
    }
    for step in NEW_STEPS:
        out[f"-{step}"] = Variant(f"-{step}", steps_without=(step,))
    for step in PREVIOUS_STEPS:
        out[f"-{step}"] = Variant(f"-{step}", steps_without=(step,))
    return out


FEATURES = {
    "-card": "a page without body text is one card chunk (its description, else its title)",
    "-titles": "titles by convention (frontmatter, Logseq `title::`, opening heading, file name)",
    "-description": "the page's description embedded with its first chunk",
    "+description everywhere": "(alternative) the description embedded with every chunk",
    "-embed words": "embeds and images named as such (`![[x]]` -> `embed x`, `![a](p)` -> `image a`)",
    "html tag as its name": "(alternative) an HTML tag kept as its element's name (`<img ...>` -> `img`)",
    "+bullet": "(alternative) list bullets removed (`- item` -> `item`)",
    "url as its host": "(alternative) a URL kept as its host (`https://www.youtube.com/...` -> `youtube.com`)",
    "-logseq fields": "Logseq page properties as fields (`description::`, `alias::`)",
    **{f"-{s}": f"cleaning step: {s} (new)" for s in NEW_STEPS},
    **{f"-{s}": f"cleaning step: {s} (previous round)" for s in PREVIOUS_STEPS},
}


# ---------------------------------------------------------------------------- the run


def code_digest() -> str:
    """What the lab's arrays depend on: the source of what reads, cleans, chunks, tokenizes
    and embeds pages, the questions, the lab and its variants (arrays are kept under this
    digest in the work folder and reused while it holds; the corpora are read-only)."""
    digest = hashlib.sha256()
    package = B.REPO / "llmwiki_git"
    read = [
        package / "retrieval" / f"{name}.py"
        for name in ("chunking", "indexer", "lexical", "embedding_onnx")
    ]
    for path in (
        sorted(read)
        + sorted((package / "wiki").glob("*.py"))
        + [B.QUESTIONS, HERE / "loo_lab.py", Path(__file__).resolve()]
    ):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_all_arrays(
    work: Path, cache: Path, corpora: Sequence[str], names: Sequence[str]
) -> dict[tuple[str, str], Any]:
    import loo_lab

    questions = [q for q in B.load_questions() if q.corpus in corpora]
    embedder = local_embedder(cache)
    qtexts = sorted({q.question for q in questions})
    qvectors = dict(zip(qtexts, embedder.embed(qtexts)))
    table = variants()
    arrays = {}
    saved = work / "lab-arrays" / code_digest()
    saved.mkdir(parents=True, exist_ok=True)
    for corpus in corpora:
        folder = work / "lab" / corpus
        B.sync_tree(B.CORPORA / corpus, folder)
        for name in names:
            started = time.perf_counter()
            path = saved / f"{corpus}--{name.replace(' ', '_').replace('/', '_')}.pkl"
            if path.is_file():
                with open(path, "rb") as handle:
                    arrays[(corpus, name)] = pickle.load(handle)
                continue
            a = loo_lab.corpus_arrays(folder, corpus, table[name], questions, embedder, qvectors)
            arrays[(corpus, name)] = a
            with open(path.with_suffix(".tmp"), "wb") as handle:
                pickle.dump(a, handle)
            os.replace(path.with_suffix(".tmp"), path)
            log(
                f"{corpus} / {name}: {len(a.paths)} pages, {int(a.nchunks.sum())} chunks, "
                f"{a.embedded} embedded, {time.perf_counter() - started:.1f} s"
            )
    return arrays


def library_configs() -> tuple[Any, Any]:
    """This tree's shipped ranking (retrieval/search.py constants) as lab configs."""
    import loo_lab as L

    from llmwiki_git.retrieval import search as S

    def agg(a: Any) -> Any:
        return L.Aggregation(a.kind, a.param)

    return (
        L.Config(
            agg(S.DENSE_AGGREGATION),
            agg(S.LEXICAL_AGGREGATION),
            float(S.RRF_K),
            float(S.LEXICAL_WEIGHT),
        ),
        L.Config(lexical=agg(S.LEXICAL_ONLY_AGGREGATION)),
    )


def run_leave_one_out(
    work: Path, cache: Path, corpora: Sequence[str], baseline: str | None, ablations: bool
) -> None:
    import loo_lab as L

    print("\n".join(B.machine_info()) + "\n")
    questions = B.load_questions()
    counts = {c: sum(1 for q in questions if q.corpus == c) for c in corpora}
    qs_by = {c: [q for q in questions if q.corpus == c] for c in corpora}
    print(
        "Questions: "
        + ", ".join(f"{SHORT[c]} {counts[c]}" for c in corpora)
        + f" (`{B.QUESTIONS.relative_to(B.REPO)}`). Page-level hit@5 (an answer among the first five pages) "
        "and MRR@10.\n"
    )
    before = (
        baseline_tops(work / f"baseline-{baseline}", cache, baseline, corpora) if baseline else None
    )
    names = ["after", "before"] + ([n for n in FEATURES] if ablations else [])
    arrays = build_all_arrays(work, cache, corpora, names)
    modes = {"hybrid": L.grid(True), "lexical": L.grid(False)}
    results = {mode: L.evaluate_all(arrays, configs, mode) for mode, configs in modes.items()}
    folds = {
        mode: L.leave_one_out(results[mode], corpora, ["after"], modes[mode]) for mode in modes
    }
    shipped = {mode: L.choose_on(results[mode], corpora, ["after"], modes[mode]) for mode in modes}

    print("## Leave one wiki out: before vs after, per held-out wiki\n")
    print(
        "Every ranking choice (page aggregation in each list, RRF k, the BM25 weight) is made on the "
        "three other wikis (the best mean of hit@5 and MRR@10, wiki by wiki) and measured on the held-out one. "
        f"Before: the shipped ranking of `{baseline}` (its own search code, run as a child process).\n"
    )
    print(
        "| held-out wiki | mode | before hit@5 / MRR@10 | after hit@5 / MRR@10 | change | target | chosen on the other three |"
    )
    print("|---|---|---|---|---|---|---|")
    for fold_h, fold_l in zip(folds["hybrid"], folds["lexical"]):
        c = fold_h.held_out
        for mode, fold, kind in (
            ("hybrid (default)", fold_h, "hybrid"),
            ("lexical only (`--fast`)", fold_l, "fast"),
        ):
            old = hit_mrr(before[kind], qs_by[c])[:2] if before else None
            target = TARGETS[kind]
            ok = fold.score[0] >= target[0] and (target[1] is None or fold.score[1] >= target[1])
            want = f"hit@5 >= {target[0]}" + (f", MRR >= {target[1]}" if target[1] else "")
            print(
                f"| {SHORT[c]} | {mode} | {L.fmt(old) if old else '-'} | **{L.fmt(fold.score)}** | "
                f"{L.delta(fold.score, old) if old else '-'} | {want}: {'met' if ok else '**missed**'} | "
                f"{fold.config.label() if kind == 'hybrid' else fold.config.lexical.label()} |"
            )
    print()
    library = dict(zip(("hybrid", "lexical"), library_configs()))
    for mode, (variant, index, value) in shipped.items():
        config = modes[mode][index]
        per = ", ".join(f"{SHORT[c]} {L.fmt(results[mode][(c, variant, index)])}" for c in corpora)
        same = config == library[mode]
        print(
            f"- chosen on all four ({mode}): {config.label() if mode == 'hybrid' else config.lexical.label()} "
            f"(objective {value:.3f}): {per}; this tree ships it: {'yes' if same else '**no**'}"
        )
    if before:
        check = {
            c: L.hit_mrr(
                L.first_ranks(
                    arrays[(c, "before")], L.hybrid_scores(arrays[(c, "before")], L.Config())
                )
            )
            for c in corpora
        }
        same = all(
            abs(check[c][0] - hit_mrr(before["hybrid"], qs_by[c])[0]) < 1e-9
            and abs(check[c][1] - hit_mrr(before["hybrid"], qs_by[c])[1]) < 1e-9
            for c in corpora
        )
        print(
            f"- the lab re-made the before ranking from its arrays (the old reading rules, max/max, k 20, x1.5): "
            f"{'identical to' if same else '**differs from**'} `{baseline}`'s own search on every wiki"
            + ("" if same else " " + str({SHORT[c]: L.fmt(check[c]) for c in corpora}))
        )
    tree = shipped_tops(work / "tree", cache, corpora)
    for mode, kind in (("hybrid", "hybrid"), ("lexical", "fast")):
        mine = {}
        for c in corpora:
            r = L.Ranked(arrays[(c, "after")])
            score = (
                L.hybrid_scores(r, library[mode])
                if mode == "hybrid"
                else L.lexical_scores(r, library[mode])
            )
            mine[c] = L.first_ranks(r, score)
        theirs = {
            c: [B.first_rank(tree[kind][q.id], q.answers) for q in arrays[(c, "after")].questions]
            for c in corpora
        }
        agree = all(mine[c] == theirs[c] for c in corpora)
        print(
            f"- this tree's `search.search` ({'default mode' if mode == 'hybrid' else 'the fast option'}), "
            f"re-made by the lab: {'the same rank of the first answer for every question' if agree else '**differs**'}: "
            + ", ".join(f"{SHORT[c]} {L.fmt(L.hit_mrr(theirs[c]))}" for c in corpora)
        )
    print()
    print_options(arrays, corpora, library)
    print_long_pages(arrays, corpora, library)
    if ablations:
        print_ablations(results, modes, corpora, [n for n in FEATURES], arrays, shipped)
    print(f"\n- load average at end: {B.loadavg()}")


def print_options(
    arrays: dict[tuple[str, str], Any], corpora: Sequence[str], library: dict[str, Any]
) -> None:
    """Every page aggregation measured, on all four wikis, with the shipped fusion (decay:
    measured, not eligible)."""
    import loo_lab as L

    print("## Page aggregation: the options measured (all four wikis, this tree's reading rules)\n")
    print(
        "Hybrid with the shipped fusion (k and BM25 weight); the lexical-only rows rank by the BM25 list "
        "alone. `decay p`: best chunk + p x the second + p^2 x the third (a page gains by more matching "
        "chunks: measured, not eligible). `length p`: cosine s1 - p ln n, BM25 s1 n^-p.\n"
    )
    print(
        "| mode | dense list | BM25 list | " + " | ".join(SHORT[c] for c in corpora) + " | mean |"
    )
    print("|---|---|---|" + "---|" * (len(corpora) + 1))
    ship = library["hybrid"]
    dense_aggs = (
        [L.Aggregation()]
        + [L.Aggregation("length", p) for p in (0.01, 0.02, 0.04, 0.08)]
        + [L.Aggregation("decay", p) for p in (0.1, 0.25)]
    )
    lexical_aggs = (
        [L.Aggregation()]
        + [L.Aggregation("length", p) for p in (0.05, 0.1, 0.2)]
        + [L.Aggregation("decay", p) for p in (0.1, 0.25)]
    )
    ranked = {c: L.Ranked(arrays[(c, "after")]) for c in corpora}
    for d in dense_aggs:
        for x in lexical_aggs:
            config = L.Config(d, x, ship.k, ship.weight)
            scores = [
                L.hit_mrr(L.first_ranks(ranked[c], L.hybrid_scores(ranked[c], config)))
                for c in corpora
            ]
            mark = "**" if config == ship else ""
            print(
                f"| hybrid | {mark}{d.label()}{mark} | {mark}{x.label()}{mark} | "
                + " | ".join(L.fmt(s) for s in scores)
                + f" | {L.objective(scores):.3f} |"
            )
    for x in lexical_aggs:
        config = L.Config(lexical=x)
        scores = [
            L.hit_mrr(L.first_ranks(ranked[c], L.lexical_scores(ranked[c], config)))
            for c in corpora
        ]
        mark = "**" if config == library["lexical"] else ""
        print(
            f"| lexical only | - | {mark}{x.label()}{mark} | "
            + " | ".join(L.fmt(s) for s in scores)
            + f" | {L.objective(scores):.3f} |"
        )
    print()


def print_long_pages(
    arrays: dict[tuple[str, str], Any], corpora: Sequence[str], library: dict[str, Any]
) -> None:
    """How often each wiki's longest page is among the first five, before and after."""
    import loo_lab as L
    import numpy as np

    print("## The longest page of each wiki among the first five\n")
    print(
        "| wiki | longest page (chunks) | questions | hybrid before | hybrid after | lexical only before | lexical only after |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for c in corpora:
        a_before, a_after = arrays[(c, "before")], arrays[(c, "after")]
        longest = int(np.argmax(a_after.nchunks))
        cells = []
        for mode in ("hybrid", "lexical"):
            for a, config in ((a_before, L.Config()), (a_after, library[mode])):
                r = L.Ranked(a)
                score = (
                    L.hybrid_scores(r, config) if mode == "hybrid" else L.lexical_scores(r, config)
                )
                top = np.argsort(-score, axis=1, kind="stable")[:, :5]
                page = a.paths.index(a_after.paths[longest])
                cells.append(str(int((top == page).any(axis=1).sum())))
        print(
            f"| {SHORT[c]} | `{a_after.paths[longest]}` ({int(a_after.nchunks[longest])}) | {len(a_after.questions)} | "
            + " | ".join(cells)
            + " |"
        )
    print()


def loses(got: tuple[float, float], without: tuple[float, float], n: int) -> bool:
    """Whether a change loses on a wiki of ``n`` questions: the mean of hit@5 and MRR@10
    falls by more than one question's worth (1/n); within that it is neutral (one question
    moving is the noise of these sets)."""
    return (got[0] + got[1]) / 2 < (without[0] + without[1]) / 2 - 1.0 / n - 1e-9


def print_ablations(
    results: dict[str, Any],
    modes: dict[str, Any],
    corpora: Sequence[str],
    names: Sequence[str],
    arrays: dict[tuple[str, str], Any],
    shipped: dict[str, Any],
) -> None:
    import loo_lab as L

    counts = {c: sum(1 for q in B.load_questions() if q.corpus == c) for c in corpora}
    print("\n## What each change was worth\n")
    print(
        "**Held out.** Each row takes one change back (or leaves one cleaning step out), redoes the whole "
        "leave-one-out (the ranking config is chosen again on the three other wikis), and shows this tree minus "
        "that, per held-out wiki (hit@5 / MRR@10): positive means the change helps there. A change *loses* on a "
        "wiki when the mean of hit@5 and MRR@10 falls by more than one question's worth there (1/n); it ships "
        "only if it loses nowhere. Part of each cell is the config chosen on the other three moving with the "
        "change.\n"
    )
    header = " | ".join(f"{SHORT[c]} hybrid | {SHORT[c]} lexical" for c in corpora)
    print(f"| change | {header} | verdict |")
    print("|---|" + "---|" * (2 * len(corpora)) + "---|")
    full = {
        mode: {
            f.held_out: f.score
            for f in L.leave_one_out(results[mode], corpora, ["after"], modes[mode])
        }
        for mode in modes
    }
    rows = [("page aggregation (vs best chunk in both lists)", None)] + [
        (FEATURES[n], n) for n in names
    ]
    for label, name in rows:
        cells, lost = [], []
        for mode in ("hybrid", "lexical"):
            if name is None:
                keep = [
                    i
                    for i, cfg in enumerate(modes[mode])
                    if cfg.dense.kind == "max" and cfg.lexical.kind == "max"
                ]
                sub = {
                    (cc, "after", j): results[mode][(cc, "after", i)]
                    for j, i in enumerate(keep)
                    for cc in corpora
                }
                folds = L.leave_one_out(sub, corpora, ["after"], [modes[mode][i] for i in keep])
            else:
                folds = L.leave_one_out(results[mode], corpora, [name], modes[mode])
            without = {f.held_out: f.score for f in folds}
            for c in corpora:
                if loses(full[mode][c], without[c], counts[c]):
                    lost.append(f"{SHORT[c]} {mode}")
            cells.append([L.delta(full[mode][c], without[c]) for c in corpora])
        ordered = [cells[m][i] for i in range(len(corpora)) for m in (0, 1)]
        if name is not None and name.startswith("+") or "(alternative)" in label:
            verdict = (
                f"the alternative is better on: {', '.join(lost)}"
                if lost
                else "not adopted: better nowhere"
            )
        else:
            verdict = f"loses on: {', '.join(lost)}" if lost else "ships"
        print(f"| {label} | " + " | ".join(ordered) + f" | {verdict} |")
    print(
        "\n**Direct, per wiki.** The same changes with the ranking config fixed (the one chosen on all four, "
        "below): what each does to each wiki's own ranking, config choice aside.\n"
    )
    print(f"| change | {header} |")
    print("|---|" + "---|" * (2 * len(corpora)))
    for name in names:
        cells = []
        for c in corpora:
            for mode in ("hybrid", "lexical"):
                config = modes[mode][shipped[mode][1]]
                ra, rv = L.Ranked(arrays[(c, "after")]), L.Ranked(arrays[(c, name)])
                score = L.hybrid_scores if mode == "hybrid" else L.lexical_scores
                cells.append(
                    L.delta(
                        L.hit_mrr(L.first_ranks(ra, score(ra, config))),
                        L.hit_mrr(L.first_ranks(rv, score(rv, config))),
                    )
                )
        print(f"| {FEATURES[name]} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, default=DEFAULT_WORK, help=f"work folder (default {DEFAULT_WORK})"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"embedding vector cache, kept between runs (default {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--corpora", default=",".join(CORPUS_NAMES), help="comma-separated corpus folders"
    )
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"'before' revision (default {BASELINE})"
    )
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    parser.add_argument(
        "--shipped-json", action="store_true", help="internal: the baseline child's measurement"
    )
    parser.add_argument(
        "--shipped-only",
        action="store_true",
        help="only the shipped ranking of this tree and of the baseline, per wiki (no lab)",
    )
    parser.add_argument(
        "--embedder",
        choices=("local", "openai", "ollama"),
        default="local",
        help="local: the default model (the leave-one-out lab). openai/ollama: the shipped ranking "
        "through that HTTP embedder, configured as llmwiki reads it (OPENAI_BASE_URL, "
        "OLLAMA_HOST, LLMWIKI_EMBEDDING_MODEL), beside the local model's numbers",
    )
    parser.add_argument(
        "--test-server",
        action="store_true",
        help="with --embedder openai|ollama: a local server on 127.0.0.1 in that wire format, "
        "serving the default model's vectors (the HTTP path must rank exactly as local)",
    )
    parser.add_argument(
        "--ablations",
        action="store_true",
        help="also take each change back one at a time (and each cleaning step of the previous "
        "round), re-embedding what changes (slow the first time)",
    )
    args = parser.parse_args(argv)
    corpora = [c for c in args.corpora.split(",") if c]
    work, cache = args.work.resolve(), args.cache.resolve()
    if args.shipped_json:
        with contextlib.redirect_stdout(sys.stderr):
            tops = shipped_tops(work, cache, corpora)
        print(json.dumps(tops))
        return 0
    if args.embedder != "local":
        run_remote(work, cache, corpora, args.embedder, args.test_server)
        return 0
    if args.shipped_only:
        print("\n".join(B.machine_info()) + "\n")
        if not args.no_baseline:
            before = baseline_tops(
                work / f"baseline-{args.baseline}", cache, args.baseline, corpora
            )
            if before is not None:
                print_shipped(f"before (`{args.baseline}`)", before, corpora)
        after = shipped_tops(work / "tree", cache, corpora)
        print_shipped("after (this tree)", after, corpora)
        print(f"- load average at end: {B.loadavg()}")
        return 0
    run_leave_one_out(
        work, cache, corpora, None if args.no_baseline else args.baseline, args.ablations
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

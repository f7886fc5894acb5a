#!/usr/bin/env python3
"""Benchmark `llmwiki check` on a realistic 10,000-page wiki, in fresh processes.

    python benchmarks/check.py [--pages 10000] [--repeat 5] [--keep DIR] [--code DIR] [--only cold]
                               [--wiki REPO]

Builds a wiki in a temporary git repository from the real text of the corpora in
``../shared/corpora`` (dendron-vault, foam-docs; generated lorem text when absent), then
times, wall clock around ``subprocess.run``, each way the checker is started:

* the whole work tree, cold (no scan cache) and warm (cache present);
* ``--staged`` and ``--staged --base HEAD`` with one changed, staged page (warm cache; each
  repeat stages a different edit, so each run meets exactly one page it has not scanned);
* ``--no-cache`` on the whole work tree;
* ``import llmwiki_git.cli``, and that no heavy optional module (numpy, httpx, openai,
  anthropic) is loaded by the check path.

Prints machine info and a markdown table with median and min over ``--repeat`` runs and the
target of each measurement. Always exits 0: it is a measurement, not a test; rows that miss
their target say FAIL. Standard library only; page generation is deterministic
(``random.Random(42)``). ``--wiki REPO`` times a copy of an existing wiki repository instead
(``python /work/shared/tools/mkbigwiki.py OUT 10000`` builds the shared 10,000-page one).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA_CANDIDATES = [
    HERE.parent.parent / "shared" / "corpora",  # /work/main/benchmarks -> /work/shared/corpora
    HERE.parent / "shared" / "corpora",
    Path("/work/shared/corpora"),
]
CORPUS_NAMES = ("dendron-vault", "foam-docs")
HEAVY_MODULES = ("numpy", "httpx", "openai", "anthropic")
CACHE_DIR = Path("llmwiki")  # the checker's caches, inside the git common dir

CODE_DIR: str | None = None
TARGET_WHOLE = 2.0
TARGET_COLD = 1.5  # issue 15: a first check with no cache
TARGET_STAGED = 0.3  # DESIGN §10 and issue 15 (was 0.5)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "llmwiki bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "llmwiki bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}

LOREM = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris "
    "nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse "
    "cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui "
    "officia deserunt mollit anim id est laborum"
).split()


# --------------------------------------------------------------------------------------
# Corpus text
# --------------------------------------------------------------------------------------


def find_corpora() -> Path | None:
    for candidate in CORPORA_CANDIDATES:
        if all((candidate / name).is_dir() for name in CORPUS_NAMES):
            return candidate
    return None


_FRONTMATTER = re.compile(r"\A---\r?\n.*?\r?\n---\r?\n", re.S)
_WORD = re.compile(r"^[a-z]{3,12}$")
# Paragraphs that would add links, code, HTML or templating we do not control are skipped,
# so every [[link]] in the generated wiki is one this script placed on purpose.
_UNWANTED = ("[[", "]]", "```", "~~~", "{{", "{%", "<", "\t", "    ", "^")


def corpus_paragraphs(corpora: Path | None) -> tuple[list[str], list[str]]:
    """Prose paragraphs and a vocabulary of plain lowercase words."""
    paragraphs: list[str] = []
    words: dict[str, None] = {}
    if corpora is not None:
        for name in CORPUS_NAMES:
            for path in sorted((corpora / name).rglob("*.md")):
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                text = _FRONTMATTER.sub("", text).replace("\r\n", "\n")
                for block in text.split("\n\n"):
                    block = block.strip("\n")
                    if not (80 <= len(block) <= 1500):
                        continue
                    if any(bad in block for bad in _UNWANTED):
                        continue
                    if (
                        block.lstrip()[:1] in ("#", "|", ">", "!", "-", "=", "*")
                        or block.count("`") % 2
                    ):
                        continue
                    paragraphs.append(block)
                    for w in re.findall(r"[A-Za-z]+", block):
                        w = w.lower()
                        if _WORD.match(w):
                            words[w] = None
    if len(paragraphs) < 50 or len(words) < 200:  # corpora absent: generated lorem text
        rng = random.Random(7)
        paragraphs = []
        for _ in range(400):
            sentences = []
            for _ in range(rng.randint(2, 8)):
                s = " ".join(rng.choice(LOREM) for _ in range(rng.randint(6, 18)))
                sentences.append(s[0].upper() + s[1:] + ".")
            paragraphs.append(" ".join(sentences))
        words = dict.fromkeys(LOREM + [f"{a}{b}" for a in LOREM[:20] for b in LOREM[20:40]])
    return paragraphs, sorted(words)


# --------------------------------------------------------------------------------------
# Wiki generation
# --------------------------------------------------------------------------------------


@dataclass
class PageSpec:
    path: str  # relative to the repository root
    name: str  # file stem (a slug)
    link_path: str  # path-style link target, relative to wiki/
    title: str
    aliases: list[str]
    tags: list[str]
    headings: list[str] = field(default_factory=list)


@dataclass
class WikiStats:
    pages: int = 0
    bytes: int = 0
    links: int = 0
    broken: int = 0
    in_code: int = 0
    anchored: int = 0
    min_size: int = 1 << 30
    max_size: int = 0


def _title(name: str) -> str:
    return " ".join(w.capitalize() for w in name.split("-"))


def plan_pages(n: int, rng: random.Random, vocab: list[str]) -> list[PageSpec]:
    topics = sorted(set(rng.sample(vocab, min(24, len(vocab)))))
    n_sub = n // 5  # 20% of pages live in subfolders of concepts/
    used: set[str] = set()
    specs: list[PageSpec] = []
    for i in range(n):
        for _ in range(50):
            name = "-".join(rng.sample(vocab, rng.choice((2, 2, 3))))
            if name not in used:
                break
        else:
            name = f"{name}-{i}"
        used.add(name)
        if i < n - n_sub:
            folder = "concepts"
        else:
            topic = topics[i % len(topics)]
            folder = f"concepts/{topic}" if i % 7 else f"concepts/{topic}/{rng.choice(topics)}"
        title = _title(name)
        aliases = []
        if rng.random() < 0.6:
            aliases.append(f"{title} ({folder.rsplit('/', 1)[-1]})")
        if rng.random() < 0.2:
            aliases.append(f"The {title}")
        tags = sorted(set(rng.sample(topics, rng.randint(1, 4))))
        specs.append(
            PageSpec(f"wiki/{folder}/{name}.md", name, f"{folder}/{name}", title, aliases, tags)
        )
    for spec in specs:
        spec.headings = list(
            dict.fromkeys(
                _title("-".join(rng.sample(vocab, rng.randint(1, 3))))
                for _ in range(rng.randint(2, 6))
            )
        )
    return specs


def _yaml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def make_link(rng: random.Random, specs: list[PageSpec], me: int, stats: WikiStats) -> str:
    """One wikilink to another page, in the mix an LLM-maintained wiki shows."""
    n = len(specs)
    r = rng.random()
    if r < 0.01:  # broken: a page that was never written
        stats.broken += 1
        return f"[[{rng.choice(specs).name}-draft-{rng.randint(0, 999)}]]"
    if rng.random() < 0.15:  # hubs: a few pages are linked from everywhere
        idx = rng.randrange(min(100, n))
    elif rng.random() < 0.5:  # locality: neighbours in the same area
        idx = (me + rng.randint(-40, 40)) % n
    else:
        idx = rng.randrange(n)
    if idx == me:
        idx = (idx + 1) % n
    t = specs[idx]
    r = rng.random()
    if r < 0.50:
        return f"[[{t.name}]]"
    if r < 0.65:
        return f"[[{t.name}|{t.title.lower()}]]"
    if r < 0.70:
        stats.anchored += 1
        return f"[[{t.name}#{rng.choice(t.headings)}]]"
    if r < 0.72:
        stats.anchored += 1
        return f"[[{t.name}#{rng.choice(t.headings)}|{t.title} section]]"
    if r < 0.80 and t.aliases:
        return f"[[{rng.choice(t.aliases)}]]"
    if r < 0.90:
        return f"[[{t.link_path}]]"
    if r < 0.93:
        return f"![[{t.name}]]"
    return f"[[{t.title}]]"


def _insert(paragraph: str, link: str, rng: random.Random) -> str:
    """Put ``link`` at a word boundary outside code spans and markdown links."""
    words = paragraph.split(" ")
    spots: list[int] = []
    in_code = in_link = False
    for at, word in enumerate(words, 1):
        if word.count("`") % 2:
            in_code = not in_code
        if not in_code:
            if "[" in word:
                in_link = True
            if in_link and (
                ")" in word or ("]" in word and "](" not in word and not word.endswith("]"))
            ):
                in_link = False
        if not in_code and not in_link:
            spots.append(at)
    if not spots:
        return f"{paragraph} See {link}."
    at = rng.choice(spots)
    return " ".join(words[:at] + [link] + words[at:])


def _fit(paragraph: str, budget: int) -> str:
    if len(paragraph) <= budget:
        return paragraph
    cut = paragraph.rfind(" ", 0, max(budget, 60))
    return paragraph[: cut if cut > 0 else budget].rstrip(" ,;:") + "."


def render_page(
    i: int, specs: list[PageSpec], paragraphs: list[str], rng: random.Random, stats: WikiStats
) -> str:
    spec = specs[i]
    size = rng.randint(1000, 6000)
    n_links = rng.randint(5, 20)
    links = [make_link(rng, specs, i, stats) for _ in range(n_links)]
    stats.links += n_links
    n_see_also = len(links) * 2 // 5
    inline, see_also = links[: len(links) - n_see_also], links[len(links) - n_see_also :]

    head = ["---", f"title: {_yaml_str(spec.title)}"]
    head.append("aliases: [" + ", ".join(_yaml_str(a) for a in spec.aliases) + "]")
    head.append("tags:")
    head.extend(f"  - {t}" for t in spec.tags)
    head += [f"updated: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}", "---", "", f"# {spec.title}", ""]
    tail = ["## See also", ""] + [f"- {link}" for link in see_also] + [""]
    code: list[str] = []
    if rng.random() < 0.12:  # an example link inside fenced code: never a link
        stats.in_code += 1
        code = [
            "```markdown",
            f"Write [[{spec.name}-example]] or [[{specs[(i + 1) % len(specs)].name}|label]].",
            "```",
            "",
        ]

    budget = size - len("\n".join(head + tail + code)) - sum(len(x) + 6 for x in inline)
    sections: list[list[str]] = [[] for _ in spec.headings]
    remaining = max(budget, 200)
    s = 0
    while remaining > 120:
        p = rng.choice(paragraphs)
        for _ in range(4):
            if len(p) <= remaining:
                break
            p = rng.choice(paragraphs)
        p = _fit(p, remaining)
        sections[s % len(sections)].append(p)
        remaining -= len(p) + 2
        s += 1
    flat = [(si, pi) for si, sec in enumerate(sections) for pi in range(len(sec))]
    for link in inline:
        si, pi = flat[rng.randrange(len(flat))] if flat else (0, 0)
        if not sections[si]:
            sections[si].append(link)
        else:
            sections[si][pi] = _insert(sections[si][pi], link, rng)
    body: list[str] = []
    for n, (heading, paras) in enumerate(zip(spec.headings, sections)):
        body += [f"## {heading}", ""]
        for p in paras:
            body += [p, ""]
        if n == 0 and code:
            body += code
    return "\n".join(head + body + tail)


def build_wiki(root: Path, n_pages: int) -> tuple[WikiStats, str, list[PageSpec]]:
    corpora = find_corpora()
    paragraphs, vocab = corpus_paragraphs(corpora)
    source = (
        f"{corpora} ({', '.join(CORPUS_NAMES)}; {len(paragraphs)} paragraphs)"
        if corpora
        else "generated lorem text (corpora absent)"
    )
    rng = random.Random(42)
    specs = plan_pages(n_pages, rng, vocab)
    stats = WikiStats(pages=n_pages)
    for i, spec in enumerate(specs):
        text = render_page(i, specs, paragraphs, rng, stats)
        data = text.encode("utf-8")
        stats.bytes += len(data)
        stats.min_size = min(stats.min_size, len(data))
        stats.max_size = max(stats.max_size, len(data))
        path = root / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "README.md").write_text(
        "# Benchmark wiki\n\nGenerated by benchmarks/check.py.\n", encoding="utf-8"
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"wiki: {n_pages} pages")
    return stats, source, specs


# --------------------------------------------------------------------------------------
# Running and timing
# --------------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE would recompile every module in each timed process (~0.15 s):
    # an installed package has its bytecode, so the benchmark measures with it.
    drop = {"LLMWIKI_NO_CACHE", "PYTHONDONTWRITEBYTECODE"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in drop}
    env.update(GIT_ENV)
    if CODE_DIR is not None:  # --code: time another copy of the package (before/after runs)
        env["PYTHONPATH"] = CODE_DIR
    # `python -c`/`-m` put the working folder first on sys.path: run from a checkout, the
    # timed process imported that checkout, not --code (Python 3.11+; timed() also leaves it).
    env["PYTHONSAFEPATH"] = "1"
    return env


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(root), *args], env=clean_env(), capture_output=True, check=True
    )
    return proc.stdout.decode("utf-8", "replace")


@dataclass
class Run:
    seconds: float
    returncode: int
    stdout: bytes
    stderr: bytes
    cpu: float = 0.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path | None = None) -> Run:
    """Wall clock around the process, and its CPU time (user + system, its children
    included: forked scan workers count)."""
    env = clean_env()
    cpu0 = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        cmd,
        cwd=cwd or tempfile.gettempdir(),
        env=env,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    return Run(elapsed, proc.returncode, proc.stdout, proc.stderr, _children_cpu() - cpu0)


@dataclass
class Row:
    name: str
    times: list[float]
    target: float | None  # seconds; None: informational
    note: str = ""
    ok: bool | None = None  # for non-timing rows
    cpus: list[float] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus) if self.cpus else float("nan")

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def minimum(self) -> float:
        return min(self.times) if self.times else float("nan")

    @property
    def passed(self) -> bool | None:
        if self.ok is not None:
            return self.ok
        if self.target is None:
            return None
        return self.median < self.target

    @property
    def cpu_passed(self) -> bool | None:
        if self.ok is not None or self.target is None:
            return None
        return self.cpu < self.target


def summary_line(run: Run) -> str:
    """The checker's last stderr line (`N pages checked: ...`), for sanity."""
    lines = [ln for ln in run.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    tail = lines[-1] if lines else ""
    if run.returncode not in (0, 1):
        return f"rc={run.returncode}: {tail[:200]}"
    return tail[:160]


def console_script() -> str | None:
    """The `llmwiki` script pip installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "llmwiki"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("llmwiki")


def cpu_and_nproc() -> tuple[str, str]:
    """The CPU model and the cores this process may use (shared with benchmarks/retrieval.py)."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: arm")):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        nproc = str(os.cpu_count())
    return cpu, nproc


def package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "missing"


def machine_lines(versions: str) -> list[str]:
    """The machine facts every benchmark prints (shared with benchmarks/retrieval.py);
    ``versions`` is the line naming what this benchmark depends on."""
    cpu, nproc = cpu_and_nproc()
    return [
        f"- date: {_dt.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- nproc: {nproc} (os.cpu_count: {os.cpu_count()})",
        f"- cpu: {cpu}",
        f"- python: {platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        f"- platform: {platform.platform()}",
        f"- {versions}",
        f"- load average at start: {_loadavg()}",
    ]


def machine_info() -> list[str]:
    try:
        gitv = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        gitv = "git not found"
    return machine_lines(f"{gitv}; llmwiki-git {package_version('llmwiki-git')}")


def _loadavg() -> str:
    try:
        return (
            " ".join(f"{x:.2f}" for x in os.getloadavg())
            + " (1/5/15 min; other work on the machine skews wall-clock times)"
        )
    except OSError:
        return "unknown"


def fmt(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds:.3f}"


def print_table(rows: list[Row]) -> None:
    print("| measurement | wall median s | wall min s | CPU median s | target | wall | CPU |")
    print("|---|---:|---:|---:|---|---|---|")
    verdicts = {True: "met", False: "**missed**", None: "info"}
    for row in rows:
        target = "-" if row.target is None else f"< {row.target:g} s"
        if row.ok is not None and row.target is None:
            target = "none loaded"
        name = row.name + (f" ({row.note})" if row.note else "")
        print(
            f"| {name} | {fmt(row.median)} | {fmt(row.minimum)} | {fmt(row.cpu)} | {target} "
            f"| {verdicts[row.passed]} | {verdicts[row.cpu_passed]} |"
        )


def heavy_module_probe(root: Path) -> tuple[bool, str]:
    """Run the check path in-process in a fresh interpreter; report heavy modules loaded."""
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "import llmwiki_git.cli\n"
        "from llmwiki_git.workspace import Workspace\n"
        f"root = Path({str(root)!r})\n"
        "Workspace.open(root).check()\n"
        "Workspace.open(root).check('index', 'HEAD')\n"
        f"heavy = {list(HEAVY_MODULES)!r}\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(json.dumps({'loaded': loaded, 'modules': len(sys.modules)}))\n"
    )
    run = timed([sys.executable, "-c", code])
    if run.returncode != 0:
        return False, "probe failed: " + run.stderr.decode("utf-8", "replace").strip().splitlines()[
            -1
        ][:200]
    data = json.loads(run.stdout.decode().strip().splitlines()[-1])
    loaded = data["loaded"]
    if loaded:
        return False, f"loaded: {', '.join(loaded)}"
    return (
        True,
        f"none of {', '.join(HEAVY_MODULES)} in sys.modules; {data['modules']} modules total",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pages", type=int, default=10_000, help="pages to generate (default 10000)"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed runs per measurement (default 5)"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="build the wiki in DIR (must not exist) and keep it, for profiling",
    )
    parser.add_argument(
        "--code",
        type=Path,
        default=None,
        metavar="DIR",
        help="time the llmwiki_git package found in DIR (a copy of another revision)",
    )
    parser.add_argument(
        "--only",
        choices=("all", "cold"),
        default="all",
        help="cold: only the first-check rows (no scan cache, and --no-cache), quicker",
    )
    parser.add_argument(
        "--wiki",
        type=Path,
        default=None,
        metavar="REPO",
        help="time a copy of this wiki repository (its committed wiki/ pages) instead of generating one",
    )
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)
    global CODE_DIR
    if args.code is not None:
        CODE_DIR = str(args.code.resolve())

    print("# llmwiki check benchmark\n")
    print("\n".join(machine_info()))
    where = (
        timed([sys.executable, "-c", "import llmwiki_git; print(llmwiki_git.__file__)"])
        .stdout.decode()
        .strip()
    )
    print(f"- package timed: {where}")

    tmp: tempfile.TemporaryDirectory[str] | None = None
    if args.keep is not None:
        root = args.keep.resolve()
        root.mkdir(parents=True, exist_ok=False)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="llmwiki-bench-")
        root = Path(tmp.name) / "wiki-repo"
        root.mkdir()
    try:
        return _bench(root, args.pages, repeat, cold_only=args.only == "cold", wiki=args.wiki)
    finally:
        if tmp is not None:
            tmp.cleanup()
        else:
            print(f"\nkept the benchmark repository at {root}")


def copy_wiki(source: Path, root: Path) -> tuple[WikiStats, str, list[PageSpec]]:
    """A clone of the wiki repository ``source`` at ``root`` and specs of its pages."""
    root.rmdir()
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(source), str(root)],
        env=clean_env(),
        check=True,
    )
    stats = WikiStats()
    specs = []
    for path in sorted(root.glob("wiki/**/*.md")):
        rel = path.relative_to(root).as_posix()
        if rel == "wiki/index.md":
            continue
        data = path.read_bytes()
        stats.pages += 1
        stats.bytes += len(data)
        stats.min_size, stats.max_size = (
            min(stats.min_size, len(data)),
            max(stats.max_size, len(data)),
        )
        stats.links += data.count(b"[[")
        name = path.stem
        specs.append(PageSpec(rel, name, rel[len("wiki/") : -3], _title(name), [], []))
    return stats, f"a clone of {source}", specs


def _bench(
    root: Path, n_pages: int, repeat: int, cold_only: bool = False, wiki: Path | None = None
) -> int:
    t0 = time.perf_counter()
    stats, source, specs = copy_wiki(wiki, root) if wiki is not None else build_wiki(root, n_pages)
    build_s = time.perf_counter() - t0
    print(
        f"- wiki: {stats.pages} pages, {stats.bytes / 1e6:.1f} MB (pages {stats.min_size}-{stats.max_size} B), "
        f"{stats.links} wikilinks ({stats.broken} deliberately broken, {stats.anchored} with #heading), "
        f"{stats.in_code} pages with links in fenced code; built and committed in {build_s:.1f} s"
    )
    print(f"- text: {source}")
    print(
        f"- repository: {root}; runs per measurement: {repeat}; times are wall clock of a fresh process"
    )
    print()

    py = [sys.executable, "-m", "llmwiki_git", "-C", str(root)]
    script = console_script()
    git_common = Path(git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    cache_dir = git_common / CACHE_DIR
    rows: list[Row] = []
    notes: list[str] = []

    def drop_cache() -> None:  # every cache file of the checker, whatever its layout
        shutil.rmtree(cache_dir, ignore_errors=True)

    def series(name: str, cmd: list[str], target: float | None, before=None, note: str = "") -> Row:
        times: list[float] = []
        cpus: list[float] = []
        last: Run | None = None
        for i in range(repeat):
            if before is not None:
                before(i)
            last = timed(cmd)
            times.append(last.seconds)
            cpus.append(last.cpu)
        row = Row(name, times, target, note, cpus=cpus)
        rows.append(row)
        if last is not None:
            notes.append(f"- {name}: exit {last.returncode}; {summary_line(last)}")
        print(
            f"  {name}: median {fmt(row.median)} s wall, {fmt(row.cpu)} s CPU, min {fmt(row.minimum)} s",
            file=sys.stderr,
            flush=True,
        )
        return row

    # Baselines: what any Python command costs here.
    series("python -c pass (interpreter floor)", [sys.executable, "-c", "pass"], None)
    series("import llmwiki_git.cli", [sys.executable, "-c", "import llmwiki_git.cli"], None)

    # Whole work tree.
    series(
        "whole tree, cold (no scan cache)",
        [*py, "check"],
        TARGET_COLD,
        before=lambda i: drop_cache(),
    )
    if cold_only:
        series("whole tree, --no-cache", [*py, "check", "--no-cache"], TARGET_COLD)
        return _report(rows, notes)
    if not cache_dir.is_dir() or not any(cache_dir.iterdir()):
        notes.append(f"- NOTE: no cache was written in {cache_dir}")
    timed([*py, "check"])  # make sure the cache is complete
    series("whole tree, warm cache", [*py, "check"], TARGET_WHOLE)
    if script:
        series(
            "whole tree, warm cache, `llmwiki` script",
            [script, "-C", str(root), "check"],
            TARGET_WHOLE,
        )

    # One changed, staged page. Every repeat stages a different edit of the same page, so each
    # run meets one blob it has never scanned (as a pre-commit hook does).
    edited = specs[len(specs) // 3]
    original = (root / edited.path).read_bytes()
    counter = [0]

    def stage_edit(_: int) -> None:
        counter[0] += 1
        k = counter[0]
        extra = (
            f"\n\nEdit {k}: this paragraph now also cites [[{specs[0].name}]], "
            f"[[{specs[1].link_path}|a label]] and the missing [[{edited.name}-followup-{k}]].\n"
        )
        (root / edited.path).write_bytes(original + extra.encode())
        git(root, "add", edited.path)

    timed([*py, "check"])  # warm cache for the committed tree
    series(
        "--staged, one page changed", [*py, "check", "--staged"], TARGET_STAGED, before=stage_edit
    )
    series(
        "--staged --base HEAD, one page changed",
        [*py, "check", "--staged", "--base", "HEAD"],
        TARGET_STAGED,
        before=stage_edit,
    )
    if script:
        series(
            "--staged --base HEAD, `llmwiki` script",
            [script, "-C", str(root), "check", "--staged", "--base", "HEAD"],
            TARGET_STAGED,
            before=stage_edit,
        )
    (root / edited.path).write_bytes(original)
    git(root, "add", edited.path)

    # The first commit after a branch switch: HEAD was never checked. A branch deletes,
    # renames and adds pages; the hook has checked the other branch; each repeat switches to
    # a fresh such branch and stages a one-page edit there.
    base_branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    victims = [s.path for s in specs[100:]]

    def switch_and_edit(i: int) -> None:
        git(root, "checkout", "-q", "-f", base_branch)
        git(root, "reset", "-q", "--hard")
        timed([*py, "check", "--staged", "--base", "HEAD"])  # the hook ran on the other branch
        branch = f"bench-switch-{i}"
        git(root, "checkout", "-q", "-b", branch)
        mine = victims[i * 10 : (i + 1) * 10]
        git(root, "rm", "-q", mine[0], mine[1])
        git(root, "mv", mine[2], mine[2][:-3] + "-renamed.md")
        (root / mine[3]).parent.joinpath(f"bench-new-{i}.md").write_text(
            f"# New {i}\n\n[[{specs[0].name}]]\n"
        )
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"branch {i}")
        git(root, "checkout", "-q", base_branch)
        git(root, "checkout", "-q", branch)  # HEAD of this branch was never checked
        page = root / mine[4]
        page.write_bytes(
            page.read_bytes()
            + f"\n\nEdit on {branch}: [[{specs[1].name}]] [[missing-{i}]]\n".encode()
        )
        git(root, "add", mine[4])

    series(
        "--staged --base HEAD, first commit after a branch switch",
        [*py, "check", "--staged", "--base", "HEAD"],
        TARGET_STAGED,
        before=switch_and_edit,
    )
    git(root, "checkout", "-q", "-f", base_branch)
    git(root, "reset", "-q", "--hard")

    # No cache at all.
    series("whole tree, --no-cache", [*py, "check", "--no-cache"], TARGET_COLD)

    ok, detail = heavy_module_probe(root)
    rows.append(Row("heavy modules after in-process check", [], None, ok=ok))
    notes.append(
        f"- heavy modules after Workspace.open(root).check() and check('index', 'HEAD'): {detail}"
    )
    return _report(rows, notes)


def _report(rows: list[Row], notes: list[str]) -> int:
    print("## Results\n")
    print_table(rows)
    print("\n## Checker output (last run of each)\n")
    print("\n".join(notes))
    failed = [r.name for r in rows if r.passed is False]
    print(f"- load average at end: {_loadavg()}")
    print()
    if failed:
        print(f"FAIL: {len(failed)} measurement(s) missed the target: " + "; ".join(failed))
    else:
        print("all measurements met their targets")
    return 0


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a measurement script reports and exits 0
        import traceback

        traceback.print_exc()
        print(f"benchmark error: {exc}")
    sys.exit(0)

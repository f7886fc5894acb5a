"""The offline answerer: no model, no network -- sentences of the evidence, cited.

It composes a short answer (up to 6 sentences, about 900 characters) from the sentences
of the evidence pages that best match the question. Sentences come from the page bodies
only, read whole: the retrieved excerpts (chunks, which can start or end in the middle of a
line) only mark which sentences retrieval found, so no fragment of a chunk boundary is ever
quoted. Sentences are scored BM25-style against the question's terms (the wiki
tokenizer of :mod:`llmwiki_git.terms`: Unicode words, stemming, stopwords, CJK bigrams),
with statistics over the sentences of the evidence. Headings,
code blocks, tables, frontmatter-like ``key: value`` lines, short list fragments and
sentences that are mostly links are never used; nor is one holding a fragment of markup
(an emphasis marker, a link or reference-definition piece left open). A sentence never
ends inside inline code, a link or an emphasis span. A chosen sentence reads as a reader sees
it: emphasis and markdown links reduced to their text, inline code kept as code, a
labelled wikilink as its label (``[[x|label]]`` -> ``label``) and a bare one kept as the
link (``[[x]]``), never flattened to a slug word. Citations are ``[[link]]`` of the page a
sentence came from, at the end of the sentence(s) taken from it, and only links given in
the evidence. A list item becomes a sentence with its own full stop; a sentence that meets
the question only through a shared stem (``stored`` for ``store``) never pads an answer.

If no sentence shares a meaningful term with the question the answer is exactly
``The wiki does not say.`` The output is deterministic (same evidence, same answer) and is
streamed sentence by sentence.

It quotes, it does not write: the answer is in the wiki's own words and therefore in the
wiki's language, whatever ``AnswerRequest.language`` asks for (it cannot translate).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ..errors import ProviderError
from ..markup import strip_comments
from ..terms import tokenize
from .base import AnswerRequest, Evidence, StreamState

NAME = "extractive"
NO_ANSWER = "The wiki does not say."
MAX_SENTENCES = 6
MIN_SENTENCES = 3
MAX_CHARS = 900
_MIN_WORDS = 4
_MAX_SENTENCE_CHARS = 600
_K1, _B = 1.2, 0.75
# The first page, when the question names it, answers "as well" when its best sentence scores
# at least this share of the best sentence of all the evidence: then the answer is its own.
_LEAD_SHARE = 0.5

# Words of the question that say what kind of answer is wanted, not what it is about: the
# asker ("how do I ..." matched "I deployed, but ..."), and the verbs of "how does X work",
# "how do I use X" (a sentence about work in general is not about templates).
_QUESTION_WORDS = """
what which who whom whose when where why how does do did doe done can could should would
may might must shall explain describe tell define definition mean means meant give list
show name wiki page pages about please difference between happen happens
i me my we our you your work works working use using used
""".split()

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE = re.compile(r"^\s*\|")
_LINK_DEFINITION = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S")
_FRONTMATTERISH = re.compile(r"^\s*[a-z_][a-z0-9_-]*:(\s|$)")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]*?)\]\]")
# Bracketed text never holds "[": an attempt that fails stops at the next "[" instead of
# rescanning a run of them (linear on a page of 2,000,000 "["; tests/wiki/test_linear_links.py).
_MDIMAGE = re.compile(r"!\[[^\[\]\n]*\]\([^)\n]*\)")
_MDLINK = re.compile(r"\[([^\[\]\n]*)\]\([^)\n]*\)")
_REFLINK = re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")
_FOOTNOTE = re.compile(r"\[\^[^\[\]\n]*\]")
# A compiled page's inline source citation, ``^[git-bisect.md:10-12]``: the page's
# provenance, never the answer's own citation (those are [[links]] to pages).
_SOURCE_CITATION = re.compile(r"\^\[[^\[\]\n]*\]")
_SHORTCUT_REF = re.compile(
    r"(?<![\[!])\[[^\[\]\n]+\](?![\[(:\]])"
)  # [label], defined elsewhere as [label]: url
_URL = re.compile(r"<?https?://[^\s>)\]]+>?")
_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")
_EMPHASIS = re.compile(
    r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\3(?![\w*])"
)
_CODESPAN = re.compile(r"`([^`\n]*)`")
_KEPT = re.compile(r"\x00(\d+)\x00")
_BLOCK_ID = re.compile(r"\s\^[A-Za-z0-9-]+\s*$")
_SPACE = re.compile(r"\s+")
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|vs|cf|approx|al|[Ee]q|Dr|Mr|Mrs|Ms|Prof|St|Fig|Vol)|(?<![\w.])[A-Z])\.$"
)
# A sentence ends at . ! ? (plus closing quotes or brackets) before whitespace and a
# capital, digit or opening mark; or right after a CJK full stop.
_BOUNDARY = re.compile(
    r"([.!?]+[\"'\u201d\u2019)\]*_]*)(\s+)(?=[\"'\u201c\u2018(\[*_`]*[A-Z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF])"
    r"|([\u3002\uff01\uff1f]+[\u300d\u300f\u201d)]*)"
)
_CLOSERS = ".!?。！？"
_DENSE_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


@dataclass
class _Sentence:
    text: str  # cleaned, links reduced to text
    page: int  # index in the evidence
    order: tuple[int, int]  # reading position: (0, i), the i-th usable sentence of the page body
    in_excerpt: bool
    terms: list[str] = field(default_factory=list)
    score: float = 0.0
    exact: bool = False  # shares a word with the question as written, not only a stem


def _surface(text: str) -> set[str]:
    """The words of ``text`` as written (case and a plural ``s`` aside)."""
    words = set()
    for word in re.findall(r"[^\W_]+", text.casefold()):
        words.add(
            word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
        )
    return words


def _link_text(match: re.Match[str]) -> str:
    """What a reader sees of a wikilink: its label, or the link itself (an embed: nothing)."""
    if match.group(0).startswith("!"):
        return ""  # an embed
    inner = match.group(1)
    target, _, label = inner.replace("\\|", "|").partition("|")
    if label.strip():
        return label.strip()
    return f"[[{target.strip()}]]" if target.strip() else ""


def _link_name(target: str) -> str:
    """A link's page name, compared loosely (``[[Queries/What Is X#a|x]]`` -> ``what-is-x``)."""
    name = target.split("|", 1)[0].split("#", 1)[0].strip().rsplit("/", 1)[-1]
    return "-".join(name.lower().removesuffix(".md").split())


def _link_chars(text: str) -> int:
    spans = [
        m.group(0)
        for rx in (_WIKILINK, _MDLINK, _MDIMAGE, _URL, _SHORTCUT_REF)
        for m in rx.finditer(text)
    ]
    return sum(len(s) for s in spans)


def clean_sentence(raw: str) -> str:
    """``raw`` as a reader sees it: emphasis, markdown links and HTML reduced to their text,
    inline code kept as code (```blob <size>```), a wikilink kept as ``[[target]]`` or as its
    label; no other ``[[``/``]]`` left."""
    kept: list[str] = []

    def keep(piece: str) -> str:
        kept.append(piece)
        return f"\x00{len(kept) - 1}\x00"

    text = _CODESPAN.sub(lambda m: keep(m.group(0)) if m.group(1).strip() else "", raw)
    text = strip_comments(text)
    text = _MDIMAGE.sub("", text)
    text = _WIKILINK.sub(
        lambda m: keep(_link_text(m)) if _link_text(m).startswith("[[") else _link_text(m), text
    )
    text = _MDLINK.sub(r"\1", text)
    text = _REFLINK.sub(r"\1", text)
    text = _FOOTNOTE.sub("", text)
    text = _SOURCE_CITATION.sub("", text)
    text = _URL.sub(lambda m: m.group(0).strip("<>"), text)
    text = _TAG.sub("", text)
    for _ in range(2):
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4), text)
    text = _BLOCK_ID.sub("", text)
    text = text.replace("[[", "[").replace("]]", "]")
    text = _SPACE.sub(" ", text).strip()
    text = re.sub(r"\s+([,.;:!?])(?=\s|$)", r"\1", text)
    return _KEPT.sub(lambda m: kept[int(m.group(1))], text)


def _blocks(text: str) -> Iterator[tuple[str, bool]]:
    """The prose paragraphs and list items of a markdown text, as ``(text, is_list_item)``
    (code, headings, tables, rules and frontmatter-like lines left out)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[0].strip() == "---":  # a frontmatter block that was not stripped
        for end in range(1, min(len(lines), 200)):
            if lines[end].strip() in ("---", "..."):
                lines = lines[end + 1 :]
                break
    fence: str | None = None
    current: list[str] = []
    item = False
    for line in lines:
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        indented_code = not current and line.startswith(("    ", "\t")) and not _BULLET.match(line)
        if (
            opening
            or not line.strip()
            or indented_code
            or _HEADING.match(line)
            or _SETEXT.match(line)
            or _RULE.match(line)
            or _TABLE.match(line)
            or _FRONTMATTERISH.match(line)
            or _LINK_DEFINITION.match(line)
        ):
            if opening:
                fence = opening.group(1)
            if current:
                yield " ".join(current), item
                current = []
            continue
        line = _QUOTE.sub("", line)
        bullet = _BULLET.match(line)
        if bullet:
            if current:
                yield " ".join(current), item
            current, item = [line[bullet.end() :].strip()], True
            continue
        if not current:
            item = False
        current.append(line.strip())
    if current:
        yield " ".join(current), item


def _protected(block: str) -> list[tuple[int, int]]:
    """Spans a sentence never ends inside: inline code, wikilinks, markdown links and images,
    emphasis (``*Treat X by hand. Only use Y.*`` is one span, not two broken halves)."""
    spans = [
        m.span() for rx in (_CODESPAN, _WIKILINK, _MDIMAGE, _MDLINK) for m in rx.finditer(block)
    ]
    spans += [m.span() for m in _EMPHASIS.finditer(block)]
    return spans


def _split_sentences(block: str) -> Iterator[str]:
    start = 0
    spans = _protected(block) if any(c in block for c in "`[*_~") else []
    for m in _BOUNDARY.finditer(block):
        end = m.end(1) if m.group(1) else m.end(3)
        if any(a < end < b for a, b in spans):
            continue  # inside code, a link or an emphasis span: not the end of a sentence
        candidate = block[start:end].strip()
        if m.group(1) and _ABBREV.search(candidate):
            continue  # "e.g. Foo", "J. Smith": not the end of a sentence
        if candidate:
            yield candidate
        start = m.end()
    tail = block[start:].strip()
    if tail:
        yield tail


# What is left of markup that did not parse: an emphasis marker with no partner (``**`` at a
# word's edge), link syntax (``](``, ``]:``, ``[[``, ``]]``), an unclosed backtick.
_LOWER_START = re.compile(r"[^\w`\[]*[a-z\u00df-\u00ff][a-z\u00df-\u00ff]*\b(?![-.]?[A-Z])")
_DEBRIS = re.compile(
    r"\*\*|__|~~|(?<![\w*])\*(?=\s|$)|(?:^|(?<=\s))\*(?!\S*\*)|\]\(|\]:|\[\[|\]\]|`"
)


def _debris(cleaned: str) -> bool:
    """Whether ``cleaned`` holds a fragment of markup a reader would see as noise (kept code
    spans and wikilinks aside)."""
    return _DEBRIS.search(_CODESPAN.sub(" ", _WIKILINK.sub(" ", cleaned))) is not None


def _usable(raw: str, cleaned: str) -> bool:
    if _debris(cleaned) or _LOWER_START.match(cleaned):
        return False  # markup left over; or the middle of a sentence (a list item or paragraph
        # continuing one that began before it: "- automatically center the graph ...")
    dense = _DENSE_SCRIPT.search(cleaned) is not None  # CJK: no spaces, few characters per idea
    if len(cleaned) < (6 if dense else 20) or len(cleaned) > _MAX_SENTENCE_CHARS:
        return False
    if cleaned.endswith((":", "\uff1a")):
        return False  # it introduces a list or a code block that is not quoted
    if len(cleaned.split()) < _MIN_WORDS and not dense:
        return False
    if _link_chars(raw) > 0.5 * len(raw.strip()):
        return False
    letters = sum(ch.isalpha() for ch in cleaned)
    return letters >= 0.5 * len(cleaned.replace(" ", ""))


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


def _cite(sentence: str, link: str) -> str:
    citation = f"[[{link}]]"
    end = len(sentence)
    while end and sentence[end - 1] in "\"')”’":
        end -= 1
    if end and sentence[end - 1] in _CLOSERS and end == len(sentence):
        return f"{sentence[: end - 1]} {citation}{sentence[end - 1 :]}"
    if sentence and sentence[-1] not in _CLOSERS + "\"')”’":
        return f"{sentence} {citation}."
    return f"{sentence} {citation}"


def _closed(sentence: str) -> str:
    """A list item or heading-like line ends with a full stop, so that the sentence after
    it in the answer does not run on from it ("...created from. In these cases...")."""
    if _DENSE_SCRIPT.search(sentence[-1:]) or sentence.rstrip("\"')\u201d\u2019")[-1:] in _CLOSERS:
        return sentence
    return sentence.rstrip(" ;,:\u2014-") + "."


class ExtractiveProvider:
    """The offline answerer (see the module docstring). ``name = "extractive"``,
    ``model = "offline"``; ``generative`` is False: it cannot :meth:`complete` a prompt."""

    name = NAME
    model = "offline"
    generative = False

    def __init__(self, max_sentences: int = MAX_SENTENCES, max_chars: int = MAX_CHARS) -> None:
        self.max_sentences = max_sentences
        self.max_chars = max_chars

    @classmethod
    def from_env(cls, environ: Mapping[str, str], model: str | None = None) -> ExtractiveProvider:
        """The provider table's builder: nothing to configure (no key, no model)."""
        return cls()

    def stream_answer(
        self, request: AnswerRequest, state: StreamState | None = None
    ) -> Iterator[str]:
        """Yield the answer sentence by sentence (with their separating spaces)."""
        previous = ""
        for piece in self.compose(request):
            # CJK text runs on after its full stop; everything else takes a space.
            yield piece if not previous or previous[-1] in "\u3002\uff01\uff1f" else f" {piece}"
            previous = piece

    def answer(self, request: AnswerRequest) -> str:
        """The whole answer as one string."""
        return "".join(self.stream_answer(request))

    def complete(self, system: str, user: str, *, step: str = "select") -> str:
        """Not available: there is no language model. Callers select pages lexically when
        ``provider.generative`` is False."""
        raise ProviderError(
            NAME,
            "the offline answerer has no language model to complete a prompt",
            hint="select pages lexically, or configure openai, anthropic or ollama",
        )

    # ------------------------------------------------------------------ composition

    def compose(self, request: AnswerRequest) -> list[str]:
        """The answer's sentences, each with its citation where one is due."""
        ignore = {t for word in _QUESTION_WORDS for t in tokenize(word)}
        query = [t for t in tokenize(request.question) if t not in ignore]
        sentences = self._sentences(
            request.evidence, tokenize, {_link_name(a) for a in request.avoid}
        )
        if not query or not sentences:
            return [NO_ANSWER]
        self._score(sentences, query)
        wanted = {w for w in _surface(request.question) if set(tokenize(w)) & set(query)}
        for sentence in sentences:
            sentence.exact = bool(wanted & _surface(sentence.text))
        ranked = sorted(
            (s for s in sentences if s.score > 0), key=lambda s: (-s.score, s.page, s.order)
        )
        if not ranked:
            return [NO_ANSWER]
        # A sentence that meets the question only through a shared stem ("stored" for
        # "store") is not an answer to it: it may lead only when nothing else matches.
        ranked = [
            s
            for i, s in enumerate(ranked)
            if s.exact or (i == 0 and not any(r.exact for r in ranked))
        ]
        chosen = self._choose(ranked, sentences, request.evidence, query)
        return self._render(chosen, request.evidence)

    def _sentences(
        self,
        evidence: tuple[Evidence, ...],
        tokenize: Callable[[str], list[str]],
        avoid: set[str] | frozenset[str] = frozenset(),
    ) -> list[_Sentence]:
        seen: set[str] = set()
        out: list[_Sentence] = []
        for p, page in enumerate(evidence):
            if not page.link.strip():
                continue  # a page that cannot be cited cannot be quoted
            # The excerpts as the body's blocks read (quote markers and line breaks gone), to
            # find which whole sentences of the body retrieval found.
            marks = [" ".join(block for block, _ in _blocks(text)) for text in page.excerpts]
            position = 0
            for block, is_item in _blocks(page.text):
                for raw in _split_sentences(block):
                    cleaned = clean_sentence(raw)
                    if not _usable(raw, cleaned):
                        continue
                    if avoid and any(
                        _link_name(m.group(1)) in avoid for m in _WIKILINK.finditer(cleaned)
                    ):
                        continue  # it would cite the page a save of this answer replaces
                    if is_item and cleaned[-1] not in _CLOSERS and len(cleaned.split()) < 6:
                        continue  # a list fragment ("- Fast startup"), not a sentence
                    key = _key(cleaned)
                    if key in seen:
                        continue
                    seen.add(key)
                    in_excerpt = any(raw in mark for mark in marks)
                    out.append(_Sentence(cleaned, p, (0, position), in_excerpt, tokenize(cleaned)))
                    position += 1
        return out

    def _score(self, sentences: list[_Sentence], query: list[str]) -> None:
        n = len(sentences)
        avg = sum(len(s.terms) for s in sentences) / n or 1.0
        df: dict[str, int] = {}
        for s in sentences:
            for term in set(s.terms):
                df[term] = df.get(term, 0) + 1
        wanted = list(dict.fromkeys(query))
        for s in sentences:
            if not s.terms:
                continue
            tf: dict[str, int] = {}
            for term in s.terms:
                tf[term] = tf.get(term, 0) + 1
            score = 0.0
            matched = 0
            for term in wanted:
                f = tf.get(term, 0)
                if not f:
                    continue
                matched += 1
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * f * (_K1 + 1) / (f + _K1 * (1 - _B + _B * len(s.terms) / avg))
            if not matched:
                continue
            coverage = matched / len(wanted)
            score *= 0.5 + coverage  # sentences that cover more of the question come first
            score *= 1.15 if s.in_excerpt else 1.0  # retrieval found this passage
            score *= 1.0 / (1.0 + 0.08 * s.page)  # retrieval ranked this page higher
            score *= 1.0 / (1.0 + 0.01 * min(s.order[1], 50)) if s.order[0] == 0 else 1.0
            s.score = score

    @staticmethod
    def _named(evidence: tuple[Evidence, ...], query: list[str]) -> bool:
        """Whether the question names the first page: half its title's terms or more (one
        at least) are terms of the question ("how does git bisect work" names "Bisect")."""
        title = set(tokenize(evidence[0].title)) if evidence else set()
        return bool(title) and 2 * len(title & set(query)) >= len(title)

    def _choose(
        self,
        ranked: list[_Sentence],
        everything: list[_Sentence],
        evidence: tuple[Evidence, ...],
        query: list[str],
    ) -> list[_Sentence]:
        best = ranked[0].score
        chosen: list[_Sentence] = []
        budget = self.max_chars
        bags: list[set[str]] = []

        def take(s: _Sentence) -> None:
            nonlocal budget
            cost = len(s.text) + len(evidence[s.page].link.strip()) + 7  # space, " [[...]]"
            if len(chosen) >= self.max_sentences or (chosen and cost > budget) or s in chosen:
                return
            bag = set(s.terms)
            if any(len(bag & other) >= 0.7 * max(1, min(len(bag), len(other))) for other in bags):
                return  # a near-duplicate of a chosen sentence (excerpts repeat the page)
            chosen.append(s)
            bags.append(bag)
            budget -= cost

        lead = [s for s in ranked if s.page == 0] if self._named(evidence, query) else []
        if lead and lead[0].exact and lead[0].score >= _LEAD_SHARE * best:
            # The page retrieval ranked first is the one the question names, and it answers
            # about as well as any: the answer is its own, and other pages only fill what it
            # cannot (a sentence elsewhere with one more of the question's words does not
            # pull the answer off the page the question is about).
            best, ranked = lead[0].score, lead + [s for s in ranked if s.page != 0]
            strong = [s for s in lead if s.score >= 0.25 * best]
        else:
            strong = [s for s in ranked if s.score >= 0.25 * best]
        for s in strong:
            take(s)
        if len(chosen) < MIN_SENTENCES:
            # Too short: the sentence that follows a chosen one in its page gives context ...
            following = {(s.page, s.order[0], s.order[1] - 1): s for s in everything}
            for s in list(chosen):
                if len(chosen) >= MIN_SENTENCES:
                    break
                nxt = following.get((s.page, *s.order))
                if nxt is not None and (nxt.exact or nxt.score == 0):
                    take(nxt)  # a continuation, or a real match: never a stem-only one
        for s in ranked:  # ... and weaker matches fill what is still missing
            if len(chosen) >= MIN_SENTENCES:
                break
            take(s)
        return chosen

    def _render(self, chosen: list[_Sentence], evidence: tuple[Evidence, ...]) -> list[str]:
        # Pages in the order of their best sentence; a page's sentences in reading order.
        pages: list[int] = []
        for s in chosen:
            if s.page not in pages:
                pages.append(s.page)
        out: list[str] = []
        for p in pages:
            group = sorted((s for s in chosen if s.page == p), key=lambda s: s.order)
            for i, s in enumerate(group):
                text = _closed(s.text)
                if len(out) == 0 and len(text) > self.max_chars:
                    text = text[: self.max_chars - 20].rsplit(" ", 1)[0] + " \u2026"
                if i == len(group) - 1:
                    text = _cite(text, evidence[p].link.strip())
                out.append(text)
        return out

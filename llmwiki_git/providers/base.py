"""The chat provider interface and the grounded-answer prompt every model receives.

A provider turns an :class:`AnswerRequest` (a question plus the evidence pages retrieval
chose) into a stream of text deltas. The HTTP providers send :func:`build_prompt`'s
system and user messages in their own wire format; the offline ``extractive`` answerer
reads the evidence directly. Importing this module imports no HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .limits import ModelLimits

#: Longest page body sent to a model; longer bodies are cut with :data:`TRUNCATION_MARKER`.
PAGE_CHAR_LIMIT = 12_000
#: Longest excerpt sent (chunks are at most ~1,400 characters; this only guards odd input).
EXCERPT_CHAR_LIMIT = 2_000
TRUNCATION_MARKER = "[... page truncated: {n} more characters not shown ...]"


@dataclass(frozen=True)
class Evidence:
    """One grounding page.

    ``page_id`` is the qualified identity (``concepts/alpha``); ``link`` is what to write
    inside ``[[...]]`` to cite it (``alpha``); ``text`` the page body without frontmatter;
    ``excerpts`` the retrieved chunks of this page, best first.
    """

    page_id: str
    link: str
    title: str
    text: str
    excerpts: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnswerRequest:
    """A question, its evidence pages (most relevant first) and an optional output language.
    ``avoid``: link names the answer must not cite (the page a ``--save`` of this question
    would replace; an evidence page may quote a link to it, as a saved answer citing an
    earlier one does; and the evidence's links that name no page)."""

    question: str
    evidence: tuple[Evidence, ...]
    language: str | None = None
    avoid: tuple[str, ...] = ()


class ChatProvider(Protocol):
    """What the answer service needs from a model.

    ``name`` is one of ``openai``, ``anthropic``, ``ollama``, ``extractive``.
    ``stream_answer`` yields text deltas of the grounded answer; ``complete`` returns one
    non-streamed reply (used for page selection). Failures raise
    :class:`~llmwiki_git.providers.http.ProviderError` (a ``LlmwikiError``).
    """

    name: str
    model: str
    generative: bool  # False: no language model behind it (complete() refuses, no translation)

    def stream_answer(
        self, request: AnswerRequest, state: StreamState | None = None
    ) -> Iterator[str]: ...

    def complete(self, system: str, user: str, *, step: str = "select") -> str: ...


SYSTEM_PROMPT = (
    "You are a knowledge assistant answering questions from a wiki.\n"
    "Answer ONLY from the wiki pages provided in the user message; do not use outside knowledge.\n"
    "Cite the pages you use with [[link]] wikilinks, writing exactly the link name given after "
    '"cite as" for each page (for example [[alpha]]). Never cite a page that was not provided '
    "and never invent a link.\n"
    "If the pages do not contain the answer, say so plainly instead of guessing; if they answer "
    "only part of the question, answer that part and say what is missing.\n"
    "Be concise and factual."
)


def _cap(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a line or word boundary, with a marker."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", limit - 1_000, limit)
    if cut < 0:
        cut = text.rfind(" ", limit - 200, limit)
    if cut < 0:
        cut = limit
    head = text[:cut].rstrip()
    return f"{head}\n{TRUNCATION_MARKER.format(n=len(text) - len(head))}"


def build_prompt(request: AnswerRequest) -> tuple[str, str]:
    """The ``(system, user)`` messages for a grounded answer.

    The system message asks for an answer from the given pages only, ``[[link]]``
    citations with the exact link names, and a plain statement when the pages do not
    answer; ``Write the answer in <language>.`` is appended only when ``language`` is set,
    so prompts without it are byte-identical. The user message is ``Question: <q>``, the
    pages (``--- Page: <page_id> (cite as [[<link>]]) ---``, ``# <title>``, body capped at
    :data:`PAGE_CHAR_LIMIT` characters), then ``Most relevant excerpts:`` when any page has
    excerpts.
    """
    system = SYSTEM_PROMPT
    language = (request.language or "").strip()
    if language:
        system = f"{system}\nWrite the answer in {language}."

    parts = [f"Question: {request.question.strip()}", "", "Relevant wiki pages:"]
    if not request.evidence:
        parts += ["", "(no pages)"]
    for page in request.evidence:
        parts += ["", f"--- Page: {page.page_id} (cite as [[{page.link}]]) ---"]
        if page.title.strip():
            parts.append(f"# {page.title.strip()}")
        body = _cap(page.text.strip("\n"), PAGE_CHAR_LIMIT)
        if body.strip():
            parts.append(body)
    excerpts = [
        (page, i, text)
        for page in request.evidence
        for i, text in enumerate(page.excerpts, 1)
        if text.strip()
    ]
    if excerpts:
        parts += ["", "Most relevant excerpts:"]
        for page, i, text in excerpts:
            parts += [
                "",
                f"--- {page.page_id} (excerpt {i}, cite as [[{page.link}]]) ---",
                _cap(text.strip("\n"), EXCERPT_CHAR_LIMIT),
            ]
    return system, "\n".join(parts)


def model_from_env(
    environ: Mapping[str, str], provider_var: str, default: str, explicit: str | None = None
) -> str:
    """The model to use: ``explicit`` > ``LLMWIKI_MODEL`` > ``provider_var`` > ``default``."""
    for value in (explicit, environ.get("LLMWIKI_MODEL"), environ.get(provider_var)):
        if value and value.strip():
            return value.strip()
    return default


@lru_cache(maxsize=1)
def user_agent() -> str:
    """``llmwiki-git/<version>``, sent as User-Agent."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"llmwiki-git/{version('llmwiki-git')}"
    except PackageNotFoundError:  # an uninstalled checkout still works
        return "llmwiki-git"


@dataclass
class StreamState:
    """What a stream said besides its text, filled in as it arrives: ``finish`` is
    ``"length"`` when the server stopped at the output limit; the token counts are those
    the server reported (None: not reported)."""

    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Schema:
    """A JSON schema for a structured reply, and its name (OpenAI's ``json_schema.name``)."""

    name: str
    schema: Mapping[str, Any]


#: HTTP statuses with which a server refuses a request field it does not support.
_REFUSED_FIELD = {400, 422, 501}
_SCHEMA_WORDS = ("response_format", "json_schema", "format", "schema", "grammar")


class PromptedProvider:
    """What the HTTP providers share: a grounded answer is `build_prompt` then `stream`;
    each provider supplies its endpoint, its request body and the parsers of its wire format
    (a streamed body, and a plain JSON reply). Every request carries the output limit of its
    step (:mod:`.limits`); a request with a :class:`Schema` sends it as the wire format's
    structured output when the provider has one (``structured``), and falls back to the
    prose request -- remembered for the rest of the run -- when the server refuses it."""

    _endpoint: Any
    structured = False  # the wire format has a JSON-schema field (OpenAI, Ollama)

    @property
    def limits(self) -> ModelLimits:
        from .limits import ModelLimits

        found = self.__dict__.get("_limits")
        return found if isinstance(found, ModelLimits) else ModelLimits()

    @limits.setter
    def limits(self, value: ModelLimits) -> None:
        self.__dict__["_limits"] = value

    @property
    def schema_refused(self) -> str | None:
        """Why the server refused structured output in this run (None: it did not)."""
        found = self.__dict__.get("_schema_refused")
        return found if isinstance(found, str) else None

    def _payload(
        self, system: str, user: str, stream: bool, max_tokens: int, schema: Schema | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _parse_stream(self, lines: Iterator[str]) -> Iterator[Any]:
        raise NotImplementedError

    def _parse_full(self, body: Any) -> str:
        raise NotImplementedError

    def _finish(self, body: dict[str, Any]) -> str | None:
        """``"length"`` when a plain JSON reply stopped at the output limit."""
        return None

    def stream(
        self, system: str, user: str, *, step: str = "answer", state: StreamState | None = None
    ) -> Iterator[str]:
        """Yield the reply to ``system`` + ``user`` as it streams (closing the iterator
        closes the connection, so the server stops generating)."""
        from .http import stream_request

        payload = self._payload(system, user, True, self.limits.max_tokens(step), None)
        return stream_request(self._endpoint, payload, self._parse_stream, self._parse_full, state)

    def complete(self, system: str, user: str, *, step: str = "select") -> str:
        """One non-streamed reply."""
        return self.complete_counted(system, user, step=step).text

    def wants_schema(self) -> bool:
        """Whether the next request with a schema sends it."""
        return self.structured and self.limits.structured != "off" and not self.schema_refused

    def complete_counted(
        self, system: str, user: str, *, step: str = "select", schema: Schema | None = None
    ) -> Completion:
        """One non-streamed reply with the tokens the server says it used; ``schema`` asks
        for structured output where the provider and server offer it."""
        from ..errors import ProviderError
        from .http import answer_of, post_json

        send = schema if schema is not None and self.wants_schema() else None
        limit = self.limits.max_tokens(step)
        try:
            body = post_json(self._endpoint, self._payload(system, user, False, limit, send))
        except ProviderError as exc:
            if send is None or not self._refuses_schema(exc):
                raise
            self.__dict__["_schema_refused"] = exc.message
            body = post_json(self._endpoint, self._payload(system, user, False, limit, None))
            send = None
        text = answer_of(self._endpoint, body, self._parse_full)
        counts = _counts(self._usage(body) if isinstance(body, dict) else (None, None))
        finish = self._finish(body) if isinstance(body, dict) else None
        return Completion(text, *counts, finish=finish, structured=send is not None)

    def _refuses_schema(self, exc: Exception) -> bool:
        """A refusal of the structured-output field (``auto`` mode only): an HTTP 400/422/501
        whose detail names it, as llama.cpp, vLLM and LM Studio word it."""
        status = getattr(exc, "status", None)
        text = str(getattr(exc, "message", exc)).lower()
        return (
            self.limits.structured == "auto"
            and status in _REFUSED_FIELD
            and any(word in text for word in _SCHEMA_WORDS)
        )

    def _usage(self, body: dict[str, Any]) -> tuple[Any, Any]:
        """(input tokens, output tokens) as the wire format reports them (None: not reported)."""
        return None, None

    def stream_answer(
        self, request: AnswerRequest, state: StreamState | None = None
    ) -> Iterator[str]:
        """Yield the grounded answer's text as the server streams it."""
        system, user = build_prompt(request)
        return self.stream(system, user, step="answer", state=state)


@dataclass(frozen=True)
class Completion:
    """A non-streamed reply and its token counts (None where the server reported none);
    ``finish`` is ``"length"`` when the server stopped at the output limit, ``structured``
    whether the request carried a JSON schema."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish: str | None = None
    structured: bool = False


def _counts(pair: tuple[Any, Any]) -> tuple[int | None, int | None]:
    def number(value: Any) -> int | None:
        return (
            value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
        )

    return number(pair[0]), number(pair[1])


def chat_messages(system: str, user: str) -> list[dict[str, str]]:
    """The OpenAI / Ollama chat shape: a system message, then the user message."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class HttpEmbeddings:
    """A provider's embedding endpoint: its wire format (``_payload`` / ``_vectors``, in the
    provider's module) over the shared retry loop of :mod:`.http`. ``embed_batches`` opens
    one HTTP client and reuses it for every batch. Returns plain lists (no numpy here)."""

    name: str
    model: str
    endpoint: Any  # http.Endpoint (imported lazily by subclasses' modules)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _vectors(self, body: Any) -> list[list[float]]:
        raise NotImplementedError

    def embed_batches(
        self, texts: list[str], size: int, progress: Callable[[int, int], Any] | None = None
    ) -> list[list[float]]:
        from ..errors import ProviderError
        from .http import post_json

        rows: list[list[float]] = []
        if not texts:
            return rows
        with self.endpoint.settings.client() as client:
            for start in range(0, len(texts), size):
                batch = texts[start : start + size]
                body = post_json(self.endpoint, self._payload(batch), client)
                try:
                    vectors = self._vectors(body)
                except (KeyError, TypeError, AttributeError) as exc:
                    raise ProviderError(
                        self.name, f"unexpected embeddings response (missing {exc})"
                    ) from exc
                if len(vectors) != len(batch):
                    raise ProviderError(
                        self.name, f"asked for {len(batch)} embeddings, got {len(vectors)}"
                    )
                rows.extend(vectors)
                if progress is not None:
                    progress(min(start + size, len(texts)), len(texts))
        return rows

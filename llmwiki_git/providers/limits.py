"""How much a model may write per request, whether compile asks for structured output, and
the guard that cuts a streamed answer repeating itself (issue 40). Import-light: no HTTP.

Steps and their default output limits (tokens; ``max_tokens`` for OpenAI-compatible servers
and Anthropic, ``options.num_predict`` for Ollama):

``answer``  the streamed grounded answer of ``llmwiki query`` (a concise answer with citations)
``select``  the page-selection reply of ``query`` without a search index (a JSON list of ids)
``extract`` compile's concept list of one source (at most 8 concepts, one sentence each)
``page``    compile's page of one concept (title, summary, a markdown body with citations)

``LLMWIKI_MAX_TOKENS`` overrides them: a number (every step) or ``step=N`` pairs separated by
commas (``answer=600,page=3000``); ``[max_tokens]`` in ``.llmwiki/config.toml`` sets the same
per step, the variable winning step by step. ``LLMWIKI_STRUCTURED_OUTPUT`` (or the config's
``structured_output``) is ``auto`` (send the JSON schema, fall back to asking in prose when the
server refuses it), ``on`` (always send it; a refusal is an error) or ``off`` (prose only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError

STEPS: dict[str, int] = {"answer": 1024, "select": 256, "extract": 1024, "page": 2048}
#: Largest limit accepted: a typo such as 10000000 should not mean "unbounded".
MAX_LIMIT = 131_072
STRUCTURED_MODES = ("auto", "on", "off")
ENV_TOKENS = "LLMWIKI_MAX_TOKENS"
ENV_STRUCTURED = "LLMWIKI_STRUCTURED_OUTPUT"


def _limit(raw: object, where: str) -> int:
    if isinstance(raw, bool):
        raw = None
    value: int | None = raw if isinstance(raw, int) else None
    if isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw.strip())
    if value is None or not 1 <= value <= MAX_LIMIT:
        raise ConfigError(
            f"{where} must be a whole number of tokens from 1 to {MAX_LIMIT}, not {raw!r}",
            hint=f"e.g. {ENV_TOKENS}=2048, or {ENV_TOKENS}=answer=600,page=3000",
        )
    return value


def _step(name: str, where: str) -> str:
    step = name.strip().lower()
    if step not in STEPS:
        raise ConfigError(
            f"{where}: unknown step {name.strip()!r}; steps: {', '.join(STEPS)}",
            hint=f"e.g. {ENV_TOKENS}=answer=600,page=3000",
        )
    return step


@dataclass(frozen=True)
class ModelLimits:
    """Output limits per step and the structured-output mode, resolved from config + env."""

    tokens: Mapping[str, int] = field(default_factory=lambda: dict(STEPS))
    structured: str = "auto"

    def max_tokens(self, step: str) -> int:
        return self.tokens.get(step, STEPS.get(step, STEPS["answer"]))

    @classmethod
    def resolve(
        cls,
        environ: Mapping[str, str],
        configured: Mapping[str, int] | None = None,
        configured_structured: str | None = None,
    ) -> ModelLimits:
        """Defaults < the config's ``[max_tokens]`` < ``LLMWIKI_MAX_TOKENS``; the structured
        mode from ``LLMWIKI_STRUCTURED_OUTPUT`` > the config > ``auto``. ConfigError names
        what is wrong."""
        tokens = dict(STEPS)
        for key, number in (configured or {}).items():
            where = f".llmwiki/config.toml [max_tokens] {key}"
            tokens[_step(key, where)] = _limit(number, where)
        raw = (environ.get(ENV_TOKENS) or "").strip()
        if raw:
            if "=" not in raw:
                every = _limit(raw, ENV_TOKENS)
                tokens = {step: every for step in tokens}
            else:
                for pair in raw.split(","):
                    if not pair.strip():
                        continue
                    name, sep, value = pair.partition("=")
                    if not sep:
                        raise ConfigError(
                            f"{ENV_TOKENS}: {pair.strip()!r} is not step=N",
                            hint=f"e.g. {ENV_TOKENS}=answer=600,page=3000",
                        )
                    step = _step(name, ENV_TOKENS)
                    tokens[step] = _limit(value, f"{ENV_TOKENS} {step}")
        mode = (environ.get(ENV_STRUCTURED) or configured_structured or "auto").strip().lower()
        if mode not in STRUCTURED_MODES:
            raise ConfigError(
                f"{ENV_STRUCTURED} (or structured_output) must be one of "
                f"{', '.join(STRUCTURED_MODES)}, not {mode!r}",
                hint="auto sends a JSON schema and falls back to prose when the server refuses it",
            )
        return cls(tokens, mode)


# ------------------------------------------------------------------ repetition


#: A streamed answer is cut when its last ``REPEAT_WINDOW`` words repeat the ``REPEAT_WINDOW``
#: words before them ``REPEAT_RUNS`` times in a row for some period of at most
#: ``REPEAT_MAX_PERIOD`` words (a paragraph said again and again), or when one word is
#: repeated ``REPEAT_SAME`` times in a row ("the the the ...").
REPEAT_MAX_PERIOD = 200
REPEAT_RUNS = 3
REPEAT_MIN_PERIOD_WORDS = 8
REPEAT_SAME = 40


@dataclass
class RepeatGuard:
    """Watches a stream's text and says when it has degenerated into repeating itself.

    Hand-written: the check is a few lines over the words seen so far (a suffix that occurs
    ``REPEAT_RUNS`` times back to back), no library does this, and it must stay cheap per
    delta: only the last ``REPEAT_RUNS * REPEAT_MAX_PERIOD`` words are examined, and only
    when a delta completed a word."""

    runs: int = REPEAT_RUNS
    max_period: int = REPEAT_MAX_PERIOD
    min_period: int = REPEAT_MIN_PERIOD_WORDS
    same: int = REPEAT_SAME
    words: list[str] = field(default_factory=list)
    _partial: str = ""
    period: int = 0  # words in the repeated unit once found

    def feed(self, text: str) -> bool:
        """Add ``text``; True when the stream now repeats itself (and should be cut)."""
        parts = (self._partial + text).split()
        if not parts:
            self._partial = self._partial + text
            return False
        ends_word = text[-1:].isspace()
        self._partial = "" if ends_word else parts.pop()
        if not parts:
            return False
        self.words += parts
        tail = self.words[-(self.runs * self.max_period) :]
        if len(self.words) > 4 * self.runs * self.max_period:
            self.words = tail
        return self._repeats(tail)

    def _repeats(self, words: list[str]) -> bool:
        n = len(words)
        if n >= self.same and len(set(words[-self.same :])) == 1:
            self.period = 1
            return True
        last = words[-1]
        for period in range(self.min_period, min(self.max_period, n // self.runs) + 1):
            if words[n - 1 - period] != last:  # cheap filter before comparing whole runs
                continue
            unit = words[n - period :]
            if all(
                words[n - (k + 1) * period : n - k * period] == unit for k in range(1, self.runs)
            ):
                self.period = period
                return True
        return False

"""Which chat provider answers.

Order: the ``--provider`` flag > ``LLMWIKI_PROVIDER`` > the configured provider > the
first provider of the table (``providertable.py``) whose credentials are present
(``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` -> openai; ``ANTHROPIC_API_KEY`` or
``ANTHROPIC_AUTH_TOKEN`` -> anthropic; ``OLLAMA_HOST`` -> ollama) > ``extractive``, the
offline answerer. A running Ollama without ``OLLAMA_HOST`` is not probed for: nothing here
touches the network. A provider chosen by name whose credentials are missing is a
ConfigError naming the variable to set; an unknown name is a ConfigError listing the valid
ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, cast

from ..config import Settings
from ..errors import ConfigError
from ..providertable import CHAT_PROVIDERS, DEFAULT_CHAT, builder, row
from ..providertable import PROVIDERS as TABLE
from .base import ChatProvider, PromptedProvider
from .limits import ModelLimits

PROVIDERS = CHAT_PROVIDERS


class ChatBuilder(Protocol):
    """What a table row's ``chat`` class offers: a provider configured from the environment."""

    def from_env(self, environ: Mapping[str, str], model: str | None = None) -> ChatProvider: ...


def _clean(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    return value or None


def _set(environ: Mapping[str, str], name: str) -> bool:
    return bool((environ.get(name) or "").strip())


def detect_provider(environ: Mapping[str, str]) -> str:
    """The first provider with credentials in ``environ``, else ``extractive``."""
    for candidate in TABLE:
        if candidate.chat and any(_set(environ, name) for name in candidate.credentials):
            return candidate.name
    return DEFAULT_CHAT


def provider_name(
    flag: str | None, environ: Mapping[str, str], configured: str | None
) -> tuple[str, str]:
    """``(name, source)``: the chosen provider and where the choice came from
    (``--provider``, ``LLMWIKI_PROVIDER``, ``config``, ``credentials`` or ``default``)."""
    for value, source in (
        (flag, "--provider"),
        (environ.get("LLMWIKI_PROVIDER"), "LLMWIKI_PROVIDER"),
        (configured, "config"),
    ):
        name = _clean(value)
        if name is None:
            continue
        if name not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {(value or '').strip()!r} (from {source}); valid providers: {', '.join(PROVIDERS)}",
                hint=f"use one of {', '.join(PROVIDERS)}",
            )
        return name, source
    name = detect_provider(environ)
    return name, "credentials" if name != DEFAULT_CHAT else "default"


def make_provider(
    name: str,
    environ: Mapping[str, str],
    model: str | None = None,
    settings: Settings | None = None,
) -> ChatProvider:
    """The provider called ``name``, configured from ``environ`` (ConfigError when its
    credentials are missing). ``model`` wins over ``LLMWIKI_MODEL`` and the provider's own
    model variable. Its output limits and structured-output mode (:mod:`.limits`) come
    from ``LLMWIKI_MAX_TOKENS`` / ``LLMWIKI_STRUCTURED_OUTPUT`` over ``settings``."""
    found = row(name)
    if found is None or found.chat is None:
        raise ConfigError(f"unknown provider {name!r}; valid providers: {', '.join(PROVIDERS)}")
    limits = ModelLimits.resolve(
        environ,
        dict(settings.max_tokens) if settings is not None else None,
        settings.structured_output if settings is not None else None,
    )
    chat = cast(ChatBuilder, builder(found.chat)).from_env(environ, model)
    if isinstance(chat, PromptedProvider):
        chat.limits = limits
    return chat


def select_provider(
    flag: str | None,
    environ: Mapping[str, str],
    configured: str | None,
    *,
    model: str | None = None,
    settings: Settings | None = None,
) -> ChatProvider:
    """The chat provider to answer with (see the module docstring for the order)."""
    name, _source = provider_name(flag, environ, configured)
    return make_provider(name, environ, model, settings)

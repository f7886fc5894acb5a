"""Which provider answers: flag > LLMWIKI_PROVIDER > config > credentials > extractive."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmwiki_git.errors import ConfigError
from llmwiki_git.providers.registry import PROVIDERS, provider_name, select_provider

OPENAI = {"OPENAI_API_KEY": "sk-o"}
ANTHROPIC = {"ANTHROPIC_API_KEY": "sk-a"}
OLLAMA = {"OLLAMA_HOST": "127.0.0.1:11434"}


@pytest.mark.parametrize(
    ("flag", "env", "configured", "expected"),
    [
        (None, {}, None, "extractive"),
        (None, {"OPENAI_API_KEY": ""}, None, "extractive"),  # empty is unset
        (None, OPENAI, None, "openai"),
        (None, {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, None, "openai"),
        (None, ANTHROPIC, None, "anthropic"),
        (None, {"ANTHROPIC_AUTH_TOKEN": "t"}, None, "anthropic"),
        (None, OLLAMA, None, "ollama"),
        (None, {**OLLAMA, **ANTHROPIC, **OPENAI}, None, "openai"),
        (None, {**OLLAMA, **ANTHROPIC}, None, "anthropic"),
        (None, {**OPENAI, **ANTHROPIC}, "anthropic", "anthropic"),  # config beats credentials
        (None, {**OPENAI, "LLMWIKI_PROVIDER": "ollama"}, "anthropic", "ollama"),  # env beats config
        (
            "extractive",
            {**OPENAI, "LLMWIKI_PROVIDER": "openai"},
            "openai",
            "extractive",
        ),  # flag beats all
        ("  OpenAI ", OPENAI, None, "openai"),  # case and spaces are forgiven
        (None, {**ANTHROPIC, "LLMWIKI_PROVIDER": ""}, "", "anthropic"),
        ("ollama", {}, None, "ollama"),  # ollama needs no key
    ],
)
def test_selection_order(flag, env, configured, expected) -> None:
    provider = select_provider(flag, env, configured)
    assert provider.name == expected


def test_sources_are_reported() -> None:
    assert provider_name("openai", {}, None) == ("openai", "--provider")
    assert provider_name(None, {"LLMWIKI_PROVIDER": "ollama"}, None) == (
        "ollama",
        "LLMWIKI_PROVIDER",
    )
    assert provider_name(None, {}, "ollama") == ("ollama", "config")
    assert provider_name(None, ANTHROPIC, None) == ("anthropic", "credentials")
    assert provider_name(None, {}, None) == ("extractive", "default")


@pytest.mark.parametrize(
    ("flag", "env", "configured", "source"),
    [
        ("gpt", {}, None, "--provider"),
        (None, {"LLMWIKI_PROVIDER": "claude-agent"}, None, "LLMWIKI_PROVIDER"),
        (None, {}, "copilot", "config"),
    ],
)
def test_unknown_provider_lists_the_valid_ones(flag, env, configured, source) -> None:
    with pytest.raises(ConfigError) as info:
        select_provider(flag, env, configured)
    assert f"(from {source})" in info.value.message
    assert "openai, anthropic, ollama, extractive" in info.value.message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("name", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_explicit_choice_without_key_names_the_variable(name, variable) -> None:
    with pytest.raises(ConfigError, match=f"{name} needs {variable}"):
        select_provider(name, {**OLLAMA}, None)
    with pytest.raises(ConfigError, match=f"{name} needs {variable}"):
        select_provider(None, {"LLMWIKI_PROVIDER": name}, None)
    with pytest.raises(ConfigError, match=f"{name} needs {variable}"):
        select_provider(None, {}, name)


def test_models() -> None:
    assert select_provider(None, OPENAI, None).model == "gpt-4o-mini"
    assert select_provider(None, ANTHROPIC, None).model == "claude-3-5-haiku-latest"
    assert select_provider(None, OLLAMA, None).model == "llama3.2"
    assert select_provider(None, {}, None).model == "offline"
    assert select_provider(None, {**OPENAI, "LLMWIKI_MODEL": "gpt-x"}, None).model == "gpt-x"
    assert select_provider(None, {**OLLAMA, "OLLAMA_MODEL": "qwen3"}, None).model == "qwen3"
    assert (
        select_provider(None, {**OLLAMA, "OLLAMA_MODEL": "qwen3"}, None, model="phi4").model
        == "phi4"
    )


def test_every_provider_is_buildable_and_speaks_the_protocol() -> None:
    env = {**OPENAI, **ANTHROPIC}
    for name in PROVIDERS:
        provider = select_provider(name, env, None)
        assert provider.name == name
        assert callable(provider.stream_answer) and callable(provider.complete)
        assert isinstance(provider.model, str) and provider.model


def test_selecting_imports_no_http_client() -> None:
    code = (
        "import sys\n"
        "from llmwiki_git.providers.registry import select_provider\n"
        "for name in ('openai', 'anthropic', 'ollama', 'extractive'):\n"
        "    select_provider(name, {'OPENAI_API_KEY': 'k', 'ANTHROPIC_API_KEY': 'k'}, None)\n"
        "print(sorted(m for m in ('httpx', 'numpy', 'openai', 'anthropic') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_provider_table_builds_every_row() -> None:
    """Every row's builder imports and is a class with ``from_env``; the settings, the chat
    registry and the embedding backends read their names from the table."""
    from llmwiki_git import config, providertable
    from llmwiki_git.retrieval import embedders

    for r in providertable.PROVIDERS:
        for path in (r.chat, r.embeddings):
            if path is not None:
                assert callable(getattr(providertable.builder(path), "from_env", None)), path
        assert r.chat is not None or r.embeds, r.name
    assert (
        config.CHAT_PROVIDERS
        == PROVIDERS
        == providertable.CHAT_PROVIDERS
        == ("openai", "anthropic", "ollama", "extractive")
    )
    assert (
        config.EMBEDDING_PROVIDERS == embedders.PROVIDERS == ("local", "none", "openai", "ollama")
    )
    assert embedders.make_embedder("none", {}) is None
    assert (
        type(embedders.make_embedder("ollama", {"OLLAMA_HOST": "127.0.0.1:9"})).__name__
        == "HttpEmbedder"
    )

"""Token counts of a non-streamed reply, as each wire format reports them (what `llmwiki
compile` sums): real HTTP servers on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from llmwiki_git.providers.anthropic import AnthropicProvider
from llmwiki_git.providers.ollama import OllamaProvider
from llmwiki_git.providers.openai import OpenAIProvider

from ..servers import json_response, serve

REPLIES: dict[str, dict[str, Any]] = {
    "openai": {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    },
    "anthropic": {
        "type": "message",
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": 12, "output_tokens": 3},
    },
    "ollama": {
        "message": {"role": "assistant", "content": "hi"},
        "done": True,
        "prompt_eval_count": 12,
        "eval_count": 3,
    },
}


def _provider(name: str, url: str) -> Any:
    if name == "openai":
        return OpenAIProvider.from_env({"OPENAI_BASE_URL": f"{url}/v1"})
    if name == "anthropic":
        return AnthropicProvider.from_env({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url})
    return OllamaProvider.from_env({"OLLAMA_HOST": url})


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_a_counted_completion_reads_the_servers_token_counts(name: str) -> None:
    with serve(lambda path, body, headers: json_response(REPLIES[name])) as (url, seen):
        reply = _provider(name, url).complete_counted("system", "user")
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ("hi", 12, 3)
    assert seen.requests[0][1]["stream"] is False


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_a_server_that_reports_no_counts_gives_none(name: str) -> None:
    bare = {
        k: v
        for k, v in REPLIES[name].items()
        if k not in ("usage", "prompt_eval_count", "eval_count")
    }
    with serve(lambda path, body, headers: json_response(bare)) as (url, _):
        reply = _provider(name, url).complete_counted("system", "user")
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ("hi", None, None)

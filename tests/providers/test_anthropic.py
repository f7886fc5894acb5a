"""Anthropic's Messages API over real HTTP: SSE events, retries, errors."""

from __future__ import annotations

import pytest

from llmwiki_git.errors import ConfigError, ProviderError
from llmwiki_git.providers.anthropic import AnthropicProvider
from llmwiki_git.providers.base import build_prompt, user_agent

from .servers_stream import Reply, free_port, json_reply, replies, sse, sse_reply, stream_server

ANSWER = ["Alpha is ", "a consensus protocol ", "[[alpha]]."]


def text(t: str) -> bytes:
    return sse(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        "content_block_delta",
    )


def start() -> list[bytes]:
    return [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-test",
                    "stop_reason": None,
                    "usage": {"input_tokens": 25, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]


def end() -> list[bytes]:
    return [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 15},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def answer_stream(parts: list[str] = ANSWER) -> list:
    return [*start(), *(text(p) for p in parts), *end()]


def error_event(kind: str, message: str) -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": message}}, "error")


def provider(url: str) -> AnthropicProvider:
    return AnthropicProvider.from_env(
        {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_MODEL": "claude-test",
        }
    )


def test_streamed_answer_and_exact_request(request_) -> None:
    with stream_server(replies(sse_reply(answer_stream()))) as (url, seen):
        deltas = list(provider(url).stream_answer(request_))
    assert deltas == ANSWER
    (req,) = seen
    system, user = build_prompt(request_)
    assert req.path == "/v1/messages"
    assert req.json == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": system,
        "messages": [{"role": "user", "content": user}],
        "stream": True,
    }
    assert req.headers["x-api-key"] == "sk-ant-test"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"] == user_agent()
    assert "authorization" not in req.headers


def test_thinking_and_unknown_events_are_skipped(request_) -> None:
    body = [
        *start(),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            },
            "content_block_delta",
        ),
        sse({"type": "brand_new_event", "x": 1}, "brand_new_event"),
        text("Alpha."),
        *end(),
    ]
    with stream_server(replies(sse_reply(body))) as (url, _):
        assert list(provider(url).stream_answer(request_)) == ["Alpha."]


def test_defaults_and_missing_key() -> None:
    p = AnthropicProvider.from_env({"ANTHROPIC_API_KEY": "k"})
    assert p.model == "claude-3-5-haiku-latest" and p.max_tokens == 2048
    assert AnthropicProvider.from_env({"ANTHROPIC_API_KEY": "k", "LLMWIKI_MODEL": "m"}).model == "m"
    with pytest.raises(ConfigError, match="anthropic needs ANTHROPIC_API_KEY"):
        AnthropicProvider.from_env({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})


def test_auth_token_is_sent_as_bearer(request_) -> None:
    with stream_server(replies(sse_reply(answer_stream()))) as (url, seen):
        p = AnthropicProvider.from_env(
            {"ANTHROPIC_BASE_URL": f"{url}/v1", "ANTHROPIC_AUTH_TOKEN": "tok"}
        )
        assert "".join(p.stream_answer(request_)) == "".join(ANSWER)
    assert seen[0].path == "/v1/messages"  # a base URL written with /v1 is tolerated
    assert seen[0].headers["authorization"] == "Bearer tok" and "x-api-key" not in seen[0].headers


def test_429_then_success(request_, sleeps) -> None:
    limited = json_reply(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}},
        429,
        {"retry-after": "7"},
    )
    with stream_server(replies(limited, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2 and sleeps == [7.0]


def test_500_and_529_overloaded_then_success(request_, sleeps) -> None:
    error = json_reply(
        {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}, 500
    )
    overloaded = json_reply(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, 529
    )
    with stream_server(replies(error, overloaded, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 3 and sleeps == [1.0, 2.0]


def test_overloaded_error_event_before_any_text_is_retried(request_, sleeps) -> None:
    first = sse_reply([*start(), error_event("overloaded_error", "Overloaded")])
    with stream_server(replies(first, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2 and sleeps == [1.0]


def test_error_event_after_text_is_an_error(request_, sleeps) -> None:
    body = [*start(), text("Alpha is "), error_event("overloaded_error", "Overloaded")]
    got: list[str] = []
    with stream_server(replies(sse_reply(body))) as (url, seen):
        with pytest.raises(ProviderError) as info:
            for delta in provider(url).stream_answer(request_):
                got.append(delta)
    assert got == ["Alpha is "]
    assert "the stream broke after 9 characters" in str(info.value) and "Overloaded" in str(
        info.value
    )
    assert len(seen) == 1


def test_non_retryable_error_event(request_, sleeps) -> None:
    body = [*start(), error_event("invalid_request_error", "prompt is too long")]
    with stream_server(replies(sse_reply(body))) as (url, seen):
        with pytest.raises(ProviderError, match="invalid_request_error: prompt is too long"):
            list(provider(url).stream_answer(request_))
    assert len(seen) == 1 and sleeps == []


def test_dropped_before_any_token_then_success(request_, sleeps) -> None:
    with stream_server(replies(Reply(drop=True), sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2


def test_dropped_mid_stream(request_, sleeps) -> None:
    got: list[str] = []
    body = answer_stream()
    with stream_server(replies(sse_reply(body, drop_after=len(start()) + 2))) as (url, seen):
        with pytest.raises(ProviderError, match="stream broke after 30 characters") as info:
            for delta in provider(url).stream_answer(request_):
                got.append(delta)
    assert "".join(got) == "Alpha is a consensus protocol "
    assert "the answer is incomplete" in str(info.value) and "never retried automatically" in str(
        info.value
    )
    assert len(seen) == 1 and sleeps == []


def test_stream_without_message_stop_after_text(request_, sleeps) -> None:
    body = [*start(), text("Alpha is ")]
    with stream_server(replies(sse_reply(body))) as (url, _):
        with pytest.raises(ProviderError, match="stream broke after 9 characters"):
            list(provider(url).stream_answer(request_))


@pytest.mark.parametrize(
    "bad",
    [
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": \n\n',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": "x"}\n\n',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": {"type": "text_delta"}}\n\n',
        b"data: 42\n\n",
    ],
)
def test_malformed_event(request_, sleeps, bad) -> None:
    with stream_server(replies(sse_reply([*start(), bad, *end()]))) as (url, seen):
        with pytest.raises(ProviderError) as info:
            list(provider(url).stream_answer(request_))
    assert str(info.value).startswith("anthropic: the server sent a malformed")
    assert len(seen) == 1


def test_missing_model(request_, sleeps) -> None:
    missing = json_reply(
        {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-test"}},
        404,
    )
    with stream_server(replies(missing)) as (url, _), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert "model 'claude-test' not found" in info.value.message
    assert "ANTHROPIC_MODEL" in str(info.value)


def test_wrong_base_url(request_, sleeps) -> None:
    missing = json_reply(
        {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}}, 404
    )
    with (
        stream_server(replies(missing)) as (url, _),
        pytest.raises(ProviderError, match="ANTHROPIC_BASE_URL is"),
    ):
        list(provider(url).stream_answer(request_))


def test_auth_failure_names_the_key_variable(request_, sleeps) -> None:
    denied = json_reply(
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
        401,
    )
    with stream_server(replies(denied)) as (url, seen), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert info.value.message == (
        "anthropic: authentication failed (HTTP 401): invalid x-api-key -- check ANTHROPIC_API_KEY"
    )
    assert len(seen) == 1 and sleeps == []


def test_server_not_running(request_, sleeps) -> None:
    p = AnthropicProvider.from_env(
        {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{free_port()}", "ANTHROPIC_API_KEY": "k"}
    )
    with pytest.raises(ProviderError) as info:
        list(p.stream_answer(request_))
    assert "connection refused" in info.value.message and "ANTHROPIC_BASE_URL" in (
        info.value.hint or ""
    )
    assert sleeps == []


def test_complete_is_not_streamed(sleeps) -> None:
    full = json_reply(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "concepts/alpha"}],
            "stop_reason": "end_turn",
        }
    )
    with stream_server(replies(full)) as (url, seen):
        assert provider(url).complete("pick", "Question: x") == "concepts/alpha"
    assert seen[0].json == {
        "model": "claude-test",
        "max_tokens": 256,
        "system": "pick",
        "messages": [{"role": "user", "content": "Question: x"}],
        "stream": False,
    }

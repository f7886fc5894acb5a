"""OpenAI chat completions over real HTTP: SSE streaming, retries, errors."""

from __future__ import annotations

import threading

import pytest

from llmwiki_git.errors import ConfigError, LlmwikiError, ProviderError
from llmwiki_git.providers.base import build_prompt, user_agent
from llmwiki_git.providers.http import HttpSettings
from llmwiki_git.providers.openai import OpenAIProvider

from .servers_stream import Reply, free_port, json_reply, replies, sse, sse_reply, stream_server

ANSWER = ["Alpha is ", "a consensus protocol ", "[[alpha]]."]


def chunk(content: str | None = None, finish: str | None = None, role: bool = False) -> bytes:
    delta: dict = {}
    if role:
        delta["role"] = "assistant"
    if content is not None:
        delta["content"] = content
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
    )


def answer_stream(parts: list[str] = ANSWER) -> list:
    return [chunk("", role=True), *(chunk(p) for p in parts), chunk(finish="stop"), sse("[DONE]")]


def provider(url: str, key: str | None = "sk-test", **settings) -> OpenAIProvider:
    env = {"OPENAI_BASE_URL": f"{url}/v1", "LLMWIKI_MODEL": "gpt-test"}
    if key:
        env["OPENAI_API_KEY"] = key
    return OpenAIProvider.from_env(env, settings=HttpSettings(**settings) if settings else None)


def test_streamed_answer_and_exact_request(request_) -> None:
    with stream_server(replies(sse_reply(answer_stream()))) as (url, seen):
        deltas = list(provider(url).stream_answer(request_))
    assert deltas == ANSWER
    assert "".join(deltas) == "Alpha is a consensus protocol [[alpha]]."
    (req,) = seen
    system, user = build_prompt(request_)
    assert req.path == "/v1/chat/completions"
    assert req.json == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "stream": True,
        "max_tokens": 1024,
    }
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["accept"] == "text/event-stream"
    assert req.headers["user-agent"] == user_agent()


def test_deltas_arrive_while_the_server_is_still_streaming(request_) -> None:
    reached = threading.Event()
    waited: list[bool] = []
    body = [
        chunk("", role=True),
        chunk("first "),
        lambda: waited.append(reached.wait(5)),
        chunk("second"),
        chunk(finish="stop"),
        sse("[DONE]"),
    ]
    with stream_server(replies(sse_reply(body))) as (url, _):
        stream = provider(url).stream_answer(request_)
        assert next(stream) == "first "
        reached.set()  # the rest is only sent once the first delta has been read
        assert list(stream) == ["second"]
    assert waited == [True]


def test_no_key_needed_for_a_local_server(request_) -> None:
    with stream_server(replies(sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url, key=None).stream_answer(request_)) == "".join(ANSWER)
    assert "authorization" not in seen[0].headers


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider.from_env({})


def test_model_variables_and_default() -> None:
    assert OpenAIProvider.from_env({"OPENAI_API_KEY": "k"}).model == "gpt-4o-mini"
    assert OpenAIProvider.from_env({"OPENAI_API_KEY": "k", "OPENAI_MODEL": "m1"}).model == "m1"
    assert (
        OpenAIProvider.from_env(
            {"OPENAI_API_KEY": "k", "OPENAI_MODEL": "m1", "LLMWIKI_MODEL": "m2"}
        ).model
        == "m2"
    )


def test_429_with_retry_after_then_success(request_, sleeps) -> None:
    limited = json_reply(
        {"error": {"message": "Rate limit reached", "type": "requests"}}, 429, {"retry-after": "2"}
    )
    with stream_server(replies(limited, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2 and seen[0].raw == seen[1].raw
    assert sleeps == [2.0]


def test_retry_after_is_capped_and_retry_after_ms_wins(request_, sleeps) -> None:
    slow = json_reply({"error": {"message": "slow down"}}, 429, {"retry-after": "3600"})
    precise = json_reply(
        {"error": {"message": "slow down"}}, 429, {"retry-after-ms": "250", "retry-after": "9"}
    )
    with stream_server(replies(slow, precise, sse_reply(answer_stream()))) as (url, _):
        assert "".join(provider(url, max_retry_after=30.0).stream_answer(request_)) == "".join(
            ANSWER
        )
    assert sleeps == [30.0, 0.25]


def test_500_then_success_with_exponential_backoff(request_, sleeps) -> None:
    error = json_reply(
        {"error": {"message": "The server had an error", "type": "server_error"}}, 500
    )
    with stream_server(replies(error, error, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 3
    assert sleeps == [1.0, 2.0]


def test_persistent_500_gives_up_after_the_retries(request_, sleeps) -> None:
    error = json_reply({"error": {"message": "The server had an error"}}, 500)
    with stream_server(replies(error)) as (url, seen), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert len(seen) == 4 and len(sleeps) == 3
    assert str(info.value).startswith(
        "openai: server error (HTTP 500) after 4 attempts: The server had an error"
    )


def test_connection_dropped_before_any_token_is_retried(request_, sleeps) -> None:
    with stream_server(replies(Reply(drop=True), sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2 and sleeps == [1.0]


def test_stream_ended_before_any_token_is_retried(request_, sleeps) -> None:
    empty = sse_reply([chunk("", role=True)], drop_after=1)
    with stream_server(replies(empty, sse_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2


def test_connection_dropped_mid_stream_is_an_error_not_a_partial_answer(request_, sleeps) -> None:
    got: list[str] = []
    with stream_server(replies(sse_reply(answer_stream(), drop_after=3))) as (url, seen):
        with pytest.raises(ProviderError) as info:
            for delta in provider(url).stream_answer(request_):
                got.append(delta)
    partial = "".join(got)
    assert partial == "Alpha is a consensus protocol "
    assert f"the stream broke after {len(partial)} characters" in str(info.value)
    assert len(seen) == 1 and sleeps == []  # never retried once text was out


def test_server_closing_without_done_after_text_is_an_error(request_, sleeps) -> None:
    body = [chunk("", role=True), chunk("Alpha is ")]
    with stream_server(replies(sse_reply(body, chunked=False))) as (url, seen):
        with pytest.raises(ProviderError, match="stream broke after 9 characters"):
            list(provider(url).stream_answer(request_))
    assert len(seen) == 1


def test_finish_reason_without_done_is_a_complete_answer(request_) -> None:
    body = [chunk("", role=True), chunk("Alpha."), chunk(finish="stop")]
    with stream_server(replies(sse_reply(body, chunked=False))) as (url, _):
        assert list(provider(url).stream_answer(request_)) == ["Alpha."]


@pytest.mark.parametrize(
    "bad",
    [
        b"data: {not json\n\n",
        b"data: [1, 2]\n\n",
        b'data: {"object": "x"}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": 7}}]}\n\n',
        b"<html><body>Bad gateway</body></html>\n",
    ],
)
def test_malformed_chunk_names_the_provider(request_, sleeps, bad) -> None:
    with stream_server(replies(sse_reply([chunk("Alpha"), bad, sse("[DONE]")]))) as (url, seen):
        with pytest.raises(ProviderError) as info:
            list(provider(url).stream_answer(request_))
    assert isinstance(info.value, LlmwikiError)
    assert str(info.value).startswith("openai: the server sent a malformed")
    assert len(seen) == 1


def test_error_object_inside_the_stream(request_, sleeps) -> None:
    body = [sse({"error": {"message": "context length exceeded", "type": "invalid_request_error"}})]
    with stream_server(replies(sse_reply(body))) as (url, seen):
        with pytest.raises(ProviderError, match="context length exceeded"):
            list(provider(url).stream_answer(request_))
    assert len(seen) == 1


def test_missing_model(request_, sleeps) -> None:
    missing = json_reply(
        {
            "error": {
                "message": "The model `gpt-test` does not exist or you do not have access to it.",
                "type": "invalid_request_error",
                "code": "model_not_found",
            }
        },
        404,
    )
    with stream_server(replies(missing)) as (url, seen), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert "model 'gpt-test' not found" in str(info.value)
    assert "LLMWIKI_MODEL" in str(info.value)
    assert len(seen) == 1 and info.value.status == 404


def test_wrong_base_url_path(request_, sleeps) -> None:
    with stream_server(replies(Reply(404, {"content-type": "text/plain"}, [b"Not Found"]))) as (
        url,
        _,
    ):
        with pytest.raises(ProviderError, match="must include the version path"):
            list(provider(url).stream_answer(request_))


def test_auth_failure_names_the_key_variable(request_, sleeps) -> None:
    denied = json_reply(
        {
            "error": {
                "message": "Incorrect API key provided: sk-test.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        401,
    )
    with stream_server(replies(denied)) as (url, seen), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert "authentication failed (HTTP 401)" in str(info.value)
    assert "OPENAI_API_KEY" in info.value.message
    assert len(seen) == 1 and sleeps == []


def test_server_not_running(request_, sleeps) -> None:
    p = OpenAIProvider.from_env({"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"})
    with pytest.raises(ProviderError) as info:
        list(p.stream_answer(request_))
    assert "connection refused" in info.value.message
    assert info.value.hint == "is the server at OPENAI_BASE_URL running?"
    assert sleeps == []


def test_read_timeout_names_the_variable(request_, sleeps) -> None:
    release = threading.Event()
    body = [lambda: release.wait(10), chunk("late"), sse("[DONE]")]
    try:
        with stream_server(replies(sse_reply(body))) as (url, seen):
            p = OpenAIProvider.from_env(
                {"OPENAI_BASE_URL": f"{url}/v1"}, settings=HttpSettings(read_timeout=0.3)
            )
            with pytest.raises(ProviderError) as info:
                list(p.stream_answer(request_))
            release.set()
    finally:
        release.set()
    assert "within 0.3 s" in info.value.message and "LLMWIKI_REQUEST_TIMEOUT_MS" in str(info.value)
    assert len(seen) == 1  # a slow model is not asked again


def test_timeout_variable_is_read_and_checked() -> None:
    p = OpenAIProvider.from_env({"OPENAI_API_KEY": "k", "LLMWIKI_REQUEST_TIMEOUT_MS": "300000"})
    assert p.settings.read_timeout == 300.0 and p.settings.connect_timeout == 10.0
    assert OpenAIProvider.from_env({"OPENAI_API_KEY": "k"}).settings.read_timeout == 120.0
    with pytest.raises(ConfigError, match="LLMWIKI_REQUEST_TIMEOUT_MS"):
        OpenAIProvider.from_env({"OPENAI_API_KEY": "k", "LLMWIKI_REQUEST_TIMEOUT_MS": "soon"})


def test_server_that_ignores_stream_true(request_) -> None:
    full = json_reply(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Alpha [[alpha]]."},
                    "finish_reason": "stop",
                }
            ],
        }
    )
    with stream_server(replies(full)) as (url, _):
        assert list(provider(url).stream_answer(request_)) == ["Alpha [[alpha]]."]


def test_complete_is_not_streamed(sleeps) -> None:
    full = json_reply(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "concepts/alpha"}}]}
    )
    error = json_reply({"error": {"message": "busy"}}, 503)
    with stream_server(replies(error, full)) as (url, seen):
        assert provider(url).complete("pick pages", "Question: x") == "concepts/alpha"
    assert seen[1].json == {
        "model": "gpt-test",
        "stream": False,
        "max_tokens": 256,
        "messages": [
            {"role": "system", "content": "pick pages"},
            {"role": "user", "content": "Question: x"},
        ],
    }
    assert sleeps == [1.0]


def test_complete_with_a_malformed_body(sleeps) -> None:
    with stream_server(replies(json_reply({"choices": []}))) as (url, _):
        with pytest.raises(ProviderError, match="openai: the server sent a malformed answer"):
            provider(url).complete("s", "u")

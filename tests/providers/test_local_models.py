"""Local models (issue 40) over real HTTP on 127.0.0.1: an output limit per step in every
request, the settings that change it, structured output with its prose fallback, the
server's "stopped at the limit", the repetition guard, and the connection closed when the
client gives up (the server sees it)."""

from __future__ import annotations

import time

import pytest

from llmwiki_git.config import Settings
from llmwiki_git.errors import ConfigError, ProviderError
from llmwiki_git.providers.base import Schema, StreamState
from llmwiki_git.providers.http import HttpSettings
from llmwiki_git.providers.limits import STEPS, ModelLimits, RepeatGuard
from llmwiki_git.providers.ollama import OllamaProvider
from llmwiki_git.providers.openai import OpenAIProvider
from llmwiki_git.providers.registry import make_provider

from .servers_stream import (
    Reply,
    json_reply,
    ndjson,
    ndjson_reply,
    replies,
    sse,
    sse_reply,
    stream_server,
)

SCHEMA = Schema("page", {"type": "object", "properties": {"body": {"type": "string"}}})


def openai_full(content: str, finish: str = "stop") -> Reply:
    return json_reply(
        {
            "choices": [
                {"index": 0, "message": {"content": content}, "finish_reason": finish},
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        }
    )


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def openai(url: str, **env: str) -> OpenAIProvider:
    provider = make_provider(
        "openai", {"OPENAI_BASE_URL": f"{url}/v1", "LLMWIKI_MODEL": "m", **env}
    )
    assert isinstance(provider, OpenAIProvider)
    return provider


def ollama(url: str, **env: str) -> OllamaProvider:
    provider = make_provider("ollama", {"OLLAMA_HOST": url, "LLMWIKI_MODEL": "m", **env})
    assert isinstance(provider, OllamaProvider)
    return provider


def test_every_request_carries_the_limit_of_its_step(request_) -> None:
    with stream_server(
        replies(sse_reply([chunk("a"), chunk(finish="stop"), sse("[DONE]")]), openai_full("x"))
    ) as (url, seen):
        p = openai(url)
        list(p.stream_answer(request_))
        p.complete("s", "u", step="extract")
    assert [r.json["max_tokens"] for r in seen] == [STEPS["answer"], STEPS["extract"]]
    with stream_server(
        replies(
            ndjson_reply([ndjson({"message": {"content": "a"}, "done": True})]),
            json_reply({"message": {"content": "x"}, "done": True}),
        )
    ) as (url, seen):
        q = ollama(url)
        list(q.stream_answer(request_))
        q.complete("s", "u", step="page")
    assert [r.json["options"] for r in seen] == [
        {"num_predict": STEPS["answer"]},
        {"num_predict": STEPS["page"]},
    ]


def test_limits_from_the_environment_win_over_the_config_step_by_step() -> None:
    settings = Settings(max_tokens=(("answer", 500), ("page", 900)), structured_output="off")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LLMWIKI_MAX_TOKENS": "page=3000"}
    p = make_provider("openai", env, None, settings)
    assert isinstance(p, OpenAIProvider)
    assert (p.limits.max_tokens("answer"), p.limits.max_tokens("page")) == (500, 3000)
    assert p.limits.max_tokens("extract") == STEPS["extract"] and p.limits.structured == "off"
    every = ModelLimits.resolve({"LLMWIKI_MAX_TOKENS": "64"})
    assert {every.max_tokens(s) for s in STEPS} == {64}
    assert ModelLimits.resolve({"LLMWIKI_STRUCTURED_OUTPUT": "ON"}).structured == "on"


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"LLMWIKI_MAX_TOKENS": "0"}, "from 1 to"),
        ({"LLMWIKI_MAX_TOKENS": "lots"}, "whole number"),
        ({"LLMWIKI_MAX_TOKENS": "anwser=5"}, "unknown step 'anwser'"),
        ({"LLMWIKI_MAX_TOKENS": "answer=5,page"}, "is not step=N"),
        ({"LLMWIKI_STRUCTURED_OUTPUT": "maybe"}, "auto, on, off"),
    ],
)
def test_bad_limit_settings_are_refused_clearly(env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError) as info:
        ModelLimits.resolve(env)
    assert said in str(info.value)


def test_structured_output_is_sent_and_a_refusal_falls_back_to_prose_once() -> None:
    refusal = json_reply(
        {"error": {"message": "'response_format' of type json_schema is not supported"}}, 400
    )
    with stream_server(
        replies(refusal, openai_full('{"body": "x"}'), openai_full('{"body": "y"}'))
    ) as (url, seen):
        p = openai(url)
        first = p.complete_counted("s", "u", step="page", schema=SCHEMA)
        second = p.complete_counted("s", "u", step="page", schema=SCHEMA)
    assert seen[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "page", "schema": dict(SCHEMA.schema)},
    }
    # the refused request is asked again in prose, and the run remembers not to send it
    assert ["response_format" in r.json for r in seen] == [True, False, False]
    assert (first.text, first.structured, second.text) == ('{"body": "x"}', False, '{"body": "y"}')
    assert p.schema_refused is not None and "response_format" in p.schema_refused


def test_ollama_sends_its_format_and_structured_on_makes_a_refusal_an_error() -> None:
    with stream_server(replies(json_reply({"message": {"content": "{}"}, "done": True}))) as (
        url,
        seen,
    ):
        reply = ollama(url).complete_counted("s", "u", step="extract", schema=SCHEMA)
    assert seen[0].json["format"] == dict(SCHEMA.schema) and reply.structured
    refusal = json_reply({"error": {"message": "response_format is not supported"}}, 400)
    with stream_server(replies(refusal)) as (url, seen):
        with pytest.raises(ProviderError) as info:
            openai(url, LLMWIKI_STRUCTURED_OUTPUT="on").complete_counted(
                "s", "u", step="page", schema=SCHEMA
            )
    assert info.value.status == 400 and len(seen) == 1
    with stream_server(replies(openai_full("{}"))) as (url, seen):
        openai(url, LLMWIKI_STRUCTURED_OUTPUT="off").complete_counted(
            "s", "u", step="page", schema=SCHEMA
        )
    assert "response_format" not in seen[0].json


def test_a_reply_stopped_at_the_limit_says_so(request_) -> None:
    with stream_server(
        replies(
            sse_reply(
                [
                    chunk("cut"),
                    chunk(finish="length"),
                    sse({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
                    sse("[DONE]"),
                ]
            ),
            openai_full("half", "length"),
        )
    ) as (url, _):
        p = openai(url)
        state = StreamState()
        assert list(p.stream_answer(request_, state)) == ["cut"]
        full = p.complete_counted("s", "u", step="page")
    assert (state.finish, state.input_tokens, state.output_tokens) == ("length", 9, 4)
    assert full.finish == "length"


def test_the_repeat_guard_cuts_a_paragraph_said_again_and_not_a_real_answer() -> None:
    guard = RepeatGuard()
    paragraph = "The wiki stores pages in git and every page has a title and some links. "
    said = [guard.feed(piece) for piece in ["Intro text here. "] + [paragraph] * 5]
    assert said.index(True) == 3 and guard.period == len(paragraph.split())
    sames = RepeatGuard()
    assert any(sames.feed("the ") for _ in range(30))  # "the the the ..." is cut too
    honest = RepeatGuard()
    answer = " ".join(
        f"- [[page-{i}]] says step {i} of the procedure uses the tool named tool{i}."
        for i in range(200)
    )
    assert not any(honest.feed(answer[i : i + 7]) for i in range(0, len(answer), 7))


def test_a_client_timeout_closes_the_connection_so_the_server_stops(request_) -> None:
    """The server stalls past the read timeout, then keeps generating: its next writes
    fail, because the client closed the connection when it gave up."""
    stall: list[object] = [chunk("Alpha "), lambda: time.sleep(0.8)]
    rest = [piece for _ in range(50) for piece in (chunk("more "), lambda: time.sleep(0.02))]
    with stream_server(replies(sse_reply([*stall, *rest]))) as (url, seen):  # type: ignore[list-item]
        p = OpenAIProvider.from_env(
            {"OPENAI_BASE_URL": f"{url}/v1"}, settings=HttpSettings(read_timeout=0.3)
        )
        with pytest.raises(ProviderError) as info:
            list(p.stream_answer(request_))
        assert seen[0].client_closed.wait(10)
    assert "the stream broke after 6 characters" in info.value.message
    assert seen[0].written < 51


def test_closing_the_stream_closes_the_connection(request_) -> None:
    """What the repetition cut and Ctrl-C do: stop reading and close the iterator."""
    pieces = [p for _ in range(2000) for p in (chunk("again "), lambda: time.sleep(0.005))]
    with stream_server(replies(sse_reply(pieces))) as (url, seen):  # type: ignore[arg-type]
        stream = openai(url).stream_answer(request_)
        assert next(iter(stream)) == "again "
        stream.close()  # type: ignore[attr-defined]
        assert seen[0].client_closed.wait(10)
    assert seen[0].written < 2000

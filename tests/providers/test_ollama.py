"""Ollama's /api/chat over real HTTP: NDJSON streaming, missing models, a server not running."""

from __future__ import annotations

import pytest

from llmwiki_git.errors import ConfigError, ProviderError
from llmwiki_git.providers.base import build_prompt
from llmwiki_git.providers.ollama import OllamaProvider, ollama_base_url

from .servers_stream import (
    Reply,
    free_port,
    json_reply,
    ndjson,
    ndjson_reply,
    replies,
    stream_server,
)

ANSWER = ["Alpha", " is a consensus", " protocol [[alpha]]."]


def piece(content: str) -> bytes:
    return ndjson(
        {
            "model": "tiny",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": False,
        }
    )


def done() -> bytes:
    return ndjson(
        {
            "model": "tiny",
            "created_at": "2026-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1,
            "eval_count": 3,
        }
    )


def answer_stream(parts: list[str] = ANSWER) -> list:
    return [*(piece(p) for p in parts), done()]


def provider(url: str, **env: str) -> OllamaProvider:
    return OllamaProvider.from_env({"OLLAMA_HOST": url, "OLLAMA_MODEL": "tiny", **env})


def test_streamed_answer_and_exact_request(request_) -> None:
    with stream_server(replies(ndjson_reply(answer_stream()))) as (url, seen):
        deltas = list(provider(url).stream_answer(request_))
    assert deltas == ANSWER
    (req,) = seen
    system, user = build_prompt(request_)
    assert req.path == "/api/chat"
    assert req.json == {
        "model": "tiny",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "stream": True,
        "options": {"num_predict": 1024},
    }
    assert "authorization" not in req.headers


def test_defaults() -> None:
    p = OllamaProvider.from_env({})
    assert p.model == "llama3.2" and p.base_url == "http://127.0.0.1:11434"
    assert (
        OllamaProvider.from_env(
            {"OLLAMA_TIMEOUT_MS": "600000", "LLMWIKI_REQUEST_TIMEOUT_MS": "1000"}
        ).settings.read_timeout
        == 600
    )
    with pytest.raises(ConfigError, match="OLLAMA_TIMEOUT_MS"):
        OllamaProvider.from_env({"OLLAMA_TIMEOUT_MS": "-5"})


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://127.0.0.1:11434"),
        ("", "http://127.0.0.1:11434"),
        ("127.0.0.1:11500", "http://127.0.0.1:11500"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        ("gpu-box", "http://gpu-box:11434"),
        ("http://gpu-box:11434/", "http://gpu-box:11434"),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("http://proxy.local/ollama", "http://proxy.local/ollama"),
    ],
)
def test_ollama_host_is_read_like_ollama_does(host, url) -> None:
    assert ollama_base_url(host) == url


def test_api_key_is_sent_when_set(request_) -> None:
    with stream_server(replies(ndjson_reply(answer_stream()))) as (url, seen):
        list(provider(url, OLLAMA_API_KEY="ol-key").stream_answer(request_))
    assert seen[0].headers["authorization"] == "Bearer ol-key"


def test_missing_model_says_ollama_pull(request_, sleeps) -> None:
    missing = json_reply({"error": 'model "tiny" not found, try pulling it first'}, 404)
    with stream_server(replies(missing)) as (url, seen), pytest.raises(ProviderError) as info:
        list(provider(url).stream_answer(request_))
    assert "run `ollama pull tiny`" in info.value.message
    assert info.value.status == 404 and len(seen) == 1 and sleeps == []


def test_missing_model_reported_inside_the_stream(request_, sleeps) -> None:
    with stream_server(
        replies(ndjson_reply([ndjson({"error": 'model "tiny" not found, try pulling it first'})]))
    ) as (url, _):
        with pytest.raises(ProviderError, match="ollama pull tiny"):
            list(provider(url).stream_answer(request_))


def test_server_not_running_says_ollama_serve(request_, sleeps) -> None:
    p = provider(f"127.0.0.1:{free_port()}")
    with pytest.raises(ProviderError) as info:
        list(p.stream_answer(request_))
    assert "connection refused" in info.value.message
    assert (
        info.value.hint == "start Ollama with `ollama serve` (or set OLLAMA_HOST to where it runs)"
    )
    assert str(info.value).count("ollama serve") == 1  # said once, as the hint (it was said twice)
    assert sleeps == []  # nothing listens on this machine: no 1 + 2 + 4 s of retries (issue 23)


def test_500_then_success(request_, sleeps) -> None:
    error = json_reply({"error": "llama runner process has terminated"}, 500)
    with stream_server(replies(error, ndjson_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 2 and sleeps == [1.0]


def test_429_then_success(request_, sleeps) -> None:
    busy = json_reply(
        {"error": "server busy, please try again. maximum pending requests exceeded"},
        429,
        {"retry-after": "1.5"},
    )
    with stream_server(replies(busy, ndjson_reply(answer_stream()))) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert sleeps == [1.5]


def test_dropped_before_any_token_then_success(request_, sleeps) -> None:
    with stream_server(
        replies(Reply(drop=True), Reply(drop=True), ndjson_reply(answer_stream()))
    ) as (url, seen):
        assert "".join(provider(url).stream_answer(request_)) == "".join(ANSWER)
    assert len(seen) == 3 and sleeps == [1.0, 2.0]


def test_dropped_mid_stream(request_, sleeps) -> None:
    got: list[str] = []
    with stream_server(replies(ndjson_reply(answer_stream(), drop_after=2))) as (url, seen):
        with pytest.raises(ProviderError, match="stream broke after 20 characters"):
            for delta in provider(url).stream_answer(request_):
                got.append(delta)
    assert got == ANSWER[:2]
    assert len(seen) == 1 and sleeps == []


def test_stream_ending_without_done_after_text(request_, sleeps) -> None:
    with stream_server(replies(ndjson_reply([piece("Alpha")], chunked=False))) as (url, seen):
        with pytest.raises(ProviderError, match="stream broke after 5 characters"):
            list(provider(url).stream_answer(request_))
    assert len(seen) == 1


@pytest.mark.parametrize(
    "bad",
    [
        b'{"message": {"content": "x"\n',
        b"[1, 2]\n",
        b'{"message": "text"}\n',
        b'{"unexpected": true}\n',
    ],
)
def test_malformed_line(request_, sleeps, bad) -> None:
    with stream_server(replies(ndjson_reply([piece("Alpha"), bad, done()]))) as (url, seen):
        with pytest.raises(ProviderError) as info:
            list(provider(url).stream_answer(request_))
    assert str(info.value).startswith("ollama: the server sent a malformed stream line")
    assert len(seen) == 1


def test_not_an_ollama_server(request_, sleeps) -> None:
    with stream_server(
        replies(Reply(404, {"content-type": "text/plain"}, [b"404 page not found"]))
    ) as (url, _):
        with pytest.raises(ProviderError, match="is OLLAMA_HOST pointing at an Ollama server"):
            list(provider(url).stream_answer(request_))


def test_complete_is_not_streamed(sleeps) -> None:
    full = json_reply(
        {
            "model": "tiny",
            "message": {"role": "assistant", "content": "concepts/alpha"},
            "done": True,
        }
    )
    with stream_server(replies(full)) as (url, seen):
        assert provider(url).complete("pick", "Question: x") == "concepts/alpha"
    assert seen[0].json == {
        "model": "tiny",
        "stream": False,
        "options": {"num_predict": 256},
        "messages": [
            {"role": "system", "content": "pick"},
            {"role": "user", "content": "Question: x"},
        ],
    }

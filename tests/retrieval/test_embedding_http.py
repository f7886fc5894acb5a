"""OpenAI-compatible and Ollama embedding endpoints, against real local HTTP servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmwiki_git.errors import ConfigError, ProviderError
from llmwiki_git.retrieval.embedders import make_embedder

from ..conftest import Repo, copy_demo
from ..servers import json_response, serve


def vector(text: str) -> list[float]:
    """A deterministic 8-d vector from the text (what the fake model 'means')."""
    v = np.zeros(8)
    for word in text.lower().split():
        v[sum(map(ord, word)) % 8] += 1.0
    return v.tolist()


def openai_handler(path, body, headers):
    assert path == "/v1/embeddings"
    data = [
        {"object": "embedding", "index": i, "embedding": vector(t)}
        for i, t in enumerate(body["input"])
    ]
    return json_response({"object": "list", "data": list(reversed(data)), "model": body["model"]})


def test_openai_compatible_wire_format_and_normalisation() -> None:
    with serve(openai_handler) as (url, seen):
        emb = make_embedder(
            "openai", {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-test"}, "tiny"
        )
        out = emb.embed(["alpha beta", "gamma"])
    assert out.shape == (2, 8) and emb.dimension == 8
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    expected = np.array(vector("alpha beta")) / np.linalg.norm(vector("alpha beta"))
    assert np.allclose(out[0], expected)  # order restored from "index"
    path, body, headers = seen.requests[0]
    assert body == {"model": "tiny", "input": ["alpha beta", "gamma"]}
    assert headers["authorization"] == "Bearer sk-test"
    assert "127.0.0.1" not in emb.fingerprint  # endpoint is hashed, never shown


def test_ollama_wire_format() -> None:
    def handler(path, body, headers):
        assert path == "/api/embed"
        return json_response(
            {"model": body["model"], "embeddings": [vector(t) for t in body["input"]]}
        )

    with serve(handler) as (url, _):
        emb = make_embedder("ollama", {"OLLAMA_HOST": url}, None)
        assert emb.model == "nomic-embed-text"
        assert emb.embed(["x"]).shape == (1, 8)


def test_retries_429_and_500_then_succeeds(monkeypatch) -> None:
    monkeypatch.setattr("llmwiki_git.providers.http.time.sleep", lambda s: None)
    calls = {"n": 0}

    def handler(path, body, headers):
        calls["n"] += 1
        if calls["n"] == 1:
            return 429, {"retry-after": "0"}, b"slow down"
        if calls["n"] == 2:
            return json_response({"error": "boom"}, 500)
        return openai_handler(path, body, headers)

    with serve(handler) as (url, _):
        emb = make_embedder("openai", {"OPENAI_BASE_URL": f"{url}/v1"}, "m")
        assert emb.embed(["a"]).shape == (1, 8)
    assert calls["n"] == 3


def test_clear_errors() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai", {}, None)
    with serve(lambda p, b, h: json_response({"error": "no such model"}, 404)) as (url, _):
        with pytest.raises(ProviderError, match="404"):
            make_embedder("ollama", {"OLLAMA_HOST": url}, "missing").embed(["x"])
    with serve(lambda p, b, h: (200, {}, b"{not json")) as (url, _):
        with pytest.raises(ProviderError, match="malformed"):
            make_embedder("ollama", {"OLLAMA_HOST": url}, "m").embed(["x"])
    with serve(lambda p, b, h: json_response({"embeddings": []})) as (url, _):
        with pytest.raises(ProviderError, match="asked for 1 embeddings, got 0"):
            make_embedder("ollama", {"OLLAMA_HOST": url}, "m").embed(["x"])


def test_unreachable_server_names_what_to_start(monkeypatch) -> None:
    monkeypatch.setattr("llmwiki_git.providers.http.time.sleep", lambda s: None)
    emb = make_embedder("ollama", {"OLLAMA_HOST": "127.0.0.1:9"}, "m")
    with pytest.raises(ProviderError) as info:
        emb.embed(["x"])
    assert "cannot connect" in str(info.value) and "ollama serve" in str(info.value)


def test_index_and_context_through_an_openai_server(repo: Repo) -> None:
    copy_demo(repo.root)
    repo.commit("demo")
    with serve(openai_handler) as (url, seen):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        proc = repo.llmwiki("index", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["backend"] == "openai"
        meta = json.loads((repo.root / ".llmwiki" / "embeddings.json").read_text())
        assert meta["dimensions"] == 8 and meta["model"] == "tiny"
        proc = repo.llmwiki("context", "blob tree commit", "--json", env=env)
        pack = json.loads(proc.stdout)
        assert pack["warnings"] == [] and "semantic-chunk" in pack["primary"][0]["reasons"]


def ollama_handler(path, body, headers):
    assert path == "/api/embed", path
    return json_response({"model": body["model"], "embeddings": [vector(t) for t in body["input"]]})


@pytest.mark.parametrize(
    "spelling", ["{hostport}", "http://{hostport}/v1", "http://{hostport}/", "{hostport}/v1"]
)
def test_ollama_host_spellings_reach_api_embed(spelling) -> None:
    """OLLAMA_HOST is read once, the way chat reads it: ``h:port``, ``http://h:port/v1`` and
    friends all reach ``/api/embed`` (``/v1/api/embed`` before)."""
    with serve(ollama_handler) as (url, seen):
        host = spelling.format(hostport=url.removeprefix("http://"))
        assert make_embedder("ollama", {"OLLAMA_HOST": host}, "m").embed(["x"]).shape == (1, 8)
    assert [p for p, _, _ in seen.requests] == ["/api/embed"]


@pytest.mark.parametrize(
    "host", ["myhost", "http://h:11434/v1", "0.0.0.0", "h:8080", "https://o.example.com/x"]
)
def test_ollama_chat_and_embeddings_share_one_base(host) -> None:
    from llmwiki_git.providers.ollama import OllamaProvider

    chat = OllamaProvider.from_env({"OLLAMA_HOST": host})
    emb = make_embedder("ollama", {"OLLAMA_HOST": host}, "m")
    assert emb.endpoint == f"{chat.base_url}/api/embed"
    assert chat.base_url.count(":") == 2 or chat.base_url.startswith(
        "https://"
    )  # a bare host got port 11434


@pytest.mark.parametrize(
    ("name", "env", "var"),
    [
        ("openai", {"OPENAI_API_KEY": "bad"}, "OPENAI_API_KEY"),
        ("ollama", {"OLLAMA_API_KEY": "bad"}, "OLLAMA_API_KEY"),
    ],
)
def test_401_names_the_key_variable(name, env, var) -> None:
    with serve(lambda p, b, h: json_response({"error": {"message": "invalid key"}}, 401)) as (
        url,
        seen,
    ):
        where = {"OPENAI_BASE_URL": f"{url}/v1"} if name == "openai" else {"OLLAMA_HOST": url}
        with pytest.raises(ProviderError) as info:
            make_embedder(name, {**env, **where}, "m").embed(["x"])
    assert var in str(info.value) and "invalid key" in str(info.value)
    assert seen.requests[0][2]["authorization"] == "Bearer bad"


def test_one_connection_for_all_batches() -> None:
    """One HTTP client is reused across batches: 5 batches travel over one kept-alive connection."""
    with serve(ollama_handler, keep_alive=True) as (url, seen):
        emb = make_embedder("ollama", {"OLLAMA_HOST": url}, "m")
        out = emb.embed([f"text {i}" for i in range(10)], batch_size=2)
    assert out.shape == (10, 8) and len(seen.requests) == 5
    assert len(set(seen.client_ports)) == 1

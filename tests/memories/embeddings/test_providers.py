"""The embedding providers: the real local model, and the openai provider against a stand-in endpoint."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memories import services
from memories.embeddings import EmbeddingError, get_provider
from memories.embeddings.local import LocalProvider
from memories.embeddings.openai import OpenAIProvider, embeddings_url
from memories.embeddings.queries import QueryCachedProvider
from memories.embeddings.store import embeddings_process_pending
from tests.memories.embeddings.stand_in import DIMENSION, StandIn, letters_vector, start_stand_in

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def local(local_embedding_model: LocalProvider) -> LocalProvider:
    return local_embedding_model


@pytest.fixture
def endpoint() -> Iterator[StandIn]:
    stand_in = start_stand_in()
    yield stand_in
    stand_in.stop()


def test_local_model_ranks_a_paraphrase_above_unrelated_memories(local: LocalProvider) -> None:
    memories = [
        "allergy: allergic to peanuts and tree nuts",
        "editor: uses vim with a handful of plugins",
        "pet: has a golden retriever called Miso",
        "cloud: deploys on Hetzner, avoids AWS",
    ]
    vectors = local.embed(memories)
    for question, expected in [
        ("which foods make her ill", 0),
        ("which text editor does he use", 1),
        ("what kind of dog do they have", 2),
        ("where are their servers hosted", 3),
    ]:
        scores = vectors @ local.embed([question])[0]
        assert int(np.argmax(scores)) == expected, (question, scores)


def test_local_vectors_are_float32_of_length_one(local: LocalProvider) -> None:
    vectors = local.embed(["prefers Python", "writes Rust on weekends", "prefers Python"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, local.dimension)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2])
    assert local.embed([]).shape == (0, local.dimension)


def test_local_model_is_made_once_per_process(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    assert get_provider() is get_provider()
    settings.MEMORYHUB_EMBEDDINGS = "off"
    assert get_provider() is None


def test_local_model_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local model tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    provider = LocalProvider()
    assert provider.embed(["uses vim"]).shape == (1, provider.dimension)


def test_a_missing_local_model_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(EmbeddingError, match="cannot be loaded") as caught:
        LocalProvider(model_dir=tmp_path / "nothing-here").embed(["uses vim"])
    assert caught.value.retryable is False


def test_openai_provider_posts_the_texts_with_the_key_and_model(endpoint: StandIn) -> None:
    provider = OpenAIProvider(url=endpoint.url, key="sk-test", model="nomic-embed-text", timeout=5)
    vectors = provider.embed(["abc", "xyz zz"])
    (request,) = endpoint.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {"model": "nomic-embed-text", "input": ["abc", "xyz zz"], "encoding_format": "float"}
    # In input order although the stand-in answers them reversed, and scaled to length 1.
    expected = np.array([letters_vector("abc"), letters_vector("xyz zz")], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    assert vectors.dtype == np.float32
    assert provider.dimension == DIMENSION
    assert provider.name == "openai:nomic-embed-text"


def test_openai_provider_sends_no_authorization_without_a_key(endpoint: StandIn) -> None:
    OpenAIProvider(url=f"{endpoint.url}/v1", key="", model="m", timeout=5).embed(["abc"])
    assert "authorization" not in endpoint.requests[0].headers


@pytest.mark.parametrize("status, retryable", [(503, True), (429, True), (401, False), (400, False)])
def test_openai_provider_error_statuses_say_whether_to_retry(endpoint: StandIn, status: int, retryable: bool) -> None:
    endpoint.status = status
    with pytest.raises(EmbeddingError, match=f"answered {status}") as caught:
        OpenAIProvider(url=endpoint.url, key="k", model="m", timeout=5).embed(["abc"])
    assert caught.value.retryable is retryable


def test_openai_provider_gives_up_after_its_timeout(endpoint: StandIn) -> None:
    endpoint.delay_seconds = 1.0
    with pytest.raises(EmbeddingError, match="did not answer in time") as caught:
        OpenAIProvider(url=endpoint.url, key="k", model="m", timeout=5).embed(["abc"], timeout=0.1)
    assert caught.value.retryable is True


def test_openai_provider_refuses_an_answer_that_is_not_embeddings(endpoint: StandIn) -> None:
    endpoint.reply_override = b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}]}'
    with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
        OpenAIProvider(url=endpoint.url, key="k", model="m", timeout=5).embed(["abc", "def"])
    endpoint.reply_override = b"<html>proxy error</html>"
    with pytest.raises(EmbeddingError, match="not an embeddings list"):
        OpenAIProvider(url=endpoint.url, key="k", model="m", timeout=5).embed(["abc"])


def test_an_unreachable_endpoint_is_a_retryable_error(endpoint: StandIn) -> None:
    url = endpoint.url
    endpoint.stop()
    with pytest.raises(EmbeddingError, match="cannot be reached") as caught:
        OpenAIProvider(url=url, key="k", model="m", timeout=2).embed(["abc"])
    assert caught.value.retryable is True


def test_a_query_asked_again_is_not_sent_again_while_batches_and_failures_are_never_kept(endpoint: StandIn) -> None:
    provider = QueryCachedProvider(OpenAIProvider(url=endpoint.url, key="k", model="m", timeout=5), size=2)
    first = provider.embed(["which editor"])
    assert np.array_equal(provider.embed(["which editor"]), first)
    assert endpoint.texts() == ["which editor"]
    provider.embed(["abc", "def"])
    provider.embed(["abc", "def"])
    assert endpoint.texts()[1:] == ["abc", "def", "abc", "def"]
    endpoint.status = 503
    with pytest.raises(EmbeddingError):
        provider.embed(["what pet"])
    endpoint.status = 200
    provider.embed(["what pet"])
    provider.embed(["which shell"])  # the third text: the oldest, "which editor", is forgotten
    provider.embed(["which editor"])
    assert endpoint.texts()[5:] == ["what pet", "what pet", "which shell", "which editor"]
    assert provider.queries_kept() == 2


def test_an_agent_asking_with_the_same_message_each_turn_has_it_embedded_once(
    remote_embeddings: StandIn, owner, owner_api
) -> None:
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim")
    embeddings_process_pending()
    for _ in range(3):
        response = owner_api.get("/api/v1/users/alice/context", {"q": "which editor do I use"})
        assert response.status_code == 200 and "uses vim" in response.json()["text"]
    assert owner_api.get("/api/v1/users/alice/memories/", {"q": "which editor do I use"})["X-MemoryHub-Ranking"] == (
        "hybrid"
    )
    assert remote_embeddings.texts() == ["editor: uses vim", "which editor do I use"]


@pytest.mark.parametrize(
    "base, expected",
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434/v1/embeddings"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/embeddings"),
        ("http://llama:8080/v1/embeddings", "http://llama:8080/v1/embeddings"),
    ],
)
def test_the_endpoint_url_may_be_given_with_or_without_v1(base: str, expected: str) -> None:
    assert embeddings_url(base) == expected


@pytest.mark.process
@pytest.mark.parametrize(
    "environment, message",
    [
        ({"MEMORYHUB_EMBEDDINGS": "faiss"}, "MEMORYHUB_EMBEDDINGS must be one of off, local, openai"),
        ({"MEMORYHUB_EMBEDDINGS": "openai"}, "needs MEMORYHUB_EMBEDDINGS_URL"),
        (
            {"MEMORYHUB_EMBEDDINGS": "openai", "MEMORYHUB_EMBEDDINGS_URL": "http://h/v1"},
            "needs MEMORYHUB_EMBEDDINGS_MODEL",
        ),
        ({"MEMORYHUB_EMBEDDINGS_TIMEOUT": "soon"}, "MEMORYHUB_EMBEDDINGS_TIMEOUT must be a number"),
    ],
)
def test_bad_embedding_settings_stop_the_start(environment: dict[str, str], message: str) -> None:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("MEMORYHUB_EMBEDDINGS")}
    clean.update(environment, SECRET_KEY="k", DJANGO_SETTINGS_MODULE="memoryhub.settings")
    code = "import django; django.setup()"
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )
    assert loaded.returncode != 0
    assert "ImproperlyConfigured" in loaded.stderr and message in loaded.stderr

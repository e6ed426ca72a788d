"""Similarities about the user's centre: entries written alike do not crowd out the one that answers."""

import numpy as np
import pytest

from memories import services
from memories.embeddings import get_provider
from memories.embeddings.base import normalized
from memories.embeddings.store import embeddings_process_pending
from memories.search.vectors import CENTRE_PRIOR, MIN_SIMILARITY, centred, semantic_ranked


@pytest.fixture(autouse=True)
def _local_embeddings(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"


def test_look_alike_entries_no_longer_outrank_the_answer() -> None:
    rng = np.random.default_rng(7)
    dimension, common = 64, np.zeros(64)
    common[0] = 1.0
    # 500 entries written alike (a strong shared direction), and one answer with little of it.
    look_alike = normalized(3.0 * common + rng.normal(size=(500, dimension)) * 0.15)
    answer_part = normalized(rng.normal(size=(1, dimension)))[0]
    answer = normalized((0.5 * common + answer_part)[None, :])
    matrix = np.vstack([look_alike, answer])
    # A query that means the answer and, like every text, has some of the shared direction.
    query = normalized((common + 0.3 * answer_part)[None, :])[0]

    assert int(np.argmax(matrix @ query)) != len(matrix) - 1  # plain cosines: a look-alike comes first

    about_centre, centre = centred(matrix)
    (query_about_centre,) = normalized(query[None, :] - centre)
    assert int(np.argmax(about_centre @ query_about_centre)) == len(matrix) - 1
    assert np.allclose(np.linalg.norm(about_centre, axis=1), 1.0, atol=1e-5)


def test_the_centre_is_weighed_by_how_many_vectors_the_user_has() -> None:
    one = normalized(np.array([[1.0, 2.0, 3.0]]))
    about_centre, centre = centred(one)
    assert np.allclose(centre, one[0] / (1 + CENTRE_PRIOR))
    # One entry keeps its direction: it is not centred away to nothing.
    assert np.allclose(about_centre, one, atol=1e-5)
    empty, no_centre = centred(np.zeros((0, 3), dtype=np.float32))
    assert empty.shape == (0, 3) and not no_centre.any()


def test_a_user_with_one_entry_still_finds_it_by_meaning(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
    embeddings_process_pending()
    provider = get_provider()
    ranked = semantic_ranked(
        owner=owner, uid="alice", model=provider.name, query_vector=provider.embed(["what kind of dog"])[0], limit=3
    )
    assert len(ranked) == 1 and ranked[0][1] >= MIN_SIMILARITY

"""Crowding: an entry with many look-alikes gives way to the one memory that says something alone."""

import numpy as np
import pytest

from memories import services
from memories.embeddings import get_provider
from memories.embeddings.base import normalized
from memories.embeddings.store import embeddings_process_pending
from memories.models import MemoryEntry
from memories.search import vectors


@pytest.fixture(autouse=True)
def _local_embeddings(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"


def _look_alikes_and_an_answer(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """300 rows about all sorts, 40 written alike that are all a little like the query, and one answer a
    little less like it than they are but like nothing else; and the query."""
    dimension = 64
    topic, answer_part = normalized(rng.normal(size=(2, dimension)))
    various = normalized(rng.normal(size=(300, dimension)))
    look_alike = normalized(topic + rng.normal(size=(40, dimension)) * 0.05)
    answer = normalized(answer_part[None, :])
    query = normalized((0.58 * topic + 0.42 * answer_part)[None, :])[0]
    return np.vstack([various, look_alike, answer]), query


def test_the_answer_that_stands_alone_outranks_look_alikes_nearer_the_query() -> None:
    matrix, query = _look_alikes_and_an_answer(np.random.default_rng(3))
    answer_id = len(matrix) - 1
    read = vectors.user_vectors_about_centre(np.arange(len(matrix)), matrix)
    scores = vectors.similarities(read.matrix, vectors.query_about(read.centre, query))
    # By similarity alone, every look-alike comes before the answer.
    assert (scores[300:-1] > scores[-1]).all()

    nearest = vectors.nearest_in(read, query, limit=5, min_similarity=-1.0)

    assert nearest.entries[0][0] == answer_id
    # Each result still shows its own similarity, and the mean and spread are those of the similarities.
    assert nearest.entries[0][1] == pytest.approx(float(scores[-1]))
    assert nearest.mean == pytest.approx(float(scores.mean()), abs=1e-6)
    assert nearest.spread == pytest.approx(float(scores.std()), abs=1e-6)
    plain = vectors.ranked_of(read.ids, scores, limit=5, min_similarity=-1.0)
    assert answer_id not in [entry_id for entry_id, _ in plain]


def test_the_floor_holds_the_similarity_not_the_crowded_score() -> None:
    ids = np.array([10, 11, 12])
    scores = np.array([0.5, 0.14, 0.3], dtype=np.float32)
    crowding = np.array([0.45, 0.0, 0.0], dtype=np.float32)

    nearest = vectors.ranked_of(ids, scores, limit=3, min_similarity=0.15, crowding=crowding)

    # 11 is below the floor however little it is crowded; 10 passes it, crowded below 12.
    assert [entry_id for entry_id, _ in nearest] == [12, 10]
    assert [similarity for _, similarity in nearest] == pytest.approx([0.3, 0.5])


def test_an_entry_is_not_its_own_neighbour() -> None:
    rng = np.random.default_rng(5)
    alone = normalized(rng.normal(size=(8, 32)))
    twins = normalized(np.repeat(rng.normal(size=(1, 32)), 4, axis=0))
    crowding = vectors.crowding_of(np.vstack([alone, twins]))
    # Each twin has three others exactly like it; the lone rows have nothing near.
    assert np.allclose(crowding[8:], 1.0, atol=1e-5)
    assert (crowding[:8] < 0.6).all()


def test_a_user_with_too_few_entries_is_not_crowded() -> None:
    three = normalized(np.repeat(np.ones((1, 8)), 3, axis=0))
    assert not vectors.crowding_of(three).any()
    assert vectors.crowding_of(np.zeros((0, 8), dtype=np.float32)).shape == (0,)


def test_neighbours_are_sought_among_as_many_references_spread_evenly_once_there_are_many() -> None:
    rng = np.random.default_rng(11)
    rows = vectors.CROWDING_REFERENCES * 2 + 500
    matrix = normalized(rng.normal(size=(rows, 16)))

    crowding = vectors.crowding_of(matrix)

    positions = vectors.crowding_references(rows)
    assert positions[0] == 0 and positions[-1] == rows - 1
    for row in (0, 1, int(positions[7]), rows - 1):
        others = [position for position in positions if position != row]
        similarities = np.sort(matrix[others] @ matrix[row])[-vectors.CROWDING_NEIGHBOURS :]
        assert crowding[row] == pytest.approx(float(similarities.mean()), abs=1e-5)


@pytest.mark.parametrize("rows", [4, 1024, 1025, 2049, 5000])
def test_a_user_past_the_references_has_that_many_of_them_whatever_their_size(rows: int) -> None:
    positions = vectors.crowding_references(rows)
    assert len(positions) == min(rows, vectors.CROWDING_REFERENCES)
    assert len(set(positions.tolist())) == len(positions)


def test_the_order_the_database_reads_the_vectors_in_changes_nothing() -> None:
    rng = np.random.default_rng(17)
    ids = np.arange(100, 100 + 2500)
    matrix = normalized(rng.normal(size=(2500, 16)))
    shuffled = rng.permutation(2500)

    in_order = vectors.user_vectors_about_centre(ids, matrix)
    read_otherwise = vectors.user_vectors_about_centre(ids[shuffled], matrix[shuffled])

    assert np.array_equal(in_order.ids, read_otherwise.ids)
    assert np.array_equal(in_order.crowding, read_otherwise.crowding)
    assert np.array_equal(in_order.matrix, read_otherwise.matrix)


def test_the_crowding_is_weighed_like_the_centre_and_the_same_on_every_read() -> None:
    rng = np.random.default_rng(13)
    matrix = normalized(rng.normal(size=(40, 16)))
    ids = np.arange(40)

    first = vectors.user_vectors_about_centre(ids, matrix)
    again = vectors.user_vectors_about_centre(ids, matrix)

    weight = vectors.CROWDING_WEIGHT * 40 / (40 + vectors.CENTRE_PRIOR)
    assert np.allclose(first.crowding, weight * vectors.crowding_of(first.matrix))
    assert np.array_equal(first.crowding, again.crowding)


def test_the_search_reads_the_crowding_with_the_vectors_and_keeps_it_until_they_change(owner) -> None:
    operations = [
        services.BatchOperation(op="put", key=f"standup_{number}", value="daily standup at 9:30 with the team")
        for number in range(20)
    ]
    services.entries_batch(owner=owner, uid="alice", operations=operations)
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
    embeddings_process_pending()
    provider = get_provider()
    assert provider is not None

    read = vectors.user_matrix(owner=owner, uid="alice", model=provider.name)

    keys = dict(MemoryEntry.objects.filter(owner=owner, uid="alice").values_list("id", "key"))
    crowding = {keys[int(entry_id)]: float(value) for entry_id, value in zip(read.ids, read.crowding, strict=True)}
    # Twenty copies of one note crowd each other; the dog is like none of them.
    assert min(crowding[f"standup_{number}"] for number in range(20)) > crowding["pet"] + 0.2
    assert vectors.user_matrix(owner=owner, uid="alice", model=provider.name) is read

    services.entry_put(owner=owner, uid="alice", key="standup_0", value="moved to Lisbon in May")
    embeddings_process_pending()
    changed = vectors.user_matrix(owner=owner, uid="alice", model=provider.name)
    assert changed is not read
    moved = dict(zip((keys[int(entry_id)] for entry_id in changed.ids), changed.crowding, strict=True))
    assert moved["standup_0"] < crowding["standup_0"] - 0.2

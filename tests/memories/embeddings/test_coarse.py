"""A search compares the coarse rows first and the exact ones only where the coarse cannot decide: the nearest
it finds are those a scan of every row finds, with the same similarities, mean and spread."""

import numpy as np
import pytest

from evaluation.recall_set import recall_set_load
from memories.embeddings import get_provider
from memories.embeddings.base import entry_text, normalized
from memories.search import vectors


@pytest.fixture(autouse=True)
def _coarse_for_every_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coarse pass for users of any size (by default a user of few rows is compared row by row)."""
    monkeypatch.setattr(vectors, "COARSE_ROWS_PER_DIMENSION", 0)


def _full_scan(read: vectors.UserVectors, query_vector: np.ndarray, *, limit: int, min_similarity: float):
    """What a scan of every row answers: every similarity, ranked."""
    scores = vectors.similarities(read.matrix, vectors.query_about(read.centre, query_vector))
    ranked = vectors.ranked_of(read.ids, scores, limit=limit, min_similarity=min_similarity, crowding=read.crowding)
    return ranked, scores


def _rows_compared(read: vectors.UserVectors, query_vector: np.ndarray, *, limit: int, min_similarity: float) -> int:
    query = vectors.query_about(read.centre, query_vector)
    assert read.coarse is not None
    return len(vectors.candidates_of(read.coarse, read.crowding, query, limit=limit, min_similarity=min_similarity))


def _assert_same_as_full_scan(read, query_vector, *, limit: int, min_similarity: float) -> None:
    assert read.coarse is not None  # the coarse pass, not the row by row comparison
    nearest = vectors.nearest_in(read, query_vector, limit=limit, min_similarity=min_similarity)
    ranked, scores = _full_scan(read, query_vector, limit=limit, min_similarity=min_similarity)
    assert nearest.entries == ranked
    assert nearest.mean == pytest.approx(float(scores.mean()), abs=1e-5)
    assert nearest.spread == pytest.approx(float(scores.std()), abs=1e-5)
    assert nearest.rows == len(read.ids)


def test_on_the_model_s_vectors_the_nearest_are_those_of_a_scan_of_every_row(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    provider = get_provider()
    assert provider is not None
    recall_set = recall_set_load()
    texts = [entry_text(key=memory.key, value=memory.value) for memory in recall_set.memories]
    read = vectors.user_vectors_about_centre(np.arange(len(texts)) * 7 + 3, provider.embed(texts))
    questions = provider.embed([question.text for question in recall_set.questions])
    compared = []
    for query_vector in questions:
        for limit, min_similarity in ((20, vectors.MIN_SIMILARITY), (5, vectors.MIN_SIMILARITY), (50, -1.0)):
            _assert_same_as_full_scan(read, query_vector, limit=limit, min_similarity=min_similarity)
        compared.append(_rows_compared(read, query_vector, limit=20, min_similarity=vectors.MIN_SIMILARITY))
    # The point of it: most rows are ruled out by their coarse similarity alone.
    assert np.median(compared) < len(texts) / 4


@pytest.mark.parametrize("peak", [vectors.COARSE_PEAK, 7, 1])
@pytest.mark.parametrize("seed", range(4))
def test_on_rows_alike_duplicated_or_empty_the_nearest_are_those_of_a_scan_of_every_row(
    seed: int, peak: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However coarse the rows are kept (down to -1, 0 and 1), only how many rows are compared exactly changes.
    monkeypatch.setattr(vectors, "COARSE_PEAK", peak)
    rng = np.random.default_rng(seed)
    dimension = int(rng.choice([16, 64, 384]))
    topics = normalized(rng.normal(size=(5, dimension)))
    alike = normalized(
        topics[rng.integers(0, 5, size=600)] + rng.normal(size=(600, dimension)) * rng.uniform(0.02, 0.6)
    )
    duplicated = np.repeat(alike[:3], 40, axis=0)
    # Rows a hair apart: their similarities differ by less than what their coarse ones may be off by.
    near = normalized(np.repeat(alike[3:6], 100, axis=0) + rng.normal(size=(300, dimension)) * 1e-3)
    various = normalized(rng.normal(size=(200, dimension)))
    empty = np.zeros((2, dimension), dtype=np.float32)
    matrix = np.vstack([alike, duplicated, near, various, empty]).astype(np.float32)
    ids = rng.permutation(len(matrix)) + 1
    read = vectors.user_vectors_about_centre(ids, matrix)
    queries = np.vstack(
        [normalized(rng.normal(size=(10, dimension))), alike[:6], near[::50], duplicated[:1], read.centre[None, :]]
    )
    for query_vector in queries:
        for limit in (1, 3, 20, 200, len(matrix) + 5):
            for min_similarity in (vectors.MIN_SIMILARITY, 0.0, -1.0, 0.9):
                _assert_same_as_full_scan(read, query_vector, limit=limit, min_similarity=min_similarity)


def test_the_coarse_similarity_is_never_further_from_the_exact_one_than_its_bound() -> None:
    rng = np.random.default_rng(11)
    rows = normalized(rng.normal(size=(2000, 384)) * rng.uniform(0.01, 3.0, size=(1, 384)))
    coarse = vectors.coarse_of(rows)
    lost = rows.astype(np.float64) - coarse.scales[:, None] * coarse.rows
    # Queries at random, and queries along what rows lost to their rounding (where the bound is nearly reached).
    queries = np.vstack([normalized(rng.normal(size=(20, 384))), normalized(lost[:20])])
    reached = []
    for query in queries:
        approximate, bound = vectors.coarse_similarities(coarse, query)
        off = np.abs(rows.astype(np.float64) @ query.astype(np.float64) - approximate)
        assert (off <= bound).all()
        reached.append((off / bound).max())
        # And the bound is tight enough to be of use: a few hundredths.
        assert bound.max() < 0.05
    assert max(reached) > 0.3


def test_a_row_is_left_out_only_where_its_coarse_similarity_s_bound_rules_it_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Coarse similarities as far off as their bound allows, up or down at random: the worst a quantizer may do.
    rng = np.random.default_rng(7)
    topics = normalized(rng.normal(size=(4, 64)))
    matrix = normalized(topics[rng.integers(0, 4, size=3000)] + rng.normal(size=(3000, 64)) * 0.3)
    read = vectors.user_vectors_about_centre(np.arange(3000), matrix)

    def off_by_their_bound(coarse: vectors.Coarse, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bound = rng.uniform(0.001, 0.03, size=len(matrix))
        exact = read.matrix.astype(np.float64) @ query.astype(np.float64)
        return exact + bound * rng.choice([-0.9999, 0.9999], size=len(matrix)), bound

    monkeypatch.setattr(vectors, "coarse_similarities", off_by_their_bound)
    compared = []
    for query_vector in np.vstack([topics, normalized(rng.normal(size=(8, 64))), matrix[:8]]):
        for limit, min_similarity in (
            (1, vectors.MIN_SIMILARITY),
            (20, vectors.MIN_SIMILARITY),
            (20, -1.0),
            (100, 0.3),
        ):
            _assert_same_as_full_scan(read, query_vector, limit=limit, min_similarity=min_similarity)
            compared.append(_rows_compared(read, query_vector, limit=limit, min_similarity=min_similarity))
    assert min(compared) < len(matrix) / 4


def test_rows_not_quite_of_length_one_are_bounded_by_their_own_length() -> None:
    # Rows so small that scaling them to length 1 leaves them longer (their squares are subnormal).
    tiny = np.float32(4.27e-23)
    matrix = np.vstack([np.full(16, tiny), np.full(16, -tiny)]).astype(np.float32)
    read = vectors.user_vectors_about_centre(np.array([1, 2]), matrix)
    query_vector = np.full(16, 0.49, dtype=np.float32)
    query_vector[0] = 127.0
    query_vector = normalized(query_vector[None, :])[0]
    for min_similarity in (0.3, 0.3008, 0.31):
        _assert_same_as_full_scan(read, query_vector, limit=1, min_similarity=min_similarity)


def test_a_user_of_few_vectors_for_their_dimension_keeps_no_coarse_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "COARSE_ROWS_PER_DIMENSION", 4)
    rng = np.random.default_rng(2)
    few = vectors.user_vectors_about_centre(np.arange(100), normalized(rng.normal(size=(100, 384))))
    many = vectors.user_vectors_about_centre(np.arange(2000), normalized(rng.normal(size=(2000, 96))))
    # Compared row by row, the few cost the cache their rows alone, not a 384 x 384 covariance (590 kB).
    assert few.coarse is None and few.nbytes < 200_000
    assert many.coarse is not None
    for read, dimension in ((few, 384), (many, 96)):
        for query_vector in normalized(rng.normal(size=(5, dimension))):
            nearest = vectors.nearest_in(read, query_vector, limit=10, min_similarity=0.0)
            scores = vectors.similarities(read.matrix, vectors.query_about(read.centre, query_vector))
            ranked = vectors.ranked_of(read.ids, scores, limit=10, min_similarity=0.0, crowding=read.crowding)
            assert nearest.entries == ranked
            assert nearest.spread == pytest.approx(float(scores.std()), abs=1e-5)

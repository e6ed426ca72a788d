"""The rubric, at every boundary a grade or a tier changes."""

import pytest

from evaluation.scoring import (
    OperationResult,
    grade_for,
    latency_points,
    percentile,
    recommendation,
    score_backend,
    score_unavailable,
)


def operations(
    put_ok: bool = True, get_ok: bool = True, find_ok: bool = True, ms: float = 1.0
) -> dict[str, OperationResult]:
    return {
        "put": OperationResult(ok=put_ok, latencies_ms=(ms,)),
        "get": OperationResult(ok=get_ok, latencies_ms=(ms,)),
        "find": OperationResult(ok=find_ok, latencies_ms=(ms,)),
    }


@pytest.mark.parametrize(
    ("score", "grade"),
    [(100, "A"), (80, "A"), (79, "B"), (60, "B"), (59, "C"), (40, "C"), (39, "D"), (20, "D"), (19, "F"), (0, "F")],
)
def test_each_grade_band_starts_where_the_rubric_says(score: int, grade: str):
    assert grade_for(score) == grade


@pytest.mark.parametrize(
    ("mean_ms", "points"),
    [(0.0, 20), (9.999, 20), (10.0, 15), (49.999, 15), (50.0, 10), (199.999, 10), (200.0, 5), (5000.0, 5)],
)
def test_each_latency_tier_starts_where_the_rubric_says(mean_ms: float, points: int):
    assert latency_points(mean_ms) == points


def test_a_fast_local_backend_that_does_everything_scores_100_and_an_a():
    graded = score_backend(name="local", cloud=False, reason="", operations=operations())
    assert (graded.score, graded.grade) == (100, "A")


def test_a_cloud_costs_15_points_of_privacy():
    graded = score_backend(name="honcho", cloud=True, reason="", operations=operations(ms=60.0))
    assert (graded.score, graded.grade) == (20 + 15 + 15 + 10 + 10 + 5, "B")


def test_null_scores_its_put_and_speed_but_not_get_or_find():
    graded = score_backend(name="null", cloud=False, reason="", operations=operations(get_ok=False, find_ok=False))
    assert (graded.score, graded.grade) == (75, "B")


def test_the_latency_tier_reads_the_mean_of_the_medians_not_the_slow_tail():
    slow_tail = OperationResult(ok=True, latencies_ms=(1.0,) * 19 + (900.0,))
    graded = score_backend(
        name="local", cloud=False, reason="", operations={"put": slow_tail, "get": slow_tail, "find": slow_tail}
    )
    assert graded.latency_ms == 1.0
    assert graded.score == 100


def test_the_mean_of_medians_at_a_boundary_drops_a_tier():
    ops = {
        "put": OperationResult(ok=True, latencies_ms=(5.0,)),
        "get": OperationResult(ok=True, latencies_ms=(10.0,)),
        "find": OperationResult(ok=True, latencies_ms=(15.0,)),
    }
    assert score_backend(name="local", cloud=False, reason="", operations=ops).score == 95


def test_an_unavailable_backend_scores_0_and_an_f_with_its_reason():
    graded = score_unavailable(name="honcho", cloud=True, reason="could not reach Honcho")
    assert (graded.score, graded.grade, graded.available, graded.reason) == (0, "F", False, "could not reach Honcho")


def test_percentiles_interpolate_between_samples():
    samples = [float(number) for number in range(1, 21)]
    assert percentile(samples, 0.5) == 10.5
    assert percentile(samples, 0.95) == pytest.approx(19.05)
    assert percentile([], 0.5) == 0.0


def test_the_recommendation_names_the_best_available_backend_other_than_null():
    scores = [
        score_backend(name="null", cloud=False, reason="", operations=operations(get_ok=False, find_ok=False)),
        score_backend(name="local", cloud=False, reason="", operations=operations()),
        score_unavailable(name="honcho", cloud=True, reason="down"),
    ]
    assert recommendation(scores) == "Best: local (100pts, A)"


def test_a_cloud_recommendation_carries_the_warning():
    scores = [
        score_unavailable(name="local", cloud=False, reason="database down"),
        score_backend(name="honcho", cloud=True, reason="", operations=operations(ms=60.0)),
    ]
    assert recommendation(scores) == "Best: honcho (75pts, B) WARNING: cloud. RECOMMEND local."


def test_with_nothing_but_null_there_is_no_recommendation():
    scores = [score_backend(name="null", cloud=False, reason="", operations=operations())]
    assert recommendation(scores) == "None"


def test_a_tie_goes_to_the_backend_listed_first():
    scores = [
        score_backend(name="local", cloud=False, reason="", operations=operations()),
        score_backend(name="honcho", cloud=False, reason="", operations=operations()),
    ]
    assert recommendation(scores) == "Best: local (100pts, A)"

"""The one percentile every benchmark reports: nearest rank, always a time that was measured."""

import pytest

from benchmarks.timing import Samples, percentile, timed


def test_the_median_of_an_even_count_is_the_lower_middle_sample() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.50) == 2.0


def test_p95_of_twenty_samples_is_the_nineteenth_smallest() -> None:
    samples = [float(number) for number in range(20, 0, -1)]
    assert percentile(samples, 0.95) == 19.0
    assert percentile(samples, 1.0) == 20.0


def test_one_sample_is_every_percentile() -> None:
    assert percentile([7.0], 0.50) == percentile([7.0], 0.95) == 7.0


def test_no_samples_or_a_fraction_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="fraction"):
        percentile([1.0], 0.0)


def test_samples_report_milliseconds() -> None:
    samples = Samples()
    for seconds in (0.001, 0.002, 0.003):
        samples.add(seconds)
    assert samples.p50_ms == pytest.approx(2.0)
    assert samples.p95_ms == pytest.approx(3.0)


def test_timed_returns_the_result_and_a_duration() -> None:
    result, seconds = timed(lambda: sum(range(1000)))
    assert result == 499500
    assert 0 <= seconds < 1

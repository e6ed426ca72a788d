"""How every benchmark times a call and summarises the samples: one clock, one percentile."""

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

Result = TypeVar("Result")


def timed(call: Callable[[], Result]) -> tuple[Result, float]:
    """Call call() once; return what it returned and the seconds it took (perf_counter)."""
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest sample that at least `fraction` of the samples do not exceed.

    p50 of [1, 2, 3, 4] is 2, p95 of 20 samples is the 19th smallest, p100 is the largest. No
    interpolation, so the figure is always a time that was measured.
    """
    if not samples:
        raise ValueError("no samples")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1]; got {fraction}")
    ordered = sorted(samples)
    return ordered[math.ceil(fraction * len(ordered)) - 1]


@dataclass
class Samples:
    """Durations of one operation, in seconds."""

    seconds: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        self.seconds.append(seconds)

    @property
    def p50_ms(self) -> float:
        return percentile(self.seconds, 0.50) * 1000

    @property
    def p95_ms(self) -> float:
        return percentile(self.seconds, 0.95) * 1000


@dataclass(frozen=True)
class Timings:
    """Durations of one labelled operation, in milliseconds, as the write-cost benchmarks report them."""

    label: str
    samples_ms: list[float]

    @property
    def p50(self) -> float:
        return percentile(self.samples_ms, 0.50)

    @property
    def p95(self) -> float:
        return percentile(self.samples_ms, 0.95)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples_ms)

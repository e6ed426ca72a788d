"""The rubric that grades a backend: pure functions of what was measured, no I/O.

The agent-side module's rubric, exactly: 20 points for being available, 15 for a working put, 15
for get, 10 for find; a latency tier from the mean of the three operations' latencies (under 10 ms
20, under 50 ms 15, under 200 ms 10, else 5); privacy 20 when local, 5 when a cloud. Grades: A from
80, B from 60, C from 40, D from 20, else F. An unavailable backend scores 0, grade F.

Beyond it: each operation is timed many times, and the latency used is the mean of the three
medians (p50), so one slow call does not decide a tier.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

POINTS_AVAILABLE = 20
POINTS_PUT = 15
POINTS_GET = 15
POINTS_FIND = 10
# (below this many milliseconds, these points), fastest first; slower than all of them: LATENCY_FLOOR.
LATENCY_TIERS: tuple[tuple[float, int], ...] = ((10.0, 20), (50.0, 15), (200.0, 10))
LATENCY_FLOOR = 5
PRIVACY_LOCAL = 20
PRIVACY_CLOUD = 5
# (at least this score, this grade), best first; below all of them: FAILING_GRADE.
GRADE_BANDS: tuple[tuple[int, str], ...] = ((80, "A"), (60, "B"), (40, "C"), (20, "D"))
FAILING_GRADE = "F"
GRADES = ("A", "B", "C", "D", "F")
OPERATIONS = ("put", "get", "find")
NULL_BACKEND = "null"
CLOUD_WARNING = " WARNING: cloud. RECOMMEND local."
NO_RECOMMENDATION = "None"


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The value below which `fraction` of the samples fall, interpolating between neighbours."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * fraction
    lower = math.floor(rank)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (rank - lower)


@dataclass(frozen=True)
class OperationResult:
    """One operation repeated: whether every call worked, and how long each took (ms)."""

    ok: bool
    latencies_ms: tuple[float, ...] = ()
    error: str = ""

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p95_ms(self) -> float:
        return percentile(self.latencies_ms, 0.95)


@dataclass(frozen=True)
class BackendScore:
    """A backend's grade and everything it was graded on."""

    name: str
    cloud: bool
    available: bool
    reason: str
    score: int
    grade: str
    operations: dict[str, OperationResult] = field(default_factory=dict)
    # Reported beside the rubric, never scored: the share of the recall probe's questions answered
    # in find's first RECALL_AT results; None when the backend is unavailable or the probe failed.
    recall_at_5: float | None = None

    @property
    def latency_ms(self) -> float | None:
        """The mean of the operations' medians, the figure the latency tier is read from."""
        if not self.operations:
            return None
        return mean_latency_ms(self.operations)


def latency_points(mean_ms: float) -> int:
    for limit_ms, points in LATENCY_TIERS:
        if mean_ms < limit_ms:
            return points
    return LATENCY_FLOOR


def privacy_points(*, cloud: bool) -> int:
    return PRIVACY_CLOUD if cloud else PRIVACY_LOCAL


def grade_for(score: int) -> str:
    for lowest, grade in GRADE_BANDS:
        if score >= lowest:
            return grade
    return FAILING_GRADE


def mean_latency_ms(operations: dict[str, OperationResult]) -> float:
    return sum(operations[name].p50_ms for name in OPERATIONS) / len(OPERATIONS)


def score_backend(*, name: str, cloud: bool, reason: str, operations: dict[str, OperationResult]) -> BackendScore:
    """Grade an available backend from its put, get and find results."""
    score = (
        POINTS_AVAILABLE
        + (POINTS_PUT if operations["put"].ok else 0)
        + (POINTS_GET if operations["get"].ok else 0)
        + (POINTS_FIND if operations["find"].ok else 0)
        + latency_points(mean_latency_ms(operations))
        + privacy_points(cloud=cloud)
    )
    return BackendScore(
        name=name,
        cloud=cloud,
        available=True,
        reason=reason,
        score=score,
        grade=grade_for(score),
        operations=operations,
    )


def score_unavailable(*, name: str, cloud: bool, reason: str) -> BackendScore:
    """An unavailable backend: 0 points, grade F, and why."""
    return BackendScore(name=name, cloud=cloud, available=False, reason=reason, score=0, grade=FAILING_GRADE)


class Graded(Protocol):
    """What picking a recommendation reads: a BackendScore, or a stored BackendResult (read only)."""

    @property
    def name(self) -> str: ...
    @property
    def available(self) -> bool: ...
    @property
    def score(self) -> int: ...


GradedT = TypeVar("GradedT", bound=Graded)


def recommended(scores: Sequence[GradedT]) -> GradedT | None:
    """The best available backend other than null, earlier ones winning ties; None when there is none."""
    candidates = [score for score in scores if score.available and score.name != NULL_BACKEND]
    if not candidates:
        return None
    return max(candidates, key=lambda score: score.score)


def recommendation(scores: Sequence[BackendScore]) -> str:
    """The best available backend other than null ("Best: local (100pts, A)"), earlier ones winning
    ties, with the agent-side module's warning when it is a cloud; "None" when there is none."""
    best = recommended(scores)
    if best is None:
        return NO_RECOMMENDATION
    text = f"Best: {best.name} ({best.score}pts, {best.grade})"
    if best.cloud:
        text += CLOUD_WARNING
    return text

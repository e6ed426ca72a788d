"""The evaluations page's charts: score and p50 latency per backend across runs, as SVG geometry.

Pure functions of stored runs (no queries: runs come with their results prefetched). They return
shapes as ready-made coordinate strings; templates/evaluation/_chart.html draws them, so every
name and label that reaches the SVG passes through the template's escaping.

Runs are spaced evenly from left to right, oldest first. Scores use a linear 0-100 axis whose grid
lines are the grade bands; latency (the mean of a result's put, get and find medians, the figure
the rubric grades) uses a logarithmic axis, since null answers in microseconds and a cloud in tens
of milliseconds. An unavailable backend has a score (0) but no latency: its latency line breaks there.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils import timezone
from django.utils.dateformat import format as date_format

from evaluation.models import BackendResult, EvaluationRun
from evaluation.scoring import GRADE_BANDS, OPERATIONS
from memories.backends import BACKENDS

WIDTH, HEIGHT = 400, 220
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 52.0, 376.0, 14.0, 188.0
MARKER_RADIUS = 4.5
# Fastest latency drawn (1 µs): the null backend's medians round down to about this.
LATENCY_FLOOR_MS = 0.001
MAX_SCORE = 100
# Colours that stay apart for common colour blindness, each with its own marker shape as well.
COLOURS = ("#5b6472", "#1f5fbf", "#c2410c", "#7c3aed", "#0f766e", "#b3261e")
SHAPES = ("circle", "square", "diamond", "triangle")
RUN_TIME_FORMAT = "j M H:i"


@dataclass(frozen=True)
class SeriesStyle:
    name: str
    colour: str
    shape: str

    @property
    def legend_path(self) -> str:
        """The marker centred in a 16 x 16 box, for the legend."""
        return marker_path(self.shape, 8.0, 8.0, 6.0)


@dataclass(frozen=True)
class ChartPoint:
    path: str
    label: str


@dataclass(frozen=True)
class ChartSeries:
    style: SeriesStyle
    points: list[ChartPoint]
    # Polyline coordinate strings, one per stretch of two or more consecutive runs with a value.
    lines: list[str]


@dataclass(frozen=True)
class AxisTick:
    y: str
    label: str


@dataclass(frozen=True)
class AxisLabel:
    x: str
    label: str
    anchor: str


@dataclass(frozen=True)
class Chart:
    slug: str
    title: str
    description: str
    unit: str
    ticks: list[AxisTick]
    bands: list[AxisTick]
    run_labels: list[AxisLabel]
    series: list[ChartSeries]
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: float = PLOT_LEFT
    plot_right: float = PLOT_RIGHT
    plot_top: float = PLOT_TOP
    plot_bottom: float = PLOT_BOTTOM

    @property
    def tick_label_x(self) -> str:
        return _number(self.plot_left - 6)

    @property
    def band_label_x(self) -> str:
        return _number(self.plot_right + 8)

    @property
    def run_label_y(self) -> str:
        return _number(self.height - 10)


def _number(value: float) -> str:
    return f"{value:.1f}"


def marker_path(shape: str, x: float, y: float, radius: float = MARKER_RADIUS) -> str:
    """An SVG path drawing one marker of shape centred on (x, y)."""
    if shape == "square":
        side = radius * 1.7
        return f"M{_number(x - side / 2)} {_number(y - side / 2)}h{_number(side)}v{_number(side)}h{_number(-side)}Z"
    if shape == "diamond":
        reach = radius * 1.3
        return (
            f"M{_number(x)} {_number(y - reach)}l{_number(reach)} {_number(reach)}"
            f"l{_number(-reach)} {_number(reach)}l{_number(-reach)} {_number(-reach)}Z"
        )
    if shape == "triangle":
        reach = radius * 1.3
        return f"M{_number(x)} {_number(y - reach)}l{_number(reach)} {_number(reach * 1.7)}h{_number(-2 * reach)}Z"
    return (
        f"M{_number(x - radius)} {_number(y)}a{_number(radius)} {_number(radius)} 0 1 0 {_number(2 * radius)} 0"
        f"a{_number(radius)} {_number(radius)} 0 1 0 {_number(-2 * radius)} 0Z"
    )


def result_latency_ms(result: BackendResult) -> float | None:
    """The mean of put, get and find medians, as the rubric grades it; None when one never ran."""
    medians = [getattr(result, f"{operation}_p50_ms") for operation in OPERATIONS]
    if None in medians:
        return None
    return sum(medians) / len(medians)


def format_ms(value: float) -> str:
    """A latency for people, as the command prints it: two decimals, fewer for slow, more for tiny figures."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.01 or value == 0:
        return f"{value:.2f}"
    return f"{value:.1g}"


def run_time(run: EvaluationRun) -> str:
    return date_format(timezone.localtime(run.started), RUN_TIME_FORMAT)


def series_styles(runs: Sequence[EvaluationRun]) -> list[SeriesStyle]:
    """One style per backend name: registered backends first, in the registry's order, then others."""
    seen = dict.fromkeys(result.name for run in runs for result in run.results.all())
    names = [name for name in BACKENDS if name in seen] + [name for name in seen if name not in BACKENDS]
    return [
        SeriesStyle(name=name, colour=COLOURS[index % len(COLOURS)], shape=SHAPES[index % len(SHAPES)])
        for index, name in enumerate(names)
    ]


def _run_x(index: int, count: int) -> float:
    if count == 1:
        return (PLOT_LEFT + PLOT_RIGHT) / 2
    return PLOT_LEFT + index * (PLOT_RIGHT - PLOT_LEFT) / (count - 1)


def _run_labels(runs: Sequence[EvaluationRun]) -> list[AxisLabel]:
    if len(runs) == 1:
        return [AxisLabel(x=_number(_run_x(0, 1)), label=run_time(runs[0]), anchor="middle")]
    return [
        AxisLabel(x=_number(PLOT_LEFT), label=run_time(runs[0]), anchor="start"),
        AxisLabel(x=_number(PLOT_RIGHT), label=run_time(runs[-1]), anchor="end"),
    ]


def _series(
    runs: Sequence[EvaluationRun],
    styles: list[SeriesStyle],
    value: Callable[[BackendResult], float | None],
    y_of: Callable[[float], float],
    label: Callable[[EvaluationRun, BackendResult, float], str],
) -> list[ChartSeries]:
    """Each backend's points and lines; value(result) is None where the backend has no figure."""
    series = []
    for style in styles:
        points: list[ChartPoint] = []
        lines: list[str] = []
        stretch: list[str] = []
        for index, run in enumerate(runs):
            result = next((result for result in run.results.all() if result.name == style.name), None)
            figure = value(result) if result is not None else None
            if result is None or figure is None:
                if stretch:
                    lines.append(" ".join(stretch))
                stretch = []
                continue
            x, y = _run_x(index, len(runs)), y_of(figure)
            stretch.append(f"{_number(x)},{_number(y)}")
            points.append(ChartPoint(path=marker_path(style.shape, x, y), label=label(run, result, figure)))
        if stretch:
            lines.append(" ".join(stretch))
        series.append(ChartSeries(style=style, points=points, lines=[line for line in lines if " " in line]))
    return series


def _latest_summary(runs: Sequence[EvaluationRun], describe: Callable[[BackendResult], str]) -> str:
    latest = runs[-1]
    return "; ".join(describe(result) for result in latest.results.all())


def _span(runs: Sequence[EvaluationRun]) -> str:
    if len(runs) == 1:
        return f"one run, on {run_time(runs[0])}"
    return f"{len(runs)} runs from {run_time(runs[0])} to {run_time(runs[-1])}"


def score_chart(runs: Sequence[EvaluationRun], styles: list[SeriesStyle]) -> Chart:
    """Each backend's score (0-100) per run, oldest run first; grid lines at the grade bands."""

    def y_of(score: float) -> float:
        return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * score / MAX_SCORE

    def label(run: EvaluationRun, result: BackendResult, score: float) -> str:
        return f"{result.name}, {run_time(run)}: {result.score} points, grade {result.grade}"

    limits = [0, *sorted(lowest for lowest, _ in GRADE_BANDS), MAX_SCORE]
    grades = ["F", *[grade for _, grade in sorted(GRADE_BANDS)]]
    bands = [
        AxisTick(y=_number(y_of((lower + upper) / 2)), label=grade)
        for lower, upper, grade in zip(limits[:-1], limits[1:], grades, strict=True)
    ]
    description = (
        f"Score out of {MAX_SCORE} of each backend over {_span(runs)}. Latest: "
        + _latest_summary(runs, lambda result: f"{result.name} {result.score} points, grade {result.grade}")
        + "."
    )
    return Chart(
        slug="score-chart",
        title="Score per backend across runs",
        description=description,
        unit="points",
        ticks=[AxisTick(y=_number(y_of(limit)), label=str(limit)) for limit in limits],
        bands=bands,
        run_labels=_run_labels(runs),
        series=_series(runs, styles, lambda result: result.score, y_of, label),
    )


def _decade_label(exponent: int) -> str:
    """A tick of the latency axis, in milliseconds (the unit is in the chart's caption)."""
    return f"{10.0**exponent:f}".rstrip("0").rstrip(".")


def latency_chart(runs: Sequence[EvaluationRun], styles: list[SeriesStyle]) -> Chart:
    """Each available backend's p50 latency per run on a logarithmic axis, one grid line a decade."""
    figures = [
        latency for run in runs for result in run.results.all() if (latency := result_latency_ms(result)) is not None
    ]
    clamped = [max(figure, LATENCY_FLOOR_MS) for figure in figures] or [1.0]
    lowest = math.floor(math.log10(min(clamped)))
    highest = max(math.ceil(math.log10(max(clamped))), lowest + 1)

    def y_of(milliseconds: float) -> float:
        position = (math.log10(max(milliseconds, LATENCY_FLOOR_MS)) - lowest) / (highest - lowest)
        return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * position

    def label(run: EvaluationRun, result: BackendResult, milliseconds: float) -> str:
        medians = ", ".join(
            f"{operation} {format_ms(getattr(result, f'{operation}_p50_ms'))}" for operation in OPERATIONS
        )
        return f"{result.name}, {run_time(run)}: p50 {format_ms(milliseconds)} ms ({medians})"

    def describe(result: BackendResult) -> str:
        latency = result_latency_ms(result)
        return f"{result.name} {format_ms(latency)} ms" if latency is not None else f"{result.name} unavailable"

    description = (
        f"Median (p50) latency in milliseconds of each available backend over {_span(runs)}, "
        "the mean of its put, get and find medians, on a logarithmic scale. Latest: "
        + _latest_summary(runs, describe)
        + "."
    )
    return Chart(
        slug="latency-chart",
        title="p50 latency per backend across runs",
        description=description,
        unit="ms",
        ticks=[
            AxisTick(y=_number(y_of(10.0**exponent)), label=_decade_label(exponent))
            for exponent in range(lowest, highest + 1)
        ],
        bands=[],
        run_labels=_run_labels(runs),
        series=_series(runs, styles, result_latency_ms, y_of, label),
    )


def evaluation_charts(runs_newest_first: Sequence[EvaluationRun]) -> tuple[list[SeriesStyle], list[Chart]]:
    """The legend's styles and the two charts (score, latency) for runs given newest first."""
    runs = list(reversed(runs_newest_first))
    if not runs:
        return [], []
    styles = series_styles(runs)
    return styles, [score_chart(runs, styles), latency_chart(runs, styles)]

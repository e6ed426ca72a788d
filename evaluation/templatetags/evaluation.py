"""Template helpers for the evaluations page."""

from django import template

from evaluation.chart import format_ms

register = template.Library()


@register.filter
def ms(value: float | None) -> str:
    """A latency in milliseconds as people read it: {{ result.put_p50_ms|ms }}; "–" when it never ran."""
    return "–" if value is None else format_ms(value)

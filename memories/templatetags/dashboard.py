"""Template helpers for the dashboard: links (uid and key travel as query parameters), hidden characters shown."""

from django import template

from memories.guard import guard_reveal, name_reveal
from memories.views import page_url

register = template.Library()


@register.simple_tag(takes_context=True)
def dashboard_url(context: template.Context, view_name: str, **params: str) -> str:
    """{% dashboard_url "dashboard:entry" uid=entry.uid key=entry.key %}: keeps ?account= for staff."""
    return page_url(view_name, context.get("scope"), **params)


@register.simple_tag(takes_context=True)
def with_query(context: template.Context, **changes: str) -> str:
    """The current page's query string with some parameters changed (sorting, paging); None or "" drops one."""
    query = context["request"].GET.copy()
    for name, value in changes.items():
        query.pop(name, None)
        if value not in (None, ""):
            query[name] = str(value)
    return f"?{query.urlencode()}" if query else "?"


@register.filter
def reveal_hidden(text: str) -> str:
    """The text with its invisible and bidirectional characters written out (memories.guard.guard_reveal)."""
    return guard_reveal(text)


@register.filter
def shown_name(name: str) -> str:
    """A uid or key with the characters that would reorder or hide part of it written out (guard.name_reveal)."""
    return name_reveal(name)

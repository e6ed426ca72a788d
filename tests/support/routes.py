"""Every route the hub serves, found by walking the URL resolver (so new routes are covered too)."""

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import get_converters

GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<pattern>[^)]*)\)|<(?:(?P<converter>\w+):)?(?P<plain>\w+)>")
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    template: str  # the path with each parameter as {name}
    parameters: tuple[str, ...]
    view: object
    name: str | None
    stand_ins: tuple[str, ...] = ()  # for each parameter, a value its pattern accepts

    def path(self, values: dict[str, str]) -> str:
        """The route's path with the given values, and a value its pattern accepts for any other parameter."""
        defaults = dict(zip(self.parameters, self.stand_ins, strict=True))
        return "/" + self.template.format(
            **{name: values.get(name, defaults.get(name, "x")) for name in self.parameters}
        )

    def methods(self) -> list[str]:
        """The HTTP methods the route's view answers (for a viewset, those its router mapped)."""
        actions = getattr(self.view, "actions", None)
        if actions:
            return [method for method in HTTP_METHODS if method in actions]
        view_class = getattr(self.view, "cls", None) or getattr(self.view, "view_class", None)
        if view_class is None:
            return list(HTTP_METHODS)
        return [method for method in HTTP_METHODS if hasattr(view_class, method)]


STAND_IN_CANDIDATES = ("1", "x", "memories", str(uuid.UUID(int=1)), "2026-01-01")


def _stand_in(pattern: str) -> str:
    """A value the parameter's pattern accepts: routes with a parameter resolve, so the view runs."""
    for candidate in STAND_IN_CANDIDATES:
        if re.fullmatch(pattern, candidate):
            return candidate
    return "x"


def _clean(regex: str) -> str:
    text = regex.lstrip("^").replace("\\Z", "").rstrip("$")
    text = text.replace("/?", "/")
    return re.sub(r"\\(.)", r"\1", text)


def _walk(patterns: list, prefix: str) -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        piece = _clean(str(pattern.pattern))
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + piece)
        else:
            yield prefix + piece, pattern


def all_routes(under: str = "") -> list[Route]:
    """Every URL pattern whose path starts with under (e.g. "api/v1/")."""
    routes = []
    for raw, pattern in _walk(get_resolver().url_patterns, ""):
        if not raw.startswith(under):
            continue
        parameters: list[str] = []
        stand_ins: list[str] = []

        def placeholder(match: re.Match) -> str:
            name = match.group("name") or match.group("plain")
            if match.group("name"):
                pattern = match.group("pattern")
            else:
                pattern = get_converters()[match.group("converter") or "str"].regex
            # Called by GROUP.sub below, within this iteration: the loop's lists are the right ones.
            parameters.append(name)  # noqa: B023
            stand_ins.append(_stand_in(pattern))  # noqa: B023
            return "{" + name + "}"

        template = GROUP.sub(placeholder, raw)
        if "(" in template or "[" in template or "*" in template:
            continue  # a route written as a bare regular expression cannot be filled in reliably
        routes.append(
            Route(
                template=template,
                parameters=tuple(parameters),
                view=pattern.callback,
                name=pattern.name,
                stand_ins=tuple(stand_ins),
            )
        )
    return routes

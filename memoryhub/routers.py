"""The router both apps register their viewsets on.

Kept apart from memoryhub.api: rest_framework.routers imports rest_framework.views, which imports
memoryhub.api (the default throttle) while it loads.
"""

from rest_framework.routers import Route, SimpleRouter
from rest_framework.viewsets import ViewSetMixin


class HubRouter(SimpleRouter):
    """DRF's SimpleRouter with the trailing slash optional on every path, and singleton resources.

    A viewset whose `singleton` is True is one resource at its prefix: GET is its `retrieve`, POST
    its `create`, its route is named after the basename alone (`info`, `tool`), and it has no list
    and no lookup. Its `@action(detail=False)` routes sit below the prefix as usual (`tool/schema`).
    """

    singleton_route = Route(
        url=r"^{prefix}{trailing_slash}$",
        mapping={"get": "retrieve", "post": "create"},
        name="{basename}",
        detail=False,
        initkwargs={"suffix": "Instance"},
    )

    def __init__(self) -> None:
        super().__init__()
        self.trailing_slash = "/?"

    def get_routes(self, viewset: type[ViewSetMixin]) -> list[Route]:
        routes = super().get_routes(viewset)
        if not getattr(viewset, "singleton", False):
            return routes
        # The router's own list and detail routes give way to the singleton's; its actions stay.
        return [self.singleton_route, *(route for route in routes if route not in self.routes)]

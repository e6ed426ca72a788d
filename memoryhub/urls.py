from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path
from django.views.defaults import bad_request, page_not_found, server_error
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from evaluation.urls import dashboard_urlpatterns as evaluation_pages
from memoryhub.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(("memories.api.urls", "api"), namespace="api")),
    path("api/v1/", include(("evaluation.urls", "evaluation"), namespace="evaluation")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("", include("memories.urls")),
    path("", include((evaluation_pages, "evaluations"), namespace="evaluations")),
]


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A path that matches no route: DRF's JSON shape under /api/, the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


handler404 = not_found


def refused(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A request Django refuses before any view (a Host the hub does not serve, a malformed one): JSON under /api/,
    the HTML page elsewhere. The reason goes to the log, not to the client."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Bad request: the hub cannot answer it as it was sent."}, status=400)
    return bad_request(request, exception)


handler400 = refused


def failed(request: HttpRequest) -> HttpResponse:
    """An error the hub did not expect (its log has the traceback): JSON under /api/, as every other answer
    there is, the HTML page elsewhere. Nothing is half-written: each change is one transaction."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"detail": "The hub failed to answer this request; its log says why. Nothing was half-written."}, status=500
        )
    return server_error(request)


handler500 = failed

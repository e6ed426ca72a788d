from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from evaluation.urls import dashboard_urlpatterns as evaluation_pages

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include(("memories.api.urls", "api"), namespace="api")),
    path("api/v1/", include(("evaluation.urls", "evaluation"), namespace="evaluation")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("memories.urls")),
    path("", include((evaluation_pages, "evaluations"), namespace="evaluations")),
]

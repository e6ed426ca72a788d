"""The evaluation app's routes: the API's under /api/v1/ (a trailing slash optional, as elsewhere),
and the dashboard's page (dashboard_urlpatterns) at the site root."""

from django.urls import path

from evaluation import views
from evaluation.api import EvaluationRunViewSet
from memoryhub.routers import HubRouter

router = HubRouter()
router.register("evaluations", EvaluationRunViewSet, basename="evaluation")

urlpatterns = router.urls

dashboard_urlpatterns = [
    path("evaluations/", views.evaluation_list, name="list"),
]

"""The evaluation app's routes: the API's under /api/v1/ (a trailing slash optional, as elsewhere),
and the dashboard's page (dashboard_urlpatterns) at the site root."""

from django.urls import path, re_path

from evaluation import views
from evaluation.api import EvaluationRunListView

urlpatterns = [
    re_path(r"^evaluations/?$", EvaluationRunListView.as_view(), name="evaluation-list"),
]

dashboard_urlpatterns = [
    path("evaluations/", views.evaluation_list, name="list"),
]

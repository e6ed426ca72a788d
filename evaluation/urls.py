"""The evaluation API's routes, under /api/v1/ (a trailing slash optional, as elsewhere)."""

from django.urls import re_path

from evaluation.api import EvaluationRunListView

urlpatterns = [
    re_path(r"^evaluations/?$", EvaluationRunListView.as_view(), name="evaluation-list"),
]

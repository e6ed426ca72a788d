"""GET /api/v1/evaluations/ (stored runs, newest first), POST (ask for one; staff only) and
GET /api/v1/evaluations/{id} (one run: pending, running, done with its results, or failed).

A POST answers 202 at once with the pending run and its address in `Location`; the worker
(`manage.py work`) measures it.
"""

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, permissions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from evaluation import selectors
from evaluation.models import EvaluationRun
from evaluation.services import DEFAULT_OPS, MAX_OPS, EvaluationError, evaluation_request, stored_result_as_json
from memories.accounts import request_account
from memories.backends import BACKENDS
from memoryhub.api import MemoryPagination


class EvaluationRunSerializer(serializers.ModelSerializer):
    requested_by: "serializers.SlugRelatedField[User]" = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="The account that ran it, shown to staff and to that account (else null, as for the command line).",
    )
    results = serializers.SerializerMethodField(
        help_text="One per backend, in the shape of `manage.py evaluate --json`."
    )

    class Meta:
        model = EvaluationRun
        fields = [
            "id", "status", "error", "requested", "started", "finished", "ops", "backends", "recommendation",
            "requested_by", "results",
        ]  # fmt: skip
        read_only_fields = fields

    def to_representation(self, instance: EvaluationRun) -> dict[str, Any]:
        shown = super().to_representation(instance)
        request = self.context.get("request")
        viewer = getattr(request, "user", None)
        if viewer is None or not (viewer.is_staff or instance.requested_by_id == viewer.pk):
            shown["requested_by"] = None  # staff usernames are for staff
        return shown

    def get_results(self, run: EvaluationRun) -> list[dict[str, Any]]:
        return [stored_result_as_json(result, ops=run.ops) for result in run.results.all()]


class EvaluationRequestSerializer(serializers.Serializer):
    backends = serializers.ListField(
        child=serializers.ChoiceField(choices=list(BACKENDS)),
        required=False,
        allow_empty=False,
        help_text="Backends to grade; default null, local, and honcho when it is configured.",
    )
    ops = serializers.IntegerField(
        min_value=1, max_value=MAX_OPS, default=DEFAULT_OPS, help_text="Calls per operation."
    )


class StaffMayRun(permissions.BasePermission):
    """Anyone signed in may read runs; only staff may start one (it writes and may call Honcho)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.method in permissions.SAFE_METHODS or bool(request.user and request.user.is_staff)


@extend_schema(tags=["evaluations"])
class EvaluationRunViewSet(viewsets.ViewSet):
    pagination_class = MemoryPagination
    permission_classes = [permissions.IsAuthenticated, StaffMayRun]
    lookup_value_regex = "[0-9]{1,18}"

    @extend_schema(summary="Stored evaluation runs, newest first", responses=EvaluationRunSerializer(many=True))
    def list(self, request: Request) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.evaluation_run_list(), request, view=self)
        return paginator.get_paginated_response(
            EvaluationRunSerializer(page, many=True, context={"request": request}).data
        )

    @extend_schema(
        summary="Ask for an evaluation (staff only): 202 with the pending run; the worker measures it",
        request=EvaluationRequestSerializer,
        responses={202: EvaluationRunSerializer},
    )
    def create(self, request: Request) -> Response:
        body = EvaluationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            run = evaluation_request(
                backend_names=body.validated_data.get("backends"),
                ops=body.validated_data["ops"],
                requested_by=request_account(request),
            )
        except EvaluationError as error:
            raise exceptions.ValidationError({"backends": [str(error)]}) from None
        location = reverse("evaluation:evaluation-detail", kwargs={"pk": run.pk}, request=request)
        return Response(
            EvaluationRunSerializer(run, context={"request": request}).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": location},
        )

    @extend_schema(
        summary="One evaluation run: pending, running, done with its results, or failed with its error",
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH, description="The run's id.")],
        responses=EvaluationRunSerializer,
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        run = selectors.evaluation_run_list().filter(pk=int(pk)).first()
        if run is None:
            raise exceptions.NotFound
        return Response(EvaluationRunSerializer(run, context={"request": request}).data)

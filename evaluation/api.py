"""GET /api/v1/evaluations/ (stored runs, newest first) and POST (run one now; staff only)."""

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, permissions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation import selectors
from evaluation.models import EvaluationRun
from evaluation.services import DEFAULT_OPS, MAX_OPS, EvaluationError, evaluation_run, stored_result_as_json
from memories.accounts import request_account
from memories.backends import BACKENDS
from memoryhub.api import MemoryPagination


class EvaluationRunSerializer(serializers.ModelSerializer):
    requested_by: "serializers.SlugRelatedField[User]" = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    results = serializers.SerializerMethodField(
        help_text="One per backend, in the shape of `manage.py evaluate --json`."
    )

    class Meta:
        model = EvaluationRun
        fields = ["id", "started", "finished", "ops", "recommendation", "requested_by", "results"]
        read_only_fields = fields

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

    @extend_schema(summary="Stored evaluation runs, newest first", responses=EvaluationRunSerializer(many=True))
    def list(self, request: Request) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.evaluation_run_list(), request, view=self)
        return paginator.get_paginated_response(EvaluationRunSerializer(page, many=True).data)

    @extend_schema(
        summary="Run an evaluation now and store it (staff only)",
        request=EvaluationRequestSerializer,
        responses={201: EvaluationRunSerializer},
    )
    def create(self, request: Request) -> Response:
        body = EvaluationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            report = evaluation_run(
                backend_names=body.validated_data.get("backends"),
                ops=body.validated_data["ops"],
                requested_by=request_account(request),
            )
        except EvaluationError as error:
            raise exceptions.ValidationError({"backends": [str(error)]}) from None
        assert report.run is not None  # evaluation_run stores the run unless asked not to
        run = selectors.evaluation_run_list().get(pk=report.run.pk)
        return Response(EvaluationRunSerializer(run).data, status=status.HTTP_201_CREATED)

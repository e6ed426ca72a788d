"""Stored evaluations: one run, and one result per backend it graded. Written by evaluation.services only."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from evaluation.scoring import GRADES
from memories.models import LeasedJob

BACKEND_NAME_MAX_LENGTH = 32
GRADE_CHOICES = [(grade, grade) for grade in GRADES]


class EvaluationRun(LeasedJob):
    """One evaluation: which backends, how many calls per operation, and what it recommended.

    Asked for (pending), it is run by the worker (`manage.py work`): running, then done with its
    results, or failed with its error.
    """

    requested = models.DateTimeField(default=timezone.now, help_text="When it was asked for.")
    started = models.DateTimeField(null=True, blank=True, help_text="When a worker began measuring.")
    finished = models.DateTimeField(null=True, blank=True)
    FINISHED_FIELD = "finished"
    ops = models.PositiveIntegerField(help_text="Calls per operation (put, get, find).")
    backends = models.JSONField(default=list, blank=True, help_text="The backends to grade, in order.")
    recommendation = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The account that asked for it (none for the command line).",
    )

    class Meta:
        verbose_name = "evaluation run"
        ordering = ["-requested", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(ops__gte=1), name="evaluation_run_ops_positive"),
            models.CheckConstraint(
                condition=models.Q(status__in=LeasedJob.Status.values), name="evaluation_run_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["-requested", "-id"], name="evaluation_run_newest"),
            # the worker's claim, and the pending runs the dashboard announces
            models.Index(fields=["status", "id"], name="evaluation_run_status"),
        ]

    def __str__(self) -> str:
        return f"evaluation of {self.requested:%Y-%m-%d %H:%M:%S} ({self.status})"


class BackendResult(models.Model):
    """How one backend did in one run. Latencies in milliseconds; null when the operation never ran."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveSmallIntegerField(help_text="Order within the run.")
    name = models.CharField(max_length=BACKEND_NAME_MAX_LENGTH)
    available = models.BooleanField()
    cloud = models.BooleanField()
    reason = models.TextField(blank=True)
    put_ok = models.BooleanField(default=False)
    get_ok = models.BooleanField(default=False)
    find_ok = models.BooleanField(default=False)
    put_p50_ms = models.FloatField(null=True, blank=True)
    put_p95_ms = models.FloatField(null=True, blank=True)
    get_p50_ms = models.FloatField(null=True, blank=True)
    get_p95_ms = models.FloatField(null=True, blank=True)
    find_p50_ms = models.FloatField(null=True, blank=True)
    find_p95_ms = models.FloatField(null=True, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="The first error of each operation that failed.")
    score = models.PositiveSmallIntegerField()
    grade = models.CharField(max_length=1, choices=GRADE_CHOICES)
    recall_at_5 = models.FloatField(
        null=True,
        blank=True,
        help_text="Share of the recall probe's questions answered in find's first 5 (not scored); "
        "null when the backend was unavailable or the probe failed.",
    )

    class Meta:
        verbose_name = "backend result"
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="backend_result_unique_run_name"),
            models.UniqueConstraint(fields=["run", "position"], name="backend_result_unique_run_position"),
            models.CheckConstraint(condition=models.Q(score__lte=100), name="backend_result_score_at_most_100"),
            models.CheckConstraint(condition=models.Q(grade__in=list(GRADES)), name="backend_result_grade_valid"),
            models.CheckConstraint(
                condition=models.Q(available=True) | models.Q(score=0, grade="F"),
                name="backend_result_unavailable_is_f",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.score} ({self.grade})"

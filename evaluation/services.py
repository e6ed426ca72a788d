"""Running an evaluation: each backend's operations timed on probe data, graded, and stored.

A run asked for through the API or the dashboard is stored pending (`evaluation_request`) and
measured by the worker (`evaluation_run_claimed`, from evaluation.jobs), so no request waits for
it; `manage.py evaluate` measures in the foreground; the tool's evaluate action measures a few
operations within TOOL_EVALUATE_SECONDS and answers at once.

Probe data lives under a uid of its own for each run (PROBE_UID and a run mark) of the reserved,
log-in-less probe account, so it never meets real entries nor another run's probe data; it is
removed when each backend is done, and the run's local history with it. Honcho is called with
max_retries=0 and HONCHO_TIMEOUT, so an unreachable or refusing Honcho is graded F in about one
timeout, never retried into minutes.

Beside the rubric (never scored), each available backend's recall@5 is measured on the recall
probe (`recall_probe`): the memories of RECALL_PROBE_PEOPLE from the labelled recall set, each
person under a uid of the run's own (`recall_probe_uid`), and their answerable test questions, each
asked with the backend's find(limit=RECALL_AT). A question counts as answered when one of its
answer keys is among the results; a put or find that fails, or a probe cut short (the run's
limits, or RECALL_PROBE_SECONDS), leaves the backend with no figure.
"""

import dataclasses
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evaluation.models import BackendResult, EvaluationRun
from evaluation.recall_set import RecallSet, Split, recall_set_load
from evaluation.scoring import (
    OPERATIONS,
    BackendScore,
    OperationResult,
    recommendation,
    score_backend,
    score_unavailable,
)
from memories import accounts, leases, services
from memories.backends import BACKENDS, UnknownBackend, make_backend
from memories.backends.base import BackendEntry, BackendError, MemoryBackend
from memories.backends.honcho_config import HonchoConfig
from memories.models import PROBE_UID

logger = logging.getLogger(__name__)

DEFAULT_OPS = 20
MAX_OPS = 1000
# The tool's evaluate action answers within its request: a few operations, no call started after
# TOOL_EVALUATE_SECONDS, each Honcho call given up after TOOL_HONCHO_TIMEOUT_SECONDS. At worst that
# is the limit, one call, and removing the probe data (a list and TOOL_EVALUATE_OPS deletes):
# about 12 s, well inside the server's 30 s request timeout.
TOOL_EVALUATE_OPS = 5
TOOL_EVALUATE_SECONDS = 4.0
TOOL_HONCHO_TIMEOUT_SECONDS = 1.5
# Options each backend is made with for an evaluation: the caller does no retrying, so neither does the SDK.
EVALUATION_OPTIONS: dict[str, dict[str, Any]] = {"honcho": {"max_retries": 0}}

# The recall probe: these people of the shipped recall set (26 memories each) and their answerable
# test questions (8 each), so 52 puts, 16 finds and the clean-up: a few seconds against a Honcho.
RECALL_PROBE_PEOPLE = ("ole.hansen", "mei")
RECALL_AT = 5
# No recall probe call starts after this long: a backend that slow gets no figure rather than a long run.
# The local backend's probe loads the embedding model and embeds the 52 memories within it: about a
# second on an idle machine, several times that on 2 busy cores.
RECALL_PROBE_SECONDS = 15.0

Progress = Callable[[str], None]


class EvaluationError(Exception):
    """The evaluation cannot run as asked: an unknown backend, a bad count, a misconfiguration."""


class EvaluationInterrupted(Exception):
    """The worker is stopping (or lost the run to another): the run's measuring stopped between two calls."""


@dataclass(frozen=True)
class Limits:
    """When an evaluation stops early. deadline (time.monotonic()): no call starts after it, and the
    operations cut short count as failed, saying why. stop: once set, the evaluation is abandoned
    between two calls (EvaluationInterrupted)."""

    deadline: float | None = None
    stop: Callable[[], bool] | None = None

    def reached(self) -> str:
        """ "" to go on; why not, when the deadline has passed. Raises EvaluationInterrupted when stopped."""
        if self.stop is not None and self.stop():
            raise EvaluationInterrupted
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "the evaluation's time limit was reached"
        return ""


NO_LIMITS = Limits()


@dataclass(frozen=True)
class EvaluationReport:
    scores: list[BackendScore]
    recommendation: str
    ops: int
    run: EvaluationRun | None

    def as_json(self) -> dict[str, Any]:
        """The agent-side module's shape (results, recommendation), each result with the new fields."""
        return {
            "results": [score_as_json(score, ops=self.ops) for score in self.scores],
            "recommendation": self.recommendation,
            "ops": self.ops,
            "run": self.run.pk if self.run else None,
        }


def _operation_json(*, ok: bool, p50_ms: float | None, p95_ms: float | None, error: str) -> dict[str, Any]:
    return {
        "ok": ok,
        "p50_ms": round(p50_ms, 3) if p50_ms is not None else None,
        "p95_ms": round(p95_ms, 3) if p95_ms is not None else None,
        "error": error,
    }


def _result_json(
    *,
    name: str,
    available: bool,
    cloud: bool,
    score: int,
    grade: str,
    reason: str,
    ops: int,
    operations: dict[str, dict[str, Any]],
    recall_at_5: float | None,
) -> dict[str, Any]:
    medians = [operations[operation]["p50_ms"] for operation in OPERATIONS if operation in operations]
    return {
        "name": name,
        "ok": available,
        "cloud": cloud,
        "score": score,
        "grade": grade,
        "reason": reason,
        "ops": ops,
        "latency_ms": round(sum(medians) / len(medians), 3) if medians and None not in medians else None,
        "operations": operations,
        "recall_at_5": round(recall_at_5, 4) if recall_at_5 is not None else None,
    }


def score_as_json(score: BackendScore, *, ops: int) -> dict[str, Any]:
    operations = {
        operation: _operation_json(ok=result.ok, p50_ms=result.p50_ms, p95_ms=result.p95_ms, error=result.error)
        for operation, result in score.operations.items()
    }
    return _result_json(
        name=score.name, available=score.available, cloud=score.cloud, score=score.score, grade=score.grade,
        reason=score.reason, ops=ops, operations=operations, recall_at_5=score.recall_at_5,
    )  # fmt: skip


def stored_result_as_json(result: BackendResult, *, ops: int) -> dict[str, Any]:
    """A stored result in the same shape as the command's --json."""
    operations = {}
    if result.available:
        operations = {
            operation: _operation_json(
                ok=getattr(result, f"{operation}_ok"),
                p50_ms=getattr(result, f"{operation}_p50_ms"),
                p95_ms=getattr(result, f"{operation}_p95_ms"),
                error=result.errors.get(operation, ""),
            )
            for operation in OPERATIONS
        }
    return _result_json(
        name=result.name, available=result.available, cloud=result.cloud, score=result.score, grade=result.grade,
        reason=result.reason, ops=ops, operations=operations, recall_at_5=result.recall_at_5,
    )  # fmt: skip


def default_backend_names() -> list[str]:
    """null and local always; honcho too when HONCHO_URL or HONCHO_API_KEY is set."""
    names = ["null", "local"]
    if HonchoConfig.from_settings().configured:
        names.append("honcho")
    return names


def _check_request(backend_names: list[str] | None, ops: int) -> list[str]:
    if not 1 <= ops <= MAX_OPS:
        raise EvaluationError(f"ops must be between 1 and {MAX_OPS}; got {ops}")
    if not backend_names:
        return default_backend_names()
    names = list(dict.fromkeys(backend_names))
    for name in names:
        if name not in BACKENDS:
            raise EvaluationError(str(UnknownBackend(name)))
    if "honcho" in names and not HonchoConfig.from_settings().configured:
        raise EvaluationError(
            "Honcho is not configured: set HONCHO_URL (a self-hosted server) or HONCHO_API_KEY (the cloud)"
        )
    return names


def _repeat(
    keys: list[str],
    call: Callable[[str], Any],
    check: Callable[[str, Any], bool],
    failure: str,
    limits: Limits = NO_LIMITS,
) -> OperationResult:
    """Run call once per key, timing each; stop at the first BackendError (one slow failure is enough),
    or when the limits say so."""
    latencies: list[float] = []
    all_ok = True
    for key in keys:
        reason = limits.reached()
        if reason:
            return OperationResult(
                ok=False,
                latencies_ms=tuple(latencies),
                error=f"stopped after {len(latencies)} of {len(keys)}: {reason}",
            )
        started = time.perf_counter()
        try:
            answer = call(key)
        except BackendError as error:
            latencies.append((time.perf_counter() - started) * 1000)
            return OperationResult(ok=False, latencies_ms=tuple(latencies), error=error.message)
        latencies.append((time.perf_counter() - started) * 1000)
        all_ok = all_ok and check(key, answer)
    return OperationResult(ok=all_ok, latencies_ms=tuple(latencies), error="" if all_ok else failure)


def _remove_probe_entries(backend: MemoryBackend, probe_uid: str, keys: list[str]) -> str:
    """Delete the run's probe entries (and any leftover under its uid); an error message, or ""."""
    try:
        leftovers = [entry.key for entry in backend.list(probe_uid)]
        for key in dict.fromkeys(keys + leftovers):
            backend.delete(probe_uid, key)
    except BackendError as error:
        return error.message
    return ""


def new_probe_uid() -> str:
    """The reserved probe uid with a mark of one run: runs at the same time never share probe data."""
    return f"{PROBE_UID}{secrets.token_hex(4)}"


@functools.cache
def recall_probe() -> RecallSet:
    """The recall probe: RECALL_PROBE_PEOPLE's memories and their answerable test questions."""
    shipped = recall_set_load()
    people = set(RECALL_PROBE_PEOPLE)
    return RecallSet(
        name=f"{shipped.name} (recall probe)",
        memories=tuple(memory for memory in shipped.memories if memory.uid in people),
        questions=tuple(
            question
            for question in shipped.questions
            if question.uid in people and question.split == Split.TEST and question.answers
        ),
    )


def recall_probe_uid(probe_uid: str, person: str) -> str:
    """The uid one person of the recall probe is stored under in one run: the run's probe uid, marked."""
    return f"{probe_uid}-recall-{RECALL_PROBE_PEOPLE.index(person)}"


def recall_probe_uids(probe_uid: str) -> list[str]:
    return [recall_probe_uid(probe_uid, person) for person in RECALL_PROBE_PEOPLE]


def measure_recall(backend: MemoryBackend, *, probe_uid: str, limits: Limits = NO_LIMITS) -> float | None:
    """recall@RECALL_AT of the backend's find on the recall probe, stored under probe_uid's recall uids
    and removed afterwards. None when a put or find fails, when removing fails, or when the probe is
    cut short: by the limits, or because it has run for RECALL_PROBE_SECONDS (a slow backend)."""
    probe = recall_probe()
    budget_ends = time.monotonic() + RECALL_PROBE_SECONDS

    def cut_short() -> bool:
        return bool(limits.reached()) or time.monotonic() >= budget_ends

    stored: dict[str, list[str]] = {uid: [] for uid in recall_probe_uids(probe_uid)}
    answered = 0
    try:
        for memory in probe.memories:
            if cut_short():
                return None
            uid = recall_probe_uid(probe_uid, memory.uid)
            stored[uid].append(memory.key)
            backend.put(uid, memory.key, memory.value, kind=memory.kind)
        for uid in stored:
            # Findable in every way find finds, as a user asking a few seconds later would find them.
            backend.settle(uid)
        for question in probe.questions:
            if cut_short():
                return None
            found = backend.find(recall_probe_uid(probe_uid, question.uid), question.text, limit=RECALL_AT)
            keys = {entry.key for entry in found[:RECALL_AT]}
            answered += any(key in keys for key in probe.answer_keys(question))
    except BackendError:
        return None
    finally:
        cleanup_errors = [_remove_probe_entries(backend, uid, keys) for uid, keys in stored.items()]
    if any(cleanup_errors):
        return None
    return answered / len(probe.questions)


def measure_backend(
    backend: MemoryBackend,
    *,
    ops: int,
    probe_uid: str | None = None,
    limits: Limits = NO_LIMITS,
    recall: bool = True,
) -> BackendScore:
    """Time ops puts, gets and finds on probe data under probe_uid, check what comes back, remove it, and grade;
    then, unless recall is False, measure recall@5 on the recall probe (reported beside the grade, not scored).

    The probe data is removed however the measuring ends (the limits cut it short, or it is interrupted).
    """
    availability = backend.available()
    if not availability.ok:
        return score_unavailable(name=backend.name, cloud=backend.is_cloud, reason=availability.reason)
    probe_uid = probe_uid or new_probe_uid()
    run_mark = probe_uid.removeprefix(PROBE_UID) or secrets.token_hex(4)
    values = {f"probe-{index:04d}": f"probe value {index:04d} {run_mark}" for index in range(ops)}
    keys = list(values)

    def found_its_key(key: str, entries: list[BackendEntry]) -> bool:
        return key in [entry.key for entry in entries]

    try:
        operations = {
            "put": _repeat(
                keys, lambda key: backend.put(probe_uid, key, values[key]), lambda key, entry: True, "", limits
            ),
            "get": _repeat(
                keys,
                lambda key: backend.get(probe_uid, key),
                lambda key, entry: entry is not None and entry.value == values[key],
                "get did not return what put stored",
                limits,
            ),
            "find": _repeat(
                keys,
                lambda key: backend.find(probe_uid, values[key].removeprefix("probe ")),
                found_its_key,
                "find did not return the entry holding the text",
                limits,
            ),
        }
    finally:
        cleanup_error = _remove_probe_entries(backend, probe_uid, keys)
    reason = availability.reason
    if cleanup_error:
        reason += f"; probe data may remain: {cleanup_error}"
    score = score_backend(name=backend.name, cloud=backend.is_cloud, reason=reason, operations=operations)
    if not recall:
        return score
    return dataclasses.replace(score, recall_at_5=measure_recall(backend, probe_uid=probe_uid, limits=limits))


def _stored_result(run: EvaluationRun, position: int, score: BackendScore) -> BackendResult:
    fields: dict[str, Any] = {}
    for operation, result in score.operations.items():
        fields[f"{operation}_ok"] = result.ok
        fields[f"{operation}_p50_ms"] = result.p50_ms
        fields[f"{operation}_p95_ms"] = result.p95_ms
    return BackendResult(
        run=run,
        position=position,
        name=score.name,
        available=score.available,
        cloud=score.cloud,
        reason=score.reason,
        errors={operation: result.error for operation, result in score.operations.items() if result.error},
        score=score.score,
        grade=score.grade,
        recall_at_5=score.recall_at_5,
        **fields,
    )


def _measure(
    names: list[str],
    *,
    ops: int,
    progress: Progress | None = None,
    backend_options: dict[str, dict[str, Any]] | None = None,
    limits: Limits = NO_LIMITS,
    recall: bool = True,
) -> list[BackendScore]:
    """Grade each named backend in turn on probe data (removed afterwards, however it ends)."""
    try:
        probe = accounts.probe_account()
    except accounts.ProbeAccountTaken as error:
        raise EvaluationError(str(error)) from None
    report_progress = progress or (lambda line: None)
    # What a worker killed mid-run left (its own clean-up below never ran), before this run adds its own.
    services.probe_data_abandoned_clear(owner=probe, now=timezone.now())
    probe_uid = new_probe_uid()
    scores = []
    try:
        for name in names:
            report_progress(f"evaluating {name}: {ops} puts, gets and finds ...")
            began = time.perf_counter()
            options = {**EVALUATION_OPTIONS.get(name, {}), **(backend_options or {}).get(name, {})}
            backend = make_backend(name, owner=probe, **options)
            try:
                score = measure_backend(backend, ops=ops, probe_uid=probe_uid, limits=limits, recall=recall)
            finally:
                backend.close()
            scores.append(score)
            recall_text = "-" if score.recall_at_5 is None else f"{score.recall_at_5:.2f}"
            report_progress(
                f"evaluated {name}: {score.grade}, {score.score} points, recall@5 {recall_text}, "
                f"in {time.perf_counter() - began:.1f} s"
            )
    finally:
        for uid in [probe_uid, *recall_probe_uids(probe_uid)]:
            services.probe_data_clear(owner=probe, uid=uid)
    return scores


def _store_results(run: EvaluationRun, scores: list[BackendScore]) -> None:
    BackendResult.objects.bulk_create(_stored_result(run, position, score) for position, score in enumerate(scores))


def evaluation_run(
    *,
    backend_names: list[str] | None = None,
    ops: int = DEFAULT_OPS,
    save: bool = True,
    requested_by: User | None = None,
    progress: Progress | None = None,
    backend_options: dict[str, dict[str, Any]] | None = None,
    limits: Limits = NO_LIMITS,
    recall: bool = True,
) -> EvaluationReport:
    """Grade each named backend (default_backend_names() when none) now, in the caller's thread,
    store the run (done) unless save is False, and return the grades and the recommendation.

    progress receives a line as each backend starts and ends. backend_options adds constructor
    options per backend name (tests give Honcho the double's http_client). recall False leaves out
    the recall probe (each recall_at_5 None). Raises EvaluationError
    before anything runs when the request or the configuration is wrong.
    """
    names = _check_request(backend_names, ops)
    started = timezone.now()
    scores = _measure(names, ops=ops, progress=progress, backend_options=backend_options, limits=limits, recall=recall)
    recommended = recommendation(scores)
    run = None
    if save:
        with transaction.atomic():
            run = EvaluationRun.objects.create(
                status=EvaluationRun.Status.DONE,
                requested=started,
                started=started,
                finished=timezone.now(),
                ops=ops,
                backends=names,
                recommendation=recommended,
                requested_by=requested_by,
            )
            _store_results(run, scores)
    return EvaluationReport(scores=scores, recommendation=recommended, ops=ops, run=run)


def evaluation_request(
    *, backend_names: list[str] | None = None, ops: int = DEFAULT_OPS, requested_by: User | None = None
) -> EvaluationRun:
    """Store a pending run for the worker (`manage.py work`) to measure, and return it at once.

    The backends are chosen now (default_backend_names() when none are named). Raises EvaluationError
    when the request or the configuration is wrong; then nothing is stored.
    """
    names = _check_request(backend_names, ops)
    return EvaluationRun.objects.create(ops=ops, backends=names, requested_by=requested_by)


def evaluation_run_claimed(
    claim: leases.Claim,
    *,
    stop: threading.Event | None = None,
    backend_options: dict[str, dict[str, Any]] | None = None,
) -> EvaluationRun.Status:
    """Measure the run the worker claimed, keeping its lease renewed, and finish it: done with its
    results, failed with its error, or back to pending when `stop` is set meanwhile (the worker is
    stopping). Returns the status it was left in; a run another worker took meanwhile is left alone.
    """
    run = EvaluationRun.objects.get(pk=claim.pk)
    with leases.lease_kept(claim) as keeper:
        halt = stop or threading.Event()
        limits = Limits(stop=lambda: halt.is_set() or keeper.lost.is_set())
        try:
            scores = _measure(
                _check_request(run.backends or None, run.ops),
                ops=run.ops,
                backend_options=backend_options,
                limits=limits,
            )
        except EvaluationInterrupted:
            leases.job_release(claim)
            return EvaluationRun.Status.PENDING
        except EvaluationError as error:
            leases.job_fail(claim, error=str(error), finished=timezone.now())
            return EvaluationRun.Status.FAILED
        except Exception as error:
            # A bug, or a backend failing in a way it should have reported as BackendError: the run
            # ends failed with what went wrong (the traceback goes to the log), rather than be retried.
            logger.exception("evaluation run %s failed", run.pk)
            leases.job_fail(claim, error=f"{type(error).__name__}: {error}", finished=timezone.now())
            return EvaluationRun.Status.FAILED
    with transaction.atomic():
        if not leases.job_done(claim, finished=timezone.now(), recommendation=recommendation(scores)):
            return EvaluationRun.Status.RUNNING
        _store_results(run, scores)
    return EvaluationRun.Status.DONE


def tool_evaluate(account: User) -> dict[str, Any]:
    """The tool's evaluate action: a run with the default backends, replied as the agent-side
    module does ({"results", "recommendation"}), each result carrying the new fields too.

    It answers within its request: TOOL_EVALUATE_OPS operations of each kind, no call started
    after TOOL_EVALUATE_SECONDS (what was cut short counts as failed and says so), Honcho given
    TOOL_HONCHO_TIMEOUT_SECONDS per call, and no recall probe. Any account may ask, as agents always could; only a staff
    account's run is stored, as only staff may add runs through POST /api/v1/evaluations/.
    """
    honcho = HonchoConfig.from_settings()
    options = {
        "honcho": {"config": dataclasses.replace(honcho, timeout=min(honcho.timeout, TOOL_HONCHO_TIMEOUT_SECONDS))}
    }
    try:
        report = evaluation_run(
            ops=TOOL_EVALUATE_OPS,
            requested_by=account,
            save=account.is_staff,
            backend_options=options,
            limits=Limits(deadline=time.monotonic() + TOOL_EVALUATE_SECONDS),
            recall=False,
        )
    except EvaluationError as error:
        return {"results": [], "recommendation": "None", "error": str(error)}
    document = report.as_json()
    return {"results": document["results"], "recommendation": document["recommendation"]}

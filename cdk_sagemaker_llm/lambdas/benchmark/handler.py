"""Deploy-time handlers of ``EndpointBenchmark``: plain Python + boto3 + the benchmark engine.

The Lambda asset holds this module and ``cdk_sagemaker_llm.benchmarking`` under a stub
``cdk_sagemaker_llm`` package (no aws_cdk), so the relative imports below work both in the
repository and in the asset. Entry points (``index.py`` of the asset re-exports them):

- ``on_event``: the custom resources. ``Custom::SageMakerEndpointBenchmark`` starts the Step
  Functions sweep (Create/Update) and does nothing on Delete, which always succeeds;
  ``Custom::SageMakerEndpointBenchmarkOutput`` turns the wait condition's data into
  attributes (knee concurrency, max throughput, p50 ms/token at the knee).
- ``advance``: one step of the sweep: aggregate the level the workers just ran (from their
  raw samples in S3), then plan the next level (the sweep's next, or the search's, from the
  levels measured so far), or finish: write ``results.json`` and
  ``chart.svg``, apply the gate, signal the wait condition. With ``Error`` set (the workflow's
  catch), signal FAILURE with the error instead.
- ``worker``: one worker's share of one level: wait for the common start time, keep its share
  of the concurrency in flight for its share of the requests (closed loop), or send its
  seeded share of the level's arrival schedule from that start time (open loop), stop
  starting requests before the Lambda's (or the sweep's) deadline, write the raw samples to S3.

The logic is in pure functions over clients, a clock and a sleep passed in
(``handle_event``, ``handle_output_event``, ``advance_step``, ``run_worker``,
``report_error``), so tests run them against fakes, a fake clock, or the loopback simulator.

Reliability rules every path follows:

- Throttling, 5xx and connection errors of Step Functions and S3 are retried here (exponential
  backoff with full jitter), only while the Lambda's remaining time allows one more call plus
  what must follow it (``Budget``); botocore makes one attempt per call, bounded by its
  connect/read timeouts. Out of time, ``on_event`` answers FAILED with the last error, and the
  workflow steps raise it, so the workflow's catch signals FAILURE with it: CloudFormation is
  never left waiting for a timeout. Permanent errors fail at once with the service's message.
- Every event is untrusted: validated (types, ranges, patterns, unknown keys) before use; a
  malformed one fails with a message naming the field, never an unhandled exception.
- Create is idempotent (the execution is named after the run: a duplicate start is
  ``ExecutionAlreadyExists``); workers claim their slice with a conditional write.
- Delete always succeeds (rollbacks never get stuck). When its physical id is this resource's
  run, it stops that execution (``StopExecution``, best effort), so no further level starts
  once the stack is gone; worker Lambdas already running finish their share of the current
  level (each stops starting requests 90 s before its 15-minute timeout at the latest), and
  ``Advance`` never runs again, so nothing signals the deleted wait condition.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...benchmarking import (
    AsyncInvoker,
    BenchmarkResult,
    Invoker,
    Knee,
    KneeRule,
    LevelResult,
    PayloadSpec,
    RequestSample,
    find_knee,
    run_level,
    summarize_level,
)
from ...benchmarking._clock import now as epoch_now
from ...benchmarking.arrivals import ARRIVALS, Arrival
from ...benchmarking.goodput import GoodputSlo
from ...benchmarking.open_loop import (
    OPEN_LOOP_KNEE,
    SUSTAINABLE_RULE,
    goodput_section,
    open_loop_settings,
    run_rate_level,
    summarize_rate_level,
    sustainable_rate,
)
from ...benchmarking.open_loop import level_requests as rate_level_requests
from ...benchmarking.payload import FORMATS, PayloadFormat, RequestProtocol
from ...benchmarking.report import render_svg
from ...benchmarking.search import (
    SearchRule,
    knee_judge,
    next_level,
    search_section,
    sustainable_judge,
)
from ...planning.workload import Workload
from ..runtime_support import (
    HTTPS_URL,
    Budget,
    HandlerError,
    Put,
    Sleep,
    call_with_retry,
    error_code,
    http_put,
    send,
    shown,
    truncate,
    wait_condition_signal,
)
from ..runtime_support import client as _client
from ..runtime_support import explain as explain_failure

RESOURCE_TYPE = "Custom::SageMakerEndpointBenchmark"
OUTPUT_RESOURCE_TYPE = "Custom::SageMakerEndpointBenchmarkOutput"

START_LEAD_S = 10.0
"""Workers of a level are told to start this long after the level is planned: time for Step
Functions to start every Map iteration and for the Lambdas to start (cold starts included)."""
START_SKEW_LIMIT_S = 1.0
"""The stated start skew: workers of one level start within this of each other (they all wait
for the common start time; a worker that arrives late is recorded, and so is the skew)."""
WORKER_MARGIN_S = 90.0
"""A worker stops starting requests this long before its Lambda's timeout: requests in flight
finish within the invoker's 70 s read timeout, and the samples are written."""
MAX_LEVELS = 16
MAX_RUN_LEVELS = 32
"""Levels a run may measure: a sweep's (at most ``MAX_LEVELS``) or a search's."""
MAX_CONCURRENCY = 4096
MAX_RATE = 100_000.0
MAX_WORKER_CAPACITY = 1024
MAX_WORKER_RATE = 10_000.0
MODES = ("concurrency", "rate")
SEARCHES = ("", "knee", "max-rate")
MAX_WORKERS = 64
MAX_REQUESTS = 100_000
MAX_TOKENS = 200_000
REQUEST_TYPES = ("Create", "Update", "Delete")
MAX_SWEEP_SECONDS = 43_200

WORKER_CALL_SECONDS = 0.0
"""A worker writes its samples with whatever time its margin (``WORKER_MARGIN_S``) left: one PUT
usually takes well under a second, and giving up would lose the level for sure. Retries still
sleep only when the backoff ends before the Lambda does."""

Clock = Callable[[], float]


class EventError(ValueError):
    """A malformed event or property: permanent, reported with the offending field."""


def explain(error: BaseException) -> str:
    """A reason for CloudFormation: the field for a malformed event, else as ``runtime_support``
    explains it (the service's own words for AWS errors)."""
    return str(error) if isinstance(error, EventError) else explain_failure(error)


# ----- validation of untrusted input ---------------------------------------------------------


def _field(data: Any, key: str, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise EventError(f"{where}: expected an object, got {type(data).__name__}")
    if key not in data:
        raise EventError(f"{where}.{key}: missing")
    return data[key]


RUN_STEM = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,72}")
"""A run name stem: ASCII letters, digits, '-' and '_' (Step Functions execution names)."""
RUN_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,79}")
STATE_MACHINE_ARN = re.compile(
    r"arn:aws[a-z-]*:states:[a-z0-9-]+:\d{1,12}:stateMachine:[a-zA-Z0-9_-]{1,80}"
)
BUCKET = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,61}[a-zA-Z0-9]")
SAGEMAKER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
KEY_PREFIX = re.compile(r"[^\x00-\x1f\x7f]+")
"""An S3 key prefix: any characters but control characters (keys are literal: no traversal)."""
IGNORED_PROPERTIES = frozenset({"ServiceToken", "ServiceTimeout"})
"""Properties CloudFormation itself adds to ``ResourceProperties``."""
RESOURCE_PROPERTIES = frozenset(
    {"RunNameStem", "Run", "ResultsPrefix", "SweepSeconds", "WaitHandle", "StateMachineArn"}
)
RUN_KEYS = frozenset(
    {
        "Name", "HandleUrl", "Deadline", "StartedAt", "Bucket", "Prefix", "EndpointName",
        "InferenceComponentName", "InputTokens", "OutputTokens", "Stream", "Format",
        "Concurrencies", "RequestsPerLevel", "WorkerCapacity", "Copies", "Rule", "Gate",
        "PricePerHour", "PriceSource", "Mode", "Rates", "Arrival", "Seed", "MaxConcurrency",
        "WorkerRateCapacity", "Slo", "Search", "SearchResolution",
    }
)  # fmt: skip
RULE_KEYS = frozenset({"MinGainPerDoubling", "SloMsPerToken", "MaxErrorRate"})
GATE_KEYS = frozenset(
    {"MaxP50MsPerToken", "MinKneeConcurrency", "MinOutputTokensPerS", "MinSustainableRate"}
)
SLO_KEYS = frozenset({"MsPerToken", "TtftMs", "Fraction"})


def _known(data: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    """Reject keys a valid event never carries (a typo, or something injected)."""
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise EventError(f"{where}: unknown properties {shown(unknown)}")


def _matching(value: Any, where: str, pattern: re.Pattern[str], max_length: int) -> str:
    text = _str(value, where, max_length=max_length)
    if not pattern.fullmatch(text):
        raise EventError(f"{where}: {shown(text)} does not match {pattern.pattern}")
    return text


def _int(value: Any, where: str, low: int, high: int) -> int:
    """An integer (or its decimal string: CloudFormation turns numbers into strings)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,18}\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise EventError(f"{where}: expected an integer from {low} to {high}, got {shown(value)}")
    return value


def _float(value: Any, where: str, low: float, high: float) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise EventError(f"{where}: expected a number from {low:g} to {high:g}, got {shown(value)}")
    return float(value)


def _optional_float(data: Mapping[str, Any], key: str, where: str, high: float) -> float | None:
    value = data.get(key)
    if value is None or value == "":
        return None
    return _float(value, f"{where}.{key}", 0.0, high)


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise EventError(f"{where}: expected true or false, got {shown(value)}")


def _str(value: Any, where: str, *, max_length: int = 2048, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or len(value) > max_length or (not value and not allow_empty):
        raise EventError(f"{where}: expected a string of 1 to {max_length} characters")
    return value


def _https_url(value: Any, where: str) -> str:
    url = _str(value, where)
    if not HTTPS_URL.fullmatch(url):
        raise EventError(f"{where}: expected an https:// URL (a presigned wait-condition handle)")
    return url


def _levels(raw: Any, where: str, number: Callable[[Any, str], float]) -> list[Any]:
    """A sweep's levels: 1 to ``MAX_LEVELS`` increasing numbers."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_LEVELS:
        raise EventError(f"{where}: expected a list of 1 to {MAX_LEVELS} levels")
    values = [number(value, f"{where}[{index}]") for index, value in enumerate(raw)]
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise EventError(f"{where}: expected increasing levels, got {values}")
    return values


def _concurrency(value: Any, where: str) -> int:
    return _int(value, where, 1, MAX_CONCURRENCY)


def _rate(value: Any, where: str) -> float:
    rate = _float(value, where, 0.0, MAX_RATE)
    if rate <= 0:
        raise EventError(f"{where}: a request rate is above 0, got {shown(value)}")
    return rate


def _check_mode(run: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The mode keys of a run: closed-loop concurrencies or open-loop rates, the search, the
    arrival process, the goodput SLOs (absent keys take their defaults)."""
    mode = run.get("Mode", "concurrency")
    if mode not in MODES:
        raise EventError(f"{where}.Mode: expected one of {', '.join(MODES)}, got {shown(mode)}")
    search = run.get("Search", "")
    if search not in SEARCHES:
        raise EventError(f"{where}.Search: expected knee, max-rate or empty, got {shown(search)}")
    if mode == "concurrency":
        concurrencies = _levels(
            _field(run, "Concurrencies", where), f"{where}.Concurrencies", _concurrency
        )
        if run.get("Rates"):
            raise EventError(f"{where}.Rates: only an open-loop run (Mode rate) has rates")
        rates: list[float] = []
    else:
        rates = _levels(_field(run, "Rates", where), f"{where}.Rates", _rate)
        if run.get("Concurrencies"):
            raise EventError(f"{where}.Concurrencies: an open-loop run has rates, not these")
        concurrencies = []
    if search and (search == "knee") != (mode == "concurrency"):
        raise EventError(
            f"{where}.Search: {search} searches "
            f"{'concurrency (Mode concurrency)' if search == 'knee' else 'rates (Mode rate)'}"
        )
    arrival = run.get("Arrival", "poisson")
    if arrival not in ARRIVALS:
        raise EventError(f"{where}.Arrival: expected poisson or constant, got {shown(arrival)}")
    slo = run.get("Slo") or {}
    if not isinstance(slo, Mapping):
        raise EventError(f"{where}.Slo: expected an object")
    _known(slo, SLO_KEYS, f"{where}.Slo")
    fraction = _optional_float(slo, "Fraction", f"{where}.Slo", 1.0)
    checked_slo = {
        "MsPerToken": _optional_float(slo, "MsPerToken", f"{where}.Slo", 1e6),
        "TtftMs": _optional_float(slo, "TtftMs", f"{where}.Slo", 1e7),
        "Fraction": 0.95 if fraction is None else fraction,
    }
    for key, value in checked_slo.items():
        if value is not None and value <= 0:
            raise EventError(f"{where}.Slo.{key}: expected a number above 0, got {value}")
    return {
        "Mode": mode,
        "Concurrencies": concurrencies,
        "Rates": rates,
        "Search": search,
        "SearchResolution": _float(
            run.get("SearchResolution", 0.25), f"{where}.SearchResolution", 0.01, 10.0
        ),
        "Arrival": arrival,
        "Seed": _int(run.get("Seed", 0), f"{where}.Seed", 0, 2**31 - 1),
        "MaxConcurrency": _int(
            run.get("MaxConcurrency", 0), f"{where}.MaxConcurrency", 0, MAX_CONCURRENCY
        ),
        "WorkerRateCapacity": _float(
            run.get("WorkerRateCapacity", 200.0), f"{where}.WorkerRateCapacity", 0.1,
            MAX_WORKER_RATE,
        ),
        "Slo": checked_slo,
    }  # fmt: skip


def check_run(run: Any, where: str = "Run") -> dict[str, Any]:
    """The sweep's configuration, validated (it travels in the workflow's state)."""
    if not isinstance(run, Mapping):
        raise EventError(f"{where}: expected an object, got {type(run).__name__}")
    _known(run, RUN_KEYS, where)
    modes = _check_mode(run, where)
    fmt = _str(_field(run, "Format", where), f"{where}.Format")
    if fmt not in FORMATS:
        raise EventError(f"{where}.Format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    rule = _field(run, "Rule", where)
    if not isinstance(rule, Mapping):
        raise EventError(f"{where}.Rule: expected an object")
    _known(rule, RULE_KEYS, f"{where}.Rule")
    gate = run.get("Gate") or {}
    if not isinstance(gate, Mapping):
        raise EventError(f"{where}.Gate: expected an object")
    _known(gate, GATE_KEYS, f"{where}.Gate")
    bucket = _matching(_field(run, "Bucket", where), f"{where}.Bucket", BUCKET, 63)
    prefix = _matching(_field(run, "Prefix", where), f"{where}.Prefix", KEY_PREFIX, 900)
    if prefix.startswith("/") or not prefix.endswith("/"):
        raise EventError(
            f"{where}.Prefix: expected a key prefix ending in '/', got {shown(prefix)}"
        )
    capacity = _int(
        _field(run, "WorkerCapacity", where), f"{where}.WorkerCapacity", 1, MAX_WORKER_CAPACITY
    )
    top = (modes["Concurrencies"] or modes["Rates"])[-1]
    needed = workers_of({**modes, "WorkerCapacity": capacity}, top)
    if needed > MAX_WORKERS:
        what = "WorkerCapacity" if modes["Mode"] == "concurrency" else "WorkerRateCapacity"
        raise EventError(
            f"{where}.{what}: level {top:g} would need {needed} workers, more than {MAX_WORKERS}"
        )
    component = _str(
        run.get("InferenceComponentName", ""),
        f"{where}.InferenceComponentName",
        max_length=63,
        allow_empty=True,
    )
    if component and not SAGEMAKER_NAME.fullmatch(component):
        raise EventError(f"{where}.InferenceComponentName: {shown(component)} is not a name")
    price = run.get("PricePerHour")
    return {
        "Name": _matching(_field(run, "Name", where), f"{where}.Name", RUN_NAME, 80),
        "HandleUrl": _https_url(_field(run, "HandleUrl", where), f"{where}.HandleUrl"),
        "Deadline": _float(_field(run, "Deadline", where), f"{where}.Deadline", 0, 1e11),
        "StartedAt": _float(_field(run, "StartedAt", where), f"{where}.StartedAt", 0, 1e11),
        "Bucket": bucket,
        "Prefix": prefix,
        "EndpointName": _matching(
            _field(run, "EndpointName", where), f"{where}.EndpointName", SAGEMAKER_NAME, 63
        ),
        "InferenceComponentName": component,
        "InputTokens": _int(
            _field(run, "InputTokens", where), f"{where}.InputTokens", 1, MAX_TOKENS
        ),
        "OutputTokens": _int(
            _field(run, "OutputTokens", where), f"{where}.OutputTokens", 1, MAX_TOKENS
        ),
        "Stream": _bool(_field(run, "Stream", where), f"{where}.Stream"),
        "Format": fmt,
        **modes,
        "RequestsPerLevel": _int(
            run.get("RequestsPerLevel", 0), f"{where}.RequestsPerLevel", 0, MAX_REQUESTS
        ),
        "WorkerCapacity": capacity,
        "Copies": _int(run.get("Copies", 1), f"{where}.Copies", 1, 10_000),
        "Rule": {
            "MinGainPerDoubling": _float(
                _field(rule, "MinGainPerDoubling", f"{where}.Rule"),
                f"{where}.Rule.MinGainPerDoubling",
                0.0,
                10.0,
            ),
            "SloMsPerToken": _optional_float(rule, "SloMsPerToken", f"{where}.Rule", 1e6),
            "MaxErrorRate": _optional_float(rule, "MaxErrorRate", f"{where}.Rule", 1.0),
        },
        "Gate": {
            "MaxP50MsPerToken": _optional_float(gate, "MaxP50MsPerToken", f"{where}.Gate", 1e6),
            "MinKneeConcurrency": _optional_float(
                gate, "MinKneeConcurrency", f"{where}.Gate", MAX_CONCURRENCY
            ),
            "MinOutputTokensPerS": _optional_float(
                gate, "MinOutputTokensPerS", f"{where}.Gate", 1e9
            ),
            "MinSustainableRate": _optional_float(
                gate, "MinSustainableRate", f"{where}.Gate", MAX_RATE
            ),
        },
        "PricePerHour": None
        if price is None or price == ""
        else _float(price, f"{where}.PricePerHour", 0.0, 1e6),
        "PriceSource": _str(
            run.get("PriceSource", ""), f"{where}.PriceSource", max_length=300, allow_empty=True
        ),
    }


def requests_for(run: Mapping[str, Any], level: float) -> int:
    """Requests of one level: the configured count, else 4 x concurrency and at least 16
    (closed loop), or the rate x 10 s and at least 32 (open loop)."""
    if run["Mode"] == "rate":
        return rate_level_requests(level, int(run["RequestsPerLevel"]) or None)
    return int(run["RequestsPerLevel"]) or max(4 * int(level), 16)


def workers_of(run: Mapping[str, Any], level: float) -> int:
    """Workers a level needs: one per ``WorkerCapacity`` requests in flight (closed loop), or
    per ``WorkerRateCapacity`` requests/s and ``WorkerCapacity`` of the concurrency cap (open
    loop)."""
    if run["Mode"] == "rate":
        capped = run["MaxConcurrency"]
        return max(
            math.ceil(level / run["WorkerRateCapacity"] - 1e-9),
            workers_for(capped, run["WorkerCapacity"]) if capped else 1,
        )
    return workers_for(int(level), run["WorkerCapacity"])


def check_level(value: Any, run: Mapping[str, Any], where: str) -> Any:
    """A level of this run: one of its sweep's, or within its search's range."""
    level = _rate(value, where) if run["Mode"] == "rate" else _concurrency(value, where)
    listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
    within = listed[0] <= level <= listed[-1] if run["Search"] else level in listed
    if not within:
        raise EventError(f"{where}: {level} is not a level of this run")
    return level


def level_of(record: Mapping[str, Any]) -> Any:
    """The level a record measured: its rate (open loop) or concurrency."""
    distribution = record["Distribution"]
    return distribution["rate"] if "rate" in distribution else distribution["concurrency"]


def split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` shares differing by at most one."""
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def workers_for(concurrency: int, capacity: int) -> int:
    """Workers a level needs: one per ``capacity`` concurrent requests."""
    return max(1, math.ceil(concurrency / capacity))


def samples_key(run: Mapping[str, Any], level: float, worker: int) -> str:
    """Where one worker writes the raw samples of one level (without the extension)."""
    if run["Mode"] == "rate":
        return f"{run['Prefix']}samples/rate-{level:g}/worker-{worker:03d}"
    return f"{run['Prefix']}samples/level-{int(level):05d}/worker-{worker:03d}"


def results_key(run: Mapping[str, Any], name: str) -> str:
    return f"{run['Prefix']}{name}"


# ----- helpers -------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


# ----- the custom resources ------------------------------------------------------------------


def run_name(stem: str, handle_url: str) -> str:
    """``<stem>-<6 hex of the wait-condition handle>``: duplicates of one CloudFormation event
    (same handle) name the same run; a new deployment (new handle) names a new one."""
    name = f"{stem}-{hashlib.sha256(handle_url.encode()).hexdigest()[:6]}"
    if len(name) > 80:
        raise EventError(f"run name {name!r} exceeds Step Functions' 80 characters")
    return name


def check_request_type(event: Any) -> str:
    if not isinstance(event, Mapping):
        raise EventError(f"event: expected an object, got {type(event).__name__}")
    request_type = event.get("RequestType")
    if request_type not in REQUEST_TYPES:
        raise EventError(
            f"RequestType: expected Create, Update or Delete, got {shown(request_type)}"
        )
    return str(request_type)


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of the execution ``name`` of a state machine."""
    return f"{state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{name}"


def stop_run(event: Mapping[str, Any], *, sfn: Any, budget: Budget) -> str:
    """Delete: stop the run's execution if it still runs, so no further level starts.

    Best effort and lenient, so deletions and rollbacks never get stuck: a physical id that is
    not this resource's run (a failed create's placeholder, anything malformed) is left alone
    without a call; a run that never started or already ended needs nothing; a stop that fails
    is logged, and the sweep then ends at its next step, as its state machine and Lambdas are
    deleted with the stack. Returns what was done.
    """
    physical = event.get("PhysicalResourceId")
    props = event.get("ResourceProperties")
    props = props if isinstance(props, Mapping) else {}
    stem, arn = props.get("RunNameStem"), props.get("StateMachineArn")
    if not (
        sfn is not None
        and isinstance(stem, str)
        and RUN_STEM.fullmatch(stem)
        and isinstance(arn, str)
        and STATE_MACHINE_ARN.fullmatch(arn)
        and isinstance(physical, str)
        and re.fullmatch(re.escape(stem) + r"-[0-9a-f]{6}", physical)
    ):
        return "not a run of this resource"
    try:
        call_with_retry(sfn.stop_execution, budget, executionArn=execution_arn(arn, physical))
    except Exception as error:
        if error_code(error) == "ExecutionDoesNotExist":
            return "never started"
        print(json.dumps({"StopExecution": physical, "Failed": truncate(explain(error))}))
        return f"not stopped: {truncate(explain(error), 200)}"
    return "stopped"


def handle_event(
    event: Mapping[str, Any], *, sfn: Any, now: float, budget: Budget | None = None
) -> dict[str, Any]:
    """``Custom::SageMakerEndpointBenchmark``: start the sweep; Delete stops it.

    Returns ``{"PhysicalResourceId", "Data"}``. The sweep is a Step Functions execution named
    after the run, so a duplicate event starts nothing more (``ExecutionAlreadyExists``). An
    Update with an unchanged definition and handle keeps the run; a changed one starts a new
    run (its wait condition is new too: its logical id carries the definition hash). Delete
    always succeeds (see ``stop_run``). ``budget`` (default: no limit) bounds the retries.
    """
    budget = budget or Budget()
    request_type = check_request_type(event)
    if request_type == "Delete":
        physical = event.get("PhysicalResourceId")
        outcome = stop_run(event, sfn=sfn, budget=budget)
        print(json.dumps({"Delete": shown(physical), "Outcome": outcome}))
        usable = isinstance(physical, str) and 0 < len(physical) <= 1024
        return {"PhysicalResourceId": physical if usable else "none", "Data": {}}
    props = _field(event, "ResourceProperties", "event")
    if not isinstance(props, Mapping):
        raise EventError("ResourceProperties: expected an object")
    _known(props, RESOURCE_PROPERTIES | IGNORED_PROPERTIES, "ResourceProperties")
    stem = _matching(
        _field(props, "RunNameStem", "ResourceProperties"),
        "ResourceProperties.RunNameStem",
        RUN_STEM,
        73,
    )
    handle = _https_url(
        _field(props, "WaitHandle", "ResourceProperties"), "ResourceProperties.WaitHandle"
    )
    name = run_name(stem, handle)
    wait_seconds = _int(
        _field(props, "SweepSeconds", "ResourceProperties"),
        "ResourceProperties.SweepSeconds",
        60,
        MAX_SWEEP_SECONDS,
    )
    prefix = _matching(
        _field(props, "ResultsPrefix", "ResourceProperties"),
        "ResourceProperties.ResultsPrefix",
        KEY_PREFIX,
        800,
    )
    static = _field(props, "Run", "ResourceProperties")
    if not isinstance(static, Mapping):
        raise EventError("ResourceProperties.Run: expected an object")
    computed = {"Name", "HandleUrl", "Deadline", "StartedAt", "Prefix"}
    _known(static, RUN_KEYS - computed, "ResourceProperties.Run")
    run = check_run(
        {
            **static,
            "Name": name,
            "HandleUrl": handle,
            "Deadline": int(now) + wait_seconds,
            "StartedAt": now,
            "Prefix": f"{prefix}{name}/",
        },
        "ResourceProperties.Run",
    )
    state_machine = _matching(
        _field(props, "StateMachineArn", "ResourceProperties"),
        "ResourceProperties.StateMachineArn",
        STATE_MACHINE_ARN,
        256,
    )
    data = {
        "RunName": name,
        "ResultsS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'results.json')}",
    }
    if request_type == "Update" and event.get("PhysicalResourceId") == name:
        return {"PhysicalResourceId": name, "Data": data}
    try:
        call_with_retry(
            sfn.start_execution,
            budget,
            stateMachineArn=state_machine,
            name=name,
            input=json.dumps({"Run": run, "Levels": [], "Done": False}, sort_keys=True),
        )
    except Exception as error:
        if error_code(error) != "ExecutionAlreadyExists":
            # A failed Create reports the run's name, so the rollback's Delete stops a run that
            # may have started; a failed Update keeps the current id.
            raise HandlerError(
                f"Starting the benchmark {name} failed: {explain(error)}",
                physical_id=name if request_type == "Create" else None,
            ) from error
    return {"PhysicalResourceId": name, "Data": data}


ATTRIBUTES = (
    "KneeConcurrency",
    "KneeConcurrencyPerCopy",
    "KneeP50MsPerToken",
    "MaxOutputTokensPerSecond",
    "MaxThroughputConcurrency",
    "LowestLevelP50MsPerToken",
    "SustainableRequestsPerSecond",
    "ResultsS3Uri",
    "ChartS3Uri",
    "RunName",
)


def handle_output_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """``Custom::SageMakerEndpointBenchmarkOutput``: the sweep's figures as attributes.

    ``WaitData`` is the wait condition's ``Data`` attribute: a JSON object of the signals'
    ``UniqueId`` -> ``Data``; the sweep signals once, with its figures as compact JSON.
    """
    if check_request_type(event) == "Delete":
        physical = event.get("PhysicalResourceId")
        usable = isinstance(physical, str) and 0 < len(physical) <= 1024
        return {"PhysicalResourceId": physical if usable else "none", "Data": {}}
    props = _field(event, "ResourceProperties", "event")
    if not isinstance(props, Mapping):
        raise EventError("ResourceProperties: expected an object")
    _known(props, frozenset({"WaitData"}) | IGNORED_PROPERTIES, "ResourceProperties")
    raw = _str(
        _field(props, "WaitData", "ResourceProperties"),
        "ResourceProperties.WaitData",
        max_length=65536,
    )
    try:
        signals = json.loads(raw)
        values = list(signals.values()) if isinstance(signals, dict) else []
        figures = json.loads(values[0]) if len(values) == 1 else None
    except (ValueError, TypeError) as error:
        raise EventError(
            f"ResourceProperties.WaitData: not the sweep's signal data ({error})"
        ) from error
    if not isinstance(figures, dict) or any(key not in figures for key in ATTRIBUTES):
        raise EventError(
            f"ResourceProperties.WaitData: expected one signal carrying {', '.join(ATTRIBUTES)}"
        )
    for key in ATTRIBUTES:
        value = figures[key]
        if not isinstance(value, str | int | float) or len(str(value)) > 1024:
            raise EventError(f"ResourceProperties.WaitData: {key} is not a short scalar")
    data = {key: str(figures[key]) for key in ATTRIBUTES}
    return {"PhysicalResourceId": f"{data['RunName'][:1000]}-output", "Data": data}


# ----- one worker ----------------------------------------------------------------------------


def check_slice(item: Any, run: Mapping[str, Any], where: str = "Slice") -> dict[str, Any]:
    """One worker's share of one level, validated against the run.

    ``Concurrency`` is the worker's share of the requests in flight (closed loop) or of the
    concurrency cap (open loop; 0: no cap)."""
    level = check_level(_field(item, "Level", where), run, f"{where}.Level")
    workers = _int(_field(item, "Workers", where), f"{where}.Workers", 1, MAX_WORKERS)
    if workers != workers_of(run, level):
        raise EventError(
            f"{where}.Workers: level {level} runs on {workers_of(run, level)} workers, "
            f"not {workers}"
        )
    worker = _int(_field(item, "Worker", where), f"{where}.Worker", 0, workers - 1)
    in_flight = level if run["Mode"] == "concurrency" else run["MaxConcurrency"]
    return {
        "Level": level,
        "Workers": workers,
        "Worker": worker,
        "Concurrency": split(in_flight, workers)[worker],
        "Requests": split(requests_for(run, level), workers)[worker],
        "FirstIndex": sum(split(requests_for(run, level), workers)[:worker]),
        "StartAt": _float(_field(item, "StartAt", where), f"{where}.StartAt", 0, 1e11),
    }


def _claim(s3: Any, bucket: str, key: str, budget: Budget) -> bool:
    """Create ``key`` only if absent (S3 conditional write); False when it already exists.

    A retry after a lost response to our own claim also finds it taken: the worker then runs
    nothing and the level fails loudly for its missing samples, never with doubled load.
    """
    try:
        call_with_retry(s3.put_object, budget, Bucket=bucket, Key=key, Body=b"", IfNoneMatch="*")
    except Exception as error:
        if error_code(error) in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        if type(error).__name__ != "ParamValidationError":
            raise
        # A runtime SDK older than S3 conditional writes (botocore < 1.35): claim anyway.
        call_with_retry(s3.put_object, budget, Bucket=bucket, Key=key, Body=b"")
    return True


def run_worker(
    event: Mapping[str, Any],
    *,
    invoker: Invoker,
    s3: Any,
    remaining_s: float,
    clock: Clock = epoch_now,
    sleep: Sleep = time.sleep,
    margin_s: float = WORKER_MARGIN_S,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Run one worker's share of one level; write its raw samples; return a small summary.

    Idempotent: the worker first claims its slice with a conditional write, so a duplicate or
    retried event that finds the claim runs no load (the samples of the first one count).
    The worker waits for the level's common start time, then stops starting requests at
    whichever comes first: its share of the requests, its Lambda's remaining time less
    ``margin_s``, or the sweep's deadline. What it measured until then is kept. S3 calls are
    retried within ``budget`` (default: the time ``remaining_s`` leaves on ``clock``).
    """
    invoked = clock()
    if budget is None:
        budget = Budget(
            lambda: (invoked + remaining_s - clock()) * 1000.0,
            sleep,
            reserve=0.0,
            call_seconds=WORKER_CALL_SECONDS,
        )
    run = check_run(_field(event, "Run", "event"))
    piece = check_slice(_field(event, "Slice", "event"), run)
    key = samples_key(run, piece["Level"], piece["Worker"])
    summary = {"Level": piece["Level"], "Worker": piece["Worker"], "Key": f"{key}.json"}
    if not _claim(s3, run["Bucket"], f"{key}.claim", budget):
        return {**summary, "Duplicate": True}
    stop_at = min(invoked + remaining_s - margin_s, run["Deadline"])
    wait = min(piece["StartAt"], stop_at) - clock()
    if wait > 0:
        sleep(wait)
    started = clock()
    late = max(0.0, started - piece["StartAt"])
    duration = stop_at - started
    samples: list[RequestSample] = []
    spec = payload_of(run)
    if duration > 0 and piece["Requests"] > 0 and run["Mode"] == "rate":
        if not isinstance(invoker, AsyncInvoker):
            raise EventError("an open-loop level needs the asyncio client")
        offsets = arrival_of(run).share(
            piece["Level"], requests_for(run, piece["Level"]), piece["Worker"], piece["Workers"]
        )
        samples = run_rate_level(
            invoker,
            spec,
            offsets,
            max_concurrency=piece["Concurrency"] or None,
            first_index=piece["FirstIndex"],
            start_at=piece["StartAt"],
            deadline=stop_at,
        )
    elif duration > 0 and piece["Requests"] > 0:
        samples = run_level(
            invoker,
            spec,
            piece["Concurrency"],
            requests=piece["Requests"],
            duration_s=duration,
            first_index=piece["FirstIndex"],
        )
    for sample in samples:
        sample.concurrency = piece["Concurrency"] if run["Mode"] == "rate" else piece["Level"]
    body = {
        "level": piece["Level"],
        "worker": piece["Worker"],
        "workers": piece["Workers"],
        "concurrency": piece["Concurrency"],
        "requested": piece["Requests"],
        "start_at": piece["StartAt"],
        "late_s": late,
        "samples": [sample.to_dict() for sample in samples],
    }
    call_with_retry(
        s3.put_object,
        budget,
        Bucket=run["Bucket"],
        Key=f"{key}.json",
        Body=json.dumps(body).encode(),
        ContentType="application/json",
    )
    return {
        **summary,
        "Samples": len(samples),
        "Truncated": len(samples) < piece["Requests"],
        "LateS": round(late, 6),
    }


# ----- aggregation, planning, finishing ------------------------------------------------------


def _read_worker(
    s3: Any, run: Mapping[str, Any], level: int, worker: int, budget: Budget
) -> dict[str, Any]:
    key = f"{samples_key(run, level, worker)}.json"
    try:
        body = call_with_retry(s3.get_object, budget, Bucket=run["Bucket"], Key=key)["Body"].read()
    except Exception as error:
        if error_code(error) in ("NoSuchKey", "404", "AccessDenied"):
            # Without s3:ListBucket, S3 answers AccessDenied for a missing key.
            raise EventError(
                f"worker {worker} of level {level} wrote no samples (s3://{run['Bucket']}/{key} "
                f"is missing: {error_code(error)}); it failed or timed out before writing them"
            ) from error
        raise
    try:
        data = json.loads(body)
    except ValueError as error:
        raise EventError(f"s3://{run['Bucket']}/{key}: not JSON ({error})") from error
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise EventError(f"s3://{run['Bucket']}/{key}: not a worker's samples")
    return data


def start_skew(first_starts: Sequence[float]) -> float:
    """Spread of the workers' first request starts (0 for one worker)."""
    return max(first_starts) - min(first_starts) if len(first_starts) > 1 else 0.0


def aggregate_level(
    s3: Any, run: Mapping[str, Any], level: Any, workers: int, budget: Budget | None = None
) -> tuple[list[RequestSample], dict[str, Any]]:
    """Merge the raw samples of every worker of ``level``; returns them and the level's record.

    The record holds the summary (percentiles over the merged raw samples, never averages of
    the workers' percentiles) and the distribution: workers, each one's first start, and the
    start skew measured from them against the stated limit.
    """
    merged: list[RequestSample] = []
    first_starts: list[float] = []
    late: list[float] = []
    budget = budget or Budget()
    for worker in range(workers):
        data = _read_worker(s3, run, level, worker, budget)
        try:
            samples = [RequestSample.from_dict(item) for item in data["samples"]]
            late.append(_float(data.get("late_s", 0.0), "late_s", 0.0, 1e6))
        except (EventError, KeyError, TypeError, ValueError, AttributeError) as error:
            raise EventError(
                f"worker {worker} of level {level}: malformed samples ({explain(error)})"
            ) from error
        if samples:
            first_starts.append(min(sample.start for sample in samples))
        merged.extend(samples)
    skew = start_skew(first_starts)
    rate = run["Mode"] == "rate"
    in_flight = run["MaxConcurrency"] if rate else level
    distribution = {
        **({"rate": level} if rate else {"concurrency": level}),
        "workers": workers,
        "worker_concurrency": split(in_flight, workers) if in_flight else None,
        "first_start_per_worker": first_starts,
        "late_s_per_worker": late,
        "start_skew_s": skew,
        "start_skew_limit_s": START_SKEW_LIMIT_S,
        "within_skew_limit": skew <= START_SKEW_LIMIT_S,
    }
    record: dict[str, Any] = {"Distribution": distribution, "Level": None, "FirstError": None}
    if merged:
        slo = slo_of(run)
        summary = (
            summarize_rate_level(merged, level, slo)
            if rate
            else summarize_level(merged, level, slo if slo.stated else None)
        )
        record["Level"] = summary.to_dict()
        failed = [s for s in merged if s.error is not None]
        if failed:
            code, _ = Counter(s.error_code or s.error or "" for s in failed).most_common(1)[0]
            example = next(s for s in failed if (s.error_code or s.error or "") == code)
            record["FirstError"] = f"{code}: {example.error_message or ''}".strip()
    return merged, record


def payload_of(run: Mapping[str, Any]) -> PayloadSpec:
    """The run's requests: its workload, sent by its protocol."""
    return PayloadSpec.of(
        Workload(run["InputTokens"], run["OutputTokens"]),
        RequestProtocol(PayloadFormat(run["Format"]), run["Stream"]),
    )


def arrival_of(run: Mapping[str, Any]) -> Arrival:
    """The run's arrival process (open loop)."""
    return Arrival(run["Arrival"], run["Seed"])


def slo_of(run: Mapping[str, Any]) -> GoodputSlo:
    """The run's goodput SLOs."""
    slo = run["Slo"]
    return GoodputSlo(slo["MsPerToken"], slo["TtftMs"], slo["Fraction"])


def plan_level(
    run: Mapping[str, Any], level: Any, now: float, lead_s: float = START_LEAD_S
) -> dict[str, Any]:
    """The Map items of one level: one per worker, all with the same start time."""
    workers = workers_of(run, level)
    start_at = round(now + lead_s, 3)
    return {
        "Pending": {"Level": level, "Workers": workers, "StartAt": start_at},
        "Slices": [
            {"Level": level, "Workers": workers, "Worker": index, "StartAt": start_at}
            for index in range(workers)
        ],
    }


def search_rule(run: Mapping[str, Any]) -> SearchRule | None:
    """The run's search over its levels' range, if it searches."""
    if not run["Search"]:
        return None
    listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
    return SearchRule(run["Search"], listed[0], listed[-1], run["SearchResolution"])


def knee_rule_of(run: Mapping[str, Any]) -> KneeRule:
    """The run's knee rule."""
    return KneeRule(
        min_gain_per_doubling=run["Rule"]["MinGainPerDoubling"],
        slo_ms_per_token=run["Rule"]["SloMsPerToken"],
        max_error_rate=run["Rule"]["MaxErrorRate"],
    )


def next_planned(run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]]) -> Any:
    """The next level to run: the sweep's next, or the search's (``None``: done)."""
    rule = search_rule(run)
    if rule is None:
        done = {level_of(record) for record in levels}
        listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
        return next((level for level in listed if level not in done), None)
    measured = [LevelResult.from_dict(dict(r["Level"])) for r in levels if r.get("Level")]
    judge = knee_judge(knee_rule_of(run)) if rule.kind == "knee" else sustainable_judge
    found = next_level(rule, measured, judge).next
    if found is None:
        return None
    return int(found) if rule.integer else found


def check_levels(levels: Any, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records of the levels already run (they travel in the workflow's state)."""
    if levels is None:
        return []
    if not isinstance(levels, list) or len(levels) > MAX_RUN_LEVELS:
        raise EventError(f"state.Levels: expected a list of at most {MAX_RUN_LEVELS} records")
    for index, record in enumerate(levels):
        where = f"state.Levels[{index}]"
        distribution = _field(record, "Distribution", where)
        key = "rate" if run["Mode"] == "rate" else "concurrency"
        try:
            check_level(
                _field(distribution, key, f"{where}.Distribution"),
                run,
                f"{where}.Distribution.{key}",
            )
        except EventError as error:
            raise EventError(f"{where}: level is not a level of this run ({error})") from error
        summary = record.get("Level")
        if summary is not None:
            try:
                LevelResult.from_dict(dict(summary))
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                raise EventError(
                    f"{where}.Level: not a level summary ({explain(error)})"
                ) from error
    return [dict(record) for record in levels]


def advance_step(
    state: Mapping[str, Any],
    *,
    s3: Any,
    put: Put,
    now: float,
    lead_s: float = START_LEAD_S,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """One step of the sweep (see the module doc); returns the next state (``Done`` ends it).

    S3 calls and the signal are retried within ``budget`` (default: no limit); out of time, it
    raises, and the workflow's catch signals FAILURE with the reason."""
    budget = budget or Budget()
    run = check_run(_field(state, "Run", "state"))
    levels = check_levels(state.get("Levels"), run)
    pending = state.get("Pending")
    if pending:
        level = check_level(_field(pending, "Level", "state.Pending"), run, "state.Pending.Level")
        workers = _int(
            _field(pending, "Workers", "state.Pending"), "state.Pending.Workers", 1, MAX_WORKERS
        )
        if workers != workers_of(run, level):
            raise EventError(
                f"state.Pending.Workers: level {level} runs on "
                f"{workers_of(run, level)} workers, not {workers}"
            )
        if len(levels) >= MAX_RUN_LEVELS:
            raise EventError(f"state.Levels: a run measures at most {MAX_RUN_LEVELS} levels")
        _, record = aggregate_level(s3, run, level, workers, budget)
        levels = [r for r in levels if level_of(r) != level] + [record]
        summary = record["Level"]
        if summary is None:
            return finish(
                run,
                levels,
                s3=s3,
                put=put,
                now=now,
                budget=budget,
                failure=f"level {level} sent no request before the sweep's deadline",
            )
        if summary["errors"] == summary["requests"]:
            return finish(
                run,
                levels,
                s3=s3,
                put=put,
                now=now,
                budget=budget,
                failure=f"every request of level {level} failed ({record['FirstError']})",
            )
    upcoming = next_planned(run, levels)
    if upcoming is None:
        return finish(run, levels, s3=s3, put=put, now=now, budget=budget)
    if now >= run["Deadline"]:
        return finish(
            run,
            levels,
            s3=s3,
            put=put,
            now=now,
            budget=budget,
            failure=f"the search ran out of time before level {upcoming}"
            if run["Search"]
            else f"the sweep ran out of time before levels {remaining_levels(run, levels)}",
        )
    return {
        "Run": run,
        "Levels": levels,
        "Done": False,
        **plan_level(run, upcoming, now, lead_s),
    }


def remaining_levels(run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The sweep's levels not run yet."""
    done = {level_of(record) for record in levels}
    listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
    return [level for level in listed if level not in done]


def build_result(
    run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]], now: float
) -> BenchmarkResult:
    """The sweep as a :class:`BenchmarkResult` (the CLI's results schema, whatever the mode)."""
    rule = knee_rule_of(run)
    in_run_order = [LevelResult.from_dict(dict(r["Level"])) for r in levels if r.get("Level")]
    rate = run["Mode"] == "rate"
    measured = sorted(
        in_run_order, key=lambda lv: (lv.target_rate_per_s or 0.0) if rate else lv.concurrency
    )
    slo = slo_of(run)
    search = search_rule(run)
    searched = None
    if search is not None:
        judge = knee_judge(rule) if search.kind == "knee" else sustainable_judge
        pass_rule = rule.describe() if search.kind == "knee" else SUSTAINABLE_RULE
        searched = search_section(
            search,
            next_level(search, in_run_order, judge),
            sum(level.requests for level in in_run_order),
            pass_rule,
        )
    max_concurrency = run["MaxConcurrency"] or None
    spec = payload_of(run)
    target = {"endpoint_name": run["EndpointName"], "client": "EndpointBenchmark (Lambda workers)"}
    if run["InferenceComponentName"]:
        target["inference_component"] = run["InferenceComponentName"]
    return BenchmarkResult(
        payload=spec.describe(),
        levels=measured,
        knee=Knee(None, OPEN_LOOP_KNEE) if rate else find_knee(measured, rule),
        target=target,
        slo_ms_per_token=slo.ms_per_token if rate else rule.slo_ms_per_token,
        price_per_hour=run["PricePerHour"],
        price_basis=run["PriceSource"] or None,
        started_at=run["StartedAt"],
        finished_at=now,
        mode=run["Mode"],
        open_loop=open_loop_settings(arrival_of(run), max_concurrency) if rate else None,
        goodput=goodput_section(slo, measured) if rate else (slo.to_dict() if slo.stated else None),
        search=searched,
    )


def figures_of(run: Mapping[str, Any], result: BenchmarkResult) -> dict[str, Any]:
    """The attributes other resources consume. When even the lowest level trips the knee
    rule, the knee attributes fall back to the lowest level (``KneeFound`` false); an open-loop
    run has no knee (the same fallback) but a sustainable rate (0: none, or closed loop)."""
    lowest = result.levels[0] if result.levels else None
    knee_level = result.knee_level or lowest
    best = result.max_throughput_level
    knee = knee_level.concurrency if knee_level else 0
    return {
        "RunName": run["Name"],
        "KneeFound": result.knee.concurrency is not None,
        "KneeConcurrency": knee,
        "KneeConcurrencyPerCopy": max(1, knee // run["Copies"]) if knee else 0,
        "KneeP50MsPerToken": round(knee_level.p50_ms_per_token or 0.0, 3) if knee_level else 0,
        "MaxOutputTokensPerSecond": round(best.output_tokens_per_s, 3) if best else 0,
        "MaxThroughputConcurrency": best.concurrency if best else 0,
        "LowestLevelP50MsPerToken": round(lowest.p50_ms_per_token or 0.0, 3) if lowest else 0,
        "SustainableRequestsPerSecond": sustainable_rate(result.levels) or 0
        if result.mode == "rate"
        else 0,
        "ResultsS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'results.json')}",
        "ChartS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'chart.svg')}",
    }


def gate_failures(run: Mapping[str, Any], result: BenchmarkResult) -> list[str]:
    """Why the measured figures fail the gate (empty: they pass, or there is no gate)."""
    gate = run["Gate"]
    failures = []
    lowest = result.levels[0] if result.levels else None
    limit = gate["MaxP50MsPerToken"]
    if limit is not None and lowest is not None:
        measured = lowest.p50_ms_per_token
        if measured is None or measured > limit:
            failures.append(
                f"p50 ms/token at {_level_name(lowest)} is {_fmt(measured)}, "
                f"above the SLO of {limit:g}"
            )
    minimum = gate["MinKneeConcurrency"]
    if minimum is not None and (result.knee.concurrency or 0) < minimum:
        failures.append(
            f"knee concurrency is {result.knee.concurrency or 'none'} "
            f"(first level tripping the rule: {result.knee.tripped_at}, {result.knee.reason}), "
            f"below the minimum of {minimum:g}"
        )
    tokens = gate["MinOutputTokensPerS"]
    best = result.max_throughput_level
    if tokens is not None and (best is None or best.output_tokens_per_s < tokens):
        failures.append(
            f"max output throughput is {_fmt(best.output_tokens_per_s if best else 0.0)} tokens/s, "
            f"below the minimum of {tokens:g}"
        )
    rate = gate["MinSustainableRate"]
    if rate is not None:
        found = sustainable_rate(result.levels) if result.mode == "rate" else None
        if found is None or found < rate:
            failures.append(
                f"sustainable rate is {found if found is not None else 'none'} requests/s, "
                f"below the minimum of {rate:g}"
            )
    return failures


def _level_name(level: LevelResult) -> str:
    if level.target_rate_per_s is not None:
        return f"{level.target_rate_per_s:g} requests/s"
    return f"concurrency {level.concurrency}"


def _measured(figures: Mapping[str, Any]) -> str:
    return (
        f"Measured: knee {figures['KneeConcurrency']}"
        f"{'' if figures['KneeFound'] else ' (no level met the knee rule: lowest level)'}"
        f" at {figures['KneeP50MsPerToken']} ms/token p50, max "
        f"{figures['MaxOutputTokensPerSecond']} output tokens/s at concurrency "
        f"{figures['MaxThroughputConcurrency']}, lowest level {figures['LowestLevelP50MsPerToken']}"
        f" ms/token p50"
        + (
            f", sustainable rate {figures['SustainableRequestsPerSecond']} requests/s"
            if figures["SustainableRequestsPerSecond"]
            else ""
        )
        + f". Results: {figures['ResultsS3Uri']}"
    )


def finish(
    run: Mapping[str, Any],
    levels: Sequence[Mapping[str, Any]],
    *,
    s3: Any,
    put: Put,
    now: float,
    failure: str | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Write ``results.json`` and ``chart.svg``, apply the gate, signal the wait condition."""
    budget = budget or Budget()
    result = build_result(run, levels, now)
    figures = figures_of(run, result)
    failures = ([failure] if failure else []) + gate_failures(run, result)
    data = result.to_dict()
    data["distribution"] = [dict(r["Distribution"]) for r in levels]
    data["run"] = {
        "name": run["Name"],
        "worker_capacity": run["WorkerCapacity"],
        "worker_rate_capacity": run["WorkerRateCapacity"] if run["Mode"] == "rate" else None,
        "copies": run["Copies"],
        "price_source": run["PriceSource"] or None,
        "start_skew_limit_s": START_SKEW_LIMIT_S,
    }
    data["gate"] = {"limits": run["Gate"], "passed": not failures, "failures": failures}
    data["attributes"] = figures
    call_with_retry(
        s3.put_object,
        budget,
        Bucket=run["Bucket"],
        Key=results_key(run, "results.json"),
        Body=json.dumps(data, indent=2).encode(),
        ContentType="application/json",
    )
    call_with_retry(
        s3.put_object,
        budget,
        Bucket=run["Bucket"],
        Key=results_key(run, "chart.svg"),
        Body=render_svg(result).encode(),
        ContentType="image/svg+xml",
    )
    if failures:
        reason = f"Benchmark {run['Name']} failed: {'; '.join(failures)}. {_measured(figures)}"
        send(run["HandleUrl"], wait_condition_signal("FAILURE", reason, run["Name"]), put, budget)
        outcome = "FAILURE"
    else:
        reason = f"Benchmark {run['Name']} completed. {_measured(figures)}"
        compact = json.dumps(figures, separators=(",", ":"), sort_keys=True)
        signal = wait_condition_signal("SUCCESS", reason, run["Name"], compact)
        send(run["HandleUrl"], signal, put, budget)
        outcome = "SUCCESS"
    return {"Run": dict(run), "Levels": list(levels), "Done": True, "Outcome": outcome}


def report_error(
    state: Mapping[str, Any], *, put: Put, budget: Budget | None = None
) -> dict[str, Any]:
    """The workflow's catch: signal FAILURE with the caught error's message (any error shape).

    Only a state without a usable handle raises (there is no one to signal)."""
    run = state.get("Run") if isinstance(state, Mapping) else None
    handle = run.get("HandleUrl") if isinstance(run, Mapping) else None
    name = run.get("Name", "benchmark") if isinstance(run, Mapping) else "benchmark"
    if not (isinstance(handle, str) and len(handle) <= 2048 and HTTPS_URL.fullmatch(handle)):
        raise EventError("state.Run.HandleUrl: missing or not an https URL, cannot signal")
    name = name if isinstance(name, str) and RUN_NAME.fullmatch(name) else "benchmark"
    assert isinstance(state, Mapping)
    error = state.get("Error") or {}
    cause = (
        str(error.get("Cause") or error.get("Error") or "unknown error")
        if isinstance(error, Mapping)
        else str(error)
    )
    cause = cause[:65536]
    try:  # Lambda errors arrive as a JSON cause {"errorMessage", "errorType", ...}
        parsed = json.loads(cause)
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            cause = f"{parsed.get('errorType', 'Error')}: {parsed['errorMessage']}"
    except (ValueError, RecursionError):
        pass
    signal = wait_condition_signal("FAILURE", f"Benchmark {name} failed: {cause}", name)
    send(handle, signal, put, budget or Budget())
    return {"Done": True, "Outcome": "FAILURE"}


# ----- Lambda entry points (real clients, real HTTP) -----------------------------------------


def respond(
    event: Any,
    put: Put,
    handler: Callable[[], dict[str, Any]],
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Run ``handler`` and PUT the custom resource response; raises only if the PUT keeps failing.

    Any failure of the handler, a malformed event included, is answered FAILED with its reason;
    a Delete always answers SUCCESS: a benchmark never blocks deleting a stack, even after a
    failed create. An event without a usable ``ResponseURL`` goes unanswered (no one to answer).
    """
    budget = budget or Budget()
    event = event if isinstance(event, Mapping) else {}
    body: dict[str, Any] = {
        key: event.get(key) if isinstance(event.get(key), str) else ""
        for key in ("StackId", "RequestId", "LogicalResourceId")
    }
    try:
        body.update(Status="SUCCESS", **handler())
    except Exception as error:
        physical = event.get("PhysicalResourceId")
        request_id = body["RequestId"] if len(body["RequestId"]) <= 200 else "request"
        fallback = (
            getattr(error, "physical_id", None)
            or (physical if isinstance(physical, str) and 0 < len(physical) <= 1024 else None)
            or f"failed-{request_id or 'request'}"
        )
        if event.get("RequestType") == "Delete":
            body.update(Status="SUCCESS", PhysicalResourceId=fallback, Data={})
        else:
            body.update(
                Status="FAILED", Reason=truncate(explain(error)), PhysicalResourceId=fallback
            )
    print(json.dumps({"Status": body["Status"], "Reason": body.get("Reason", "")}))
    url = event.get("ResponseURL")
    if isinstance(url, str) and len(url) <= 4096 and HTTPS_URL.fullmatch(url):
        send(url, body, put, budget)
    return body


def dispatch(event: Any, *, sfn: Any, now: float, budget: Budget) -> dict[str, Any]:
    """The custom resource type's handler (``on_event`` without the real clients)."""
    kind = event.get("ResourceType") if isinstance(event, Mapping) else None
    if kind == OUTPUT_RESOURCE_TYPE:
        return handle_output_event(event)
    if kind != RESOURCE_TYPE:
        raise EventError(f"ResourceType: unsupported {shown(kind)}")
    return handle_event(event, sfn=sfn, now=now, budget=budget)


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    budget = Budget.of(context)
    return respond(
        event,
        http_put,
        lambda: dispatch(event, sfn=_client("stepfunctions"), now=time.time(), budget=budget),
        budget,
    )


def worker(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one worker's share of one level."""
    from ...benchmarking import AsyncInvoker

    run = check_run(_field(event, "Run", "event"))
    invoker = AsyncInvoker(
        run["EndpointName"],
        inference_component=run["InferenceComponentName"] or None,
        region=os.environ.get("AWS_REGION"),
    )
    return run_worker(
        event,
        invoker=invoker,
        s3=_client("s3"),
        remaining_s=context.get_remaining_time_in_millis() / 1000.0,
        budget=Budget.of(context, reserve=0.0, call_seconds=WORKER_CALL_SECONDS),
    )


def advance(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one sweep step, or of the workflow's catch (``Error`` set)."""
    if not isinstance(event, Mapping):
        raise EventError(f"state: expected an object, got {type(event).__name__}")
    budget = Budget.of(context)
    if "Error" in event:
        return report_error(event, put=http_put, budget=budget)
    return advance_step(event, s3=_client("s3"), put=http_put, now=epoch_now(), budget=budget)

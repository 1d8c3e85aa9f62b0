"""One worker's share of one level (a Map iteration of the workflow): wait for the level's
common start time, keep its share of the concurrency in flight for its share of the requests
(closed loop), or send its seeded share of the level's arrival schedule from that start time
(open loop), stop starting requests before the Lambda's (or the sweep's) deadline, and write
the raw samples to S3.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...benchmarking import AsyncInvoker, Invoker, RequestSample, run_level
from ...benchmarking._clock import now as epoch_now
from ...benchmarking.open_loop import run_rate_level
from ..runtime_support import Budget, Sleep, call_with_retry, error_code
from .run_config import (
    MAX_WORKERS,
    arrival_of,
    check_level,
    check_run,
    payload_of,
    requests_for,
    samples_key,
    split,
    workers_of,
)
from .run_names import EventError, field, integer, number

WORKER_MARGIN_S = 90.0
"""A worker stops starting requests this long before its Lambda's timeout: requests in flight
finish within the invoker's 70 s read timeout, and the samples are written."""
WORKER_CALL_SECONDS = 0.0
"""A worker writes its samples with whatever time its margin (``WORKER_MARGIN_S``) left: one PUT
usually takes well under a second, and giving up would lose the level for sure. Retries still
sleep only when the backoff ends before the Lambda does."""
Clock = Callable[[], float]


def check_slice(item: Any, run: Mapping[str, Any], where: str = "Slice") -> dict[str, Any]:
    """One worker's share of one level, validated against the run.

    ``Concurrency`` is the worker's share of the requests in flight (closed loop) or of the
    concurrency cap (open loop; 0: no cap)."""
    level = check_level(field(item, "Level", where), run, f"{where}.Level")
    workers = integer(field(item, "Workers", where), f"{where}.Workers", 1, MAX_WORKERS)
    if workers != workers_of(run, level):
        raise EventError(
            f"{where}.Workers: level {level} runs on {workers_of(run, level)} workers, "
            f"not {workers}"
        )
    worker = integer(field(item, "Worker", where), f"{where}.Worker", 0, workers - 1)
    in_flight = level if run["Mode"] == "concurrency" else run["MaxConcurrency"]
    return {
        "Level": level,
        "Workers": workers,
        "Worker": worker,
        "Concurrency": split(in_flight, workers)[worker],
        "Requests": split(requests_for(run, level), workers)[worker],
        "FirstIndex": sum(split(requests_for(run, level), workers)[:worker]),
        "StartAt": number(field(item, "StartAt", where), f"{where}.StartAt", 0, 1e11),
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
    run = check_run(field(event, "Run", "event"))
    piece = check_slice(field(event, "Slice", "event"), run)
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

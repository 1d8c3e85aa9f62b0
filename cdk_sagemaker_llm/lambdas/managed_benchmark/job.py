"""The SageMaker AI benchmark job behind ``EndpointBenchmark(engine=BenchmarkEngine.managed())``:
created by the poll workflow's first step (named after the run, so a repeated step creates
nothing more: ``ResourceInUse``), described every poll, read back once completed, stopped by a
Delete or at the deadline. The results, the gate and the signal are the Lambda engine's
(``lambdas.benchmark.advance.finish``), so ``results.json`` and the attributes are the same.

Calls (botocore 1.44.5's SageMaker model): ``CreateAIBenchmarkJob`` (``AIBenchmarkJobName``,
``BenchmarkTarget.Endpoint.Identifier`` / ``InferenceComponents``, ``OutputConfig.
S3OutputLocation``, ``AIWorkloadConfigIdentifier``, ``RoleArn``), ``DescribeAIBenchmarkJob``
(``AIBenchmarkJobStatus``: ``InProgress``, ``Completed``, ``Failed``, ``Stopping``,
``Stopped``; ``FailureReason``; ``OutputConfig.S3OutputLocation``), ``StopAIBenchmarkJob``; S3
``ListObjectsV2`` and ``GetObject`` for the job's ``output.tar.gz``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ...benchmarking.aiperf import MANAGED_ENGINE, POLL_TIMEOUT_S, levels_of_archive
from ..benchmark.advance import finish
from ..benchmark.custom_resource import RESOURCE_TYPE, dispatch
from ..benchmark.run_config import check_run
from ..benchmark.run_names import RUN_NAME, EventError, field
from ..job_poll import AI_BENCHMARK_JOB, Phase, describe_job, phase_of
from ..runtime_support import Budget, Put, call_with_retry, error_code

JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
"""botocore's ``AIEntityName``."""
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
RUNNING = ("InProgress", "Stopping")
STOP_POLL_S = 10.0
"""Seconds between ``DescribeAIBenchmarkJob`` calls while a Delete waits for the job to stop."""
LATE_CREATE_CHECKS = int(POLL_TIMEOUT_S // STOP_POLL_S) + 2
"""How many times a Delete that found no job looks again, ``STOP_POLL_S`` apart: past the poll
Lambda's timeout after the workflow was stopped, no poll can create the job any more."""
CREATE_GRACE_S = 600.0
"""A job not found this long after the run started was never created: an error."""


OPERATIONS = ("CreateAIBenchmarkJob", "DescribeAIBenchmarkJob", "StopAIBenchmarkJob")
"""The SageMaker operations this engine calls: botocore has them from 1.44.5 (the module doc);
the Lambda runtime's bundled botocore may be older."""


def missing_operations(sagemaker: Any) -> list[str]:
    """The operations of ``OPERATIONS`` the client's botocore does not know."""
    known = set(sagemaker.meta.service_model.operation_names)
    return [name for name in OPERATIONS if name not in known]


def require_operations(sagemaker: Any) -> None:
    """Fail at start, with the reason, when the runtime's botocore lacks an operation this
    engine calls (instead of an AttributeError halfway through the workflow)."""
    missing = missing_operations(sagemaker)
    if missing:
        import botocore

        raise EventError(
            f"the Lambda runtime's botocore {botocore.__version__} has no "
            f"{', '.join(missing)}: the managed benchmark engine needs botocore 1.44.5 or "
            "later (a newer Lambda Python runtime, or the Lambda engine)"
        )


class JobStillActive(EventError):
    """A Delete ran out of time with the job still active: the Delete fails with this reason
    (CloudFormation would otherwise go on to delete the workload configuration, which SageMaker
    refuses while an active job references it)."""


def job_name(run: Mapping[str, Any]) -> str:
    """The job of a run: named after it."""
    name = str(run["Name"])
    if not JOB_NAME.fullmatch(name):
        raise EventError(f"Run.Name: {name!r} is not a benchmark job name (AIEntityName)")
    return name


def output_location(run: Mapping[str, Any]) -> str:
    """Where the job writes: ``aiperf/`` in the run's folder."""
    return f"s3://{run['Bucket']}/{run['Prefix']}aiperf/"


def create_job(run: Mapping[str, Any], *, sagemaker: Any, budget: Budget) -> str:
    """``CreateAIBenchmarkJob`` for the run; ``created`` or ``exists``."""
    endpoint: dict[str, Any] = {"Identifier": run["EndpointName"]}
    if run["InferenceComponentName"]:
        endpoint["InferenceComponents"] = [{"Identifier": run["InferenceComponentName"]}]
    try:
        call_with_retry(
            sagemaker.create_ai_benchmark_job,
            budget,
            AIBenchmarkJobName=job_name(run),
            BenchmarkTarget={"Endpoint": endpoint},
            OutputConfig={"S3OutputLocation": output_location(run)},
            AIWorkloadConfigIdentifier=run["Managed"]["WorkloadConfig"],
            RoleArn=run["Managed"]["RoleArn"],
        )
    except Exception as error:
        if error_code(error) == "ResourceInUse":
            return "exists"
        raise
    return "created"


def stop_job(name: str, *, sagemaker: Any, budget: Budget) -> str:
    """``StopAIBenchmarkJob``, best effort: ``stopped``, ``gone`` or the error's code."""
    try:
        call_with_retry(sagemaker.stop_ai_benchmark_job, budget, AIBenchmarkJobName=name)
    except Exception as error:
        code = error_code(error)
        return "gone" if code in ("ResourceNotFound", "ValidationException") else code
    return "stopped"


def _status(name: str, *, sagemaker: Any, budget: Budget) -> str | None:
    """The job's status, None when SageMaker has no such job."""
    job = describe_job(sagemaker.describe_ai_benchmark_job, budget, AIBenchmarkJobName=name)
    return None if job is None else str(job["AIBenchmarkJobStatus"])


def _pause(name: str, status: str, budget: Budget) -> None:
    """Sleep ``STOP_POLL_S`` before looking again; raise JobStillActive when the invocation
    has no time left for that and one more call."""
    if budget.left() < STOP_POLL_S + budget.call_seconds:
        raise JobStillActive(
            f"the benchmark job {name} is still {status} as this Delete runs out of time; "
            "its workload configuration cannot be deleted until the job has stopped: "
            "retry the delete (or the rollback) once it has"
        )
    budget.sleep(STOP_POLL_S)


def stop_and_wait(name: str, *, sagemaker: Any, budget: Budget) -> str:
    """Stop the job and wait until it has left ``InProgress`` and ``Stopping``: a job in
    ``Stopping`` is still active, and SageMaker refuses ``DeleteAIWorkloadConfig`` for a
    configuration an active job references. Returns the job's final status.

    A job not found may still be created by a poll invoked before the workflow was stopped (a
    stopped execution does not end its running Lambda task): the Delete looks again every
    ``STOP_POLL_S`` until the poll Lambda's timeout has passed (``LATE_CREATE_CHECKS``), and
    stops a job created meanwhile; ``gone`` when none was. Raises JobStillActive when the job
    is still active (or may still be created) as the invocation's time runs out, so the Delete
    fails with the reason instead of the configuration's."""
    stop_job(name, sagemaker=sagemaker, budget=budget)
    absent = 0
    while True:
        status = _status(name, sagemaker=sagemaker, budget=budget)
        if status is None:
            absent += 1
            if absent >= LATE_CREATE_CHECKS:
                return "gone"
            _pause(name, "possibly being created by a poll started before the stop", budget)
            continue
        if status not in RUNNING:
            return status
        if absent:  # created by a late poll: stop it too
            stop_job(name, sagemaker=sagemaker, budget=budget)
            absent = 0
        _pause(name, status, budget)


def read_levels(
    run: Mapping[str, Any], job: Mapping[str, Any], *, s3: Any, budget: Budget
) -> list[dict[str, Any]]:
    """The completed job's levels as the Lambda engine records them (``Distribution``,
    ``Level``, ``FirstError``), read from its ``output.tar.gz``."""
    location = str(job.get("OutputConfig", {}).get("S3OutputLocation") or output_location(run))
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    if bucket != run["Bucket"] or not prefix.startswith(run["Prefix"]):
        raise EventError(f"the job's output {location} is outside the run's folder")
    listing = call_with_retry(s3.list_objects_v2, budget, Bucket=bucket, Prefix=prefix)
    archives = [
        item for item in listing.get("Contents", []) if str(item["Key"]).endswith("output.tar.gz")
    ]
    if not archives:
        raise EventError(f"the benchmark job {run['Name']} wrote no output.tar.gz under {location}")
    archive = max(archives, key=lambda item: item.get("Size", 0))
    if archive.get("Size", 0) > MAX_ARCHIVE_BYTES:
        raise EventError(f"s3://{bucket}/{archive['Key']}: larger than {MAX_ARCHIVE_BYTES} bytes")
    body = call_with_retry(s3.get_object, budget, Bucket=bucket, Key=archive["Key"])["Body"].read()
    records = []
    for level, source in levels_of_archive(body):
        records.append(
            {
                "Distribution": {
                    "concurrency": level.concurrency,
                    # No Lambda workers wrote per-request samples: the results writer reads
                    # none back (the job's own export is in the archive).
                    "workers": 0,
                    "engine": MANAGED_ENGINE,
                    "job": run["Name"],
                    "source": source,
                    "archive": f"s3://{bucket}/{archive['Key']}",
                },
                "Level": level.to_dict(),
                "FirstError": None,
            }
        )
    return records


def _failure(run: Mapping[str, Any], records: list[dict[str, Any]]) -> str | None:
    """Why the measured levels fail the run regardless of the gate, or None."""
    measured = {record["Level"]["concurrency"] for record in records}
    missing = [level for level in run["Concurrencies"] if level not in measured]
    if missing:
        return f"the benchmark job's output has no levels {missing}"
    for record in records:
        level = record["Level"]
        if level["requests"] and level["errors"] == level["requests"]:
            return f"every request of level {level['concurrency']} failed"
    return None


def poll_step(
    state: Mapping[str, Any], *, sagemaker: Any, s3: Any, put: Put, now: float,
    budget: Budget | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One poll: create the job if it does not exist yet, wait while it runs (stop it past the
    deadline), finish once it has ended: results, gate and signal as the Lambda engine's."""
    budget = budget or Budget()
    require_operations(sagemaker)
    run = check_run(field(state, "Run", "state"))
    if run["Engine"] != MANAGED_ENGINE:
        raise EventError("state.Run.Engine: this workflow polls a SageMaker AI benchmark job")
    name = job_name(run)
    job = describe_job(sagemaker.describe_ai_benchmark_job, budget, AIBenchmarkJobName=name)
    if job is None:
        if now - run["StartedAt"] > CREATE_GRACE_S and state.get("Status"):
            raise EventError(f"the benchmark job {name} disappeared (SageMaker has no such job)")
        outcome = create_job(run, sagemaker=sagemaker, budget=budget)
        return {"Run": run, "Done": False, "Status": outcome}
    status = str(job["AIBenchmarkJobStatus"])
    common = {"s3": s3, "put": put, "now": now, "budget": budget}
    phase = phase_of(job, AI_BENCHMARK_JOB, now=now, deadline=run["Deadline"])
    if phase is Phase.OVERDUE:
        stop_job(name, sagemaker=sagemaker, budget=budget)
        failure = f"the benchmark job {name} ran past the benchmark's deadline and was stopped"
        return finish(run, [], failure=failure, **common)
    if phase is Phase.RUNNING:
        return {"Run": run, "Done": False, "Status": status}
    if phase is Phase.ENDED:
        reason = job.get("FailureReason") or "no reason given"
        failure = f"the SageMaker AI benchmark job {name} ended {status}: {reason}"
        return finish(run, [], failure=failure, **common)
    records = read_levels(run, job, s3=s3, budget=budget)
    print(json.dumps({"Job": name, "Levels": [r["Distribution"] for r in records]}))
    return finish(run, records, failure=_failure(run, records), **common)


def dispatch_managed(
    event: Mapping[str, Any], *, sfn: Any, sagemaker: Any, now: float,
    budget: Budget | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The custom resources: as the Lambda engine's (start the poll workflow, attributes);
    a Delete (a stack delete, or any rollback) first stops the poll workflow, so no poll
    creates the job afterwards, then stops the run's job and waits until it has stopped
    (``stop_and_wait``), so the workload configuration CloudFormation deletes next is free."""
    budget = budget or Budget()
    physical = event.get("PhysicalResourceId")
    deleting = event.get("RequestType") == "Delete"
    if not deleting and event.get("ResourceType") == RESOURCE_TYPE:
        require_operations(sagemaker)
    answer = dispatch(event, sfn=sfn, now=now, budget=budget)
    if (
        deleting
        and not missing_operations(sagemaker)  # such a runtime never created a job
        and event.get("ResourceType") == RESOURCE_TYPE
        and isinstance(physical, str)
        and RUN_NAME.fullmatch(physical)
        and JOB_NAME.fullmatch(physical)
    ):
        outcome = stop_and_wait(physical, sagemaker=sagemaker, budget=budget)
        print(json.dumps({"StopJob": physical, "Outcome": outcome}))
    return answer

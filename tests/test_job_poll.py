"""The one SageMaker-job poll both deploy-time workflows use: each status botocore's SageMaker
model lists for a job is read as running, completed or ended, and nothing outside that list is
named; a job still running at its deadline is overdue."""

from __future__ import annotations

import botocore.session
import pytest

from cdk_sagemaker_llm.lambdas.job_poll import (
    AI_BENCHMARK_JOB,
    OPTIMIZATION_JOB,
    JobKind,
    Phase,
    phase_of,
)

SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")


@pytest.mark.parametrize(
    ("kind", "shape", "ended"),
    [
        (OPTIMIZATION_JOB, "OptimizationJobStatus", {"FAILED", "STOPPED"}),
        (AI_BENCHMARK_JOB, "AIBenchmarkJobStatus", {"Failed", "Stopped"}),
    ],
)
def test_every_status_of_the_api_has_one_phase(kind: JobKind, shape: str, ended: set[str]) -> None:
    statuses = set(SAGEMAKER.shape_for(shape).enum)
    assert kind.running | {kind.completed} <= statuses
    phases = {status: phase_of({kind.status_key: status}, kind, now=0.0, deadline=60.0)
              for status in statuses}  # fmt: skip
    assert {s for s, p in phases.items() if p is Phase.RUNNING} == kind.running
    assert {s for s, p in phases.items() if p is Phase.COMPLETED} == {kind.completed}
    assert {s for s, p in phases.items() if p is Phase.ENDED} == ended


@pytest.mark.parametrize("kind", [OPTIMIZATION_JOB, AI_BENCHMARK_JOB])
def test_a_running_job_at_its_deadline_is_overdue_and_a_missing_one_is_missing(
    kind: JobKind,
) -> None:
    (running, *_) = sorted(kind.running)
    job = {kind.status_key: running}
    assert phase_of(job, kind, now=59.0, deadline=60.0) is Phase.RUNNING
    assert phase_of(job, kind, now=60.0, deadline=60.0) is Phase.OVERDUE
    assert phase_of({kind.status_key: kind.completed}, kind, now=99.0, deadline=60.0) is (
        Phase.COMPLETED
    )
    assert phase_of(None, kind, now=0.0, deadline=60.0) is Phase.MISSING

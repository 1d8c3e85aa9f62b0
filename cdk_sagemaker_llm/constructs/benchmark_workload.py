"""What ``EndpointBenchmark``'s Lambda workers can send of a shaped workload: the run carries
the shape to every step (at most 256 KB of workflow state), so a trace is limited in size, and
replaying a trace at its timestamps (``BenchmarkLoad.trace_replay``) is the command line's for
now."""

from __future__ import annotations

from ..benchmarking.benchmark_load import BenchmarkLoad
from ..benchmarking.workloads import MAX_RUN_TRACE_BLOCKS, MAX_RUN_TRACE_RECORDS
from ..errors import ValidationError
from ..planning.workload import Trace, Workload


def check_deploy_time(workload: Workload, load: BenchmarkLoad) -> None:
    """Raise ValidationError for a workload or load the deploy-time benchmark cannot send."""
    if load.replay:
        raise ValidationError(
            "load", "BenchmarkLoad.trace_replay(...)",
            "the deploy-time benchmark does not replay a trace at its timestamps yet",
            "replay it with `cdk-sagemaker-llm benchmark --trace FILE --replay-speedup 1`, or "
            "send the trace's token counts with BenchmarkLoad.concurrency or request_rates",
        )  # fmt: skip
    shape = workload.shape
    if isinstance(shape, Trace):
        blocks = sum(len(record.hash_ids) for record in shape.records)
        if len(shape.records) > MAX_RUN_TRACE_RECORDS or blocks > MAX_RUN_TRACE_BLOCKS:
            raise ValidationError(
                "workload", shape.describe(),
                f"a deploy-time benchmark carries at most {MAX_RUN_TRACE_RECORDS} trace "
                f"requests and {MAX_RUN_TRACE_BLOCKS} hash_ids (the workflow's state is at most "
                "256 KB)",
                "pass the first part of the trace, or run it with `cdk-sagemaker-llm benchmark`",
            )  # fmt: skip

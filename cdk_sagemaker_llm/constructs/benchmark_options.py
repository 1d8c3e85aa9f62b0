"""The deploy-time benchmark's own options: where its results go, what runs its load, and the
figures that fail the deployment. (The load, the workload, the request protocol and the pricing
are shared with the CLI: ``benchmarking`` and ``planning.workload``.)"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..benchmarking.benchmark_load import MAX_CONCURRENCY, MAX_RATE, BenchmarkLoad
from ..planning.objectives import Traffic
from ..prop_types import typed_factory, typed_props
from .managed_benchmark import ManagedBenchmarkOptions
from .nag import acknowledge
from .validation import ValidationError, check_range, is_unresolved

DEFAULT_RESULTS_PREFIX = "endpoint-benchmarks/"
MAX_WORKERS = 64
"""Parallel workers of one level (the Map's MaxConcurrency)."""
MAX_WORKER_CAPACITY = 1024
MAX_WORKER_RATE = 10_000.0
DEFAULT_WORKER_CAPACITY = 256
"""Concurrent streams per worker Lambda (1 vCPU): the highest level measured within 2 % p50 and
5 % TTFT error of the server's truth (``benchmarks/worker_capacity.py``)."""
DEFAULT_WORKER_RATE_CAPACITY = 100.0
"""Open-loop requests/s per worker Lambda, measured with the same script (schedule lag and TTFT
error within the limits with headroom)."""
MAX_COPIES = 10_000
"""The most copies a peak gate may count on (the handlers' limit on ``Copies`` too)."""


@typed_props
class BenchmarkResults:
    """Where a benchmark writes ``results.json``, ``chart.svg`` and the raw samples:
    ``BenchmarkResults.in_new_bucket()`` or ``BenchmarkResults.in_bucket(bucket)``."""

    def __init__(
        self, *, bucket: s3.IBucket | None, encryption_key: kms.IKey | None, prefix: str
    ) -> None:
        """Use the factories."""
        self.bucket = bucket
        """The given bucket; None: the benchmark creates one."""
        self.encryption_key = encryption_key
        """The customer key of the bucket the benchmark creates; None: ``aws/s3``."""
        self.prefix = prefix
        """Key prefix (ending in ``/``) of every run's folder."""

    @staticmethod
    @typed_factory
    def in_new_bucket(
        *, encryption_key: kms.IKey | None = None, prefix: str = DEFAULT_RESULTS_PREFIX
    ) -> BenchmarkResults:
        """A bucket the benchmark creates: KMS-encrypted (``encryption_key``, default the
        AWS-managed ``aws/s3`` key), SSL only, public access blocked, retained on delete;
        ``prefix`` (ending in ``/``) default ``endpoint-benchmarks/``."""
        _check_prefix("BenchmarkResults.in_new_bucket(prefix)", prefix)
        return BenchmarkResults(bucket=None, encryption_key=encryption_key, prefix=prefix)

    @staticmethod
    @typed_factory
    def in_bucket(bucket: s3.IBucket, *, prefix: str = DEFAULT_RESULTS_PREFIX) -> BenchmarkResults:
        """An existing bucket, which keeps its own encryption (the functions get its key's
        encrypt/decrypt); ``prefix`` (ending in ``/``) default ``endpoint-benchmarks/``."""
        _check_prefix("BenchmarkResults.in_bucket(prefix)", prefix)
        return BenchmarkResults(bucket=bucket, encryption_key=None, prefix=prefix)

    def bind(self, scope: Construct) -> s3.IBucket:
        """The bucket: the given one, or a new one (``Results``) in ``scope``."""
        if self.bucket is not None:
            return self.bucket
        key = self.encryption_key
        bucket = s3.Bucket(
            scope,
            "Results",
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.KMS_MANAGED,
            encryption_key=key,
            bucket_key_enabled=True,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            versioned=False,
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            bucket,
            "AwsSolutions-S1",
            "Benchmark results written only by this benchmark's functions; pass "
            "results=BenchmarkResults.in_bucket(...) to use a bucket with server access logging.",
        )
        return bucket


MAX_RESULTS_PREFIX = 800
"""Characters of a results prefix the handlers take (``ResourceProperties.ResultsPrefix``)."""


def _check_prefix(prop: str, prefix: str) -> None:
    if is_unresolved(prefix):
        raise ValidationError(
            prop,
            prefix,
            "the prefix scopes the workers' write permission, so it must be known at synth time",
            "pass a literal prefix such as 'endpoint-benchmarks/'",
        )
    if not prefix or prefix.startswith("/") or not prefix.endswith("/"):
        raise ValidationError(
            prop,
            prefix,
            "a key prefix must be non-empty, end with '/' and not start with '/'",
            f"pass {(prefix.strip('/') or 'endpoint-benchmarks') + '/'!r}",
        )
    # The handlers take at most 800 characters and no control characters (``run_names.
    # KEY_PREFIX``): the run's folder and its files' names follow within S3's 1,024-byte keys.
    if len(prefix) > MAX_RESULTS_PREFIX or any(ord(c) < 0x20 or ord(c) == 0x7F for c in prefix):
        raise ValidationError(
            prop,
            prefix if len(prefix) <= 80 else f"{prefix[:40]}... ({len(prefix)} characters)",
            f"a results prefix is at most {MAX_RESULTS_PREFIX} characters, without control "
            "characters (each run writes its folder and files under it, within S3's 1,024-byte "
            "keys)",
            "pass a shorter prefix of printable characters, e.g. 'endpoint-benchmarks/'",
        )


@typed_props
class BenchmarkEngine:
    """What runs the load: ``BenchmarkEngine.lambda_workers(...)``, a Step Functions workflow
    of worker Lambdas, or ``BenchmarkEngine.managed(...)``, a SageMaker AI benchmark job (see
    ``EndpointBenchmark`` and the trade-offs in the benchmarks guide)."""

    def __init__(
        self,
        *,
        worker_capacity: int,
        worker_rate_capacity: float,
        job: ManagedBenchmarkOptions | None = None,
    ) -> None:
        """Use the factories."""
        self.worker_capacity = worker_capacity
        """Concurrent requests one worker Lambda keeps in flight."""
        self.worker_rate_capacity = worker_rate_capacity
        """Open loop: requests/s one worker Lambda sends."""
        self.job = job
        """The SageMaker AI benchmark job's settings (``managed``); None: Lambda workers."""

    @staticmethod
    @typed_factory
    def managed(
        *,
        tokenizer: str | None = None,
        tooling_version: str | None = None,
        poll_interval: Duration = Duration.minutes(1),
    ) -> BenchmarkEngine:
        """The load runs on a SageMaker AI benchmark job (NVIDIA AIPerf, run and billed by
        SageMaker AI) against a workload configuration (``AWS::SageMaker::AIWorkloadConfig``)
        the construct synthesizes; a workflow polls the job (``DescribeAIBenchmarkJob``) and
        maps its output to the same ``results.json`` (``benchmarking.aiperf``). Closed-loop
        ``BenchmarkLoad.concurrency`` sweeps of the chat-completions API
        (``PayloadFormat.MESSAGES``) with alike requests only.

        :param tokenizer: the Hugging Face tokenizer AIPerf counts and builds tokens with
            (the workload specification's ``tokenizer``); default the service's. A gated
            repository (``catalog/hub_access.py``) is a ValidationError: a job cannot be given
            a Hugging Face token.
        :param tooling_version: the benchmark tooling version (``tooling.version``); default
            the service's.
        :param poll_interval: how often the workflow describes the job, 10 s to 1 hour, and
            no more often than one execution's 25,000 history events allow over the wait
            (every 16 s or more for the longest ``max_duration``); default 1 minute.
        """
        return BenchmarkEngine(
            worker_capacity=DEFAULT_WORKER_CAPACITY,
            worker_rate_capacity=DEFAULT_WORKER_RATE_CAPACITY,
            job=ManagedBenchmarkOptions.of(tokenizer, tooling_version, poll_interval),
        )

    @staticmethod
    @typed_factory
    def lambda_workers(
        *,
        worker_capacity: int = DEFAULT_WORKER_CAPACITY,
        worker_rate_capacity: float = DEFAULT_WORKER_RATE_CAPACITY,
    ) -> BenchmarkEngine:
        """Each level runs on parallel worker Lambdas (1 vCPU each) started together by a Map
        state: a level of concurrency ``c`` on ``ceil(c / worker_capacity)`` of them, a level of
        rate ``r`` on ``ceil(r / worker_rate_capacity)`` (and enough for the load's
        ``max_concurrency`` at ``worker_capacity`` each), at most 64.

        :param worker_capacity: concurrent requests per worker, 1 to 1024; default 256
            (measured: ``benchmarks/worker_capacity.py``).
        :param worker_rate_capacity: open loop: requests/s per worker, 0.1 to 10,000; default
            100 (measured likewise).
        """
        check_range(
            "BenchmarkEngine.lambda_workers(worker_capacity)", worker_capacity,
            minimum=1, maximum=MAX_WORKER_CAPACITY,
            fix="keep 1 to 1024 requests in flight per worker Lambda",
        )  # fmt: skip
        check_range(
            "BenchmarkEngine.lambda_workers(worker_rate_capacity)", worker_rate_capacity,
            minimum=0.1, maximum=MAX_WORKER_RATE,
            fix="send 0.1 to 10000 requests/s per worker Lambda",
        )  # fmt: skip
        return BenchmarkEngine(
            worker_capacity=worker_capacity, worker_rate_capacity=worker_rate_capacity
        )

    def max_workers(self, load: BenchmarkLoad) -> int:
        """Workers of ``load``'s largest level (at most ``MAX_WORKERS``; a managed job: 1)."""
        if self.job is not None:
            return 1
        top = load.highest
        capped = load.max_concurrency or 0
        if load.open_loop:
            needed = max(
                math.ceil(top / self.worker_rate_capacity - 1e-9),
                -(-capped // self.worker_capacity) if capped else 1,
            )
        else:
            needed = -(-int(top) // self.worker_capacity)
        if needed <= MAX_WORKERS:
            return needed
        if load.open_loop and top / self.worker_rate_capacity > MAX_WORKERS:
            prop, value, level, least = (
                "worker_rate_capacity",
                self.worker_rate_capacity,
                top,
                f"{top / MAX_WORKERS:g}",
            )
        else:
            in_flight = capped if load.open_loop else int(top)
            prop, value, level, least = (
                "worker_capacity", self.worker_capacity, in_flight,
                str(-(-in_flight // MAX_WORKERS)),
            )  # fmt: skip
        raise ValidationError(
            f"BenchmarkEngine.lambda_workers({prop})",
            value,
            f"the highest level ({level:g}) would need {needed} workers, more than {MAX_WORKERS}",
            f"raise {prop} to at least {least}",
        )


@typed_props
class PeakCapacity:
    """The peak traffic the measured capacity must serve at the most copies autoscaling allows:
    ``PeakCapacity.requests_per_second(peak, max_copies=...)`` or
    ``PeakCapacity.concurrency(peak, max_copies=...)`` (a ``BenchmarkGate``'s ``peak``).

    After the sweep, the capacity of one copy (the requests/s at the measured knee, or the
    requests in flight there, over the copies the sweep ran on; an open-loop load's
    sustainable rate likewise) times ``max_copies`` must reach the peak, or the deployment
    fails with the figures and what to change."""

    def __init__(self, *, peak: Traffic, max_copies: int) -> None:
        """Use the factories."""
        self.peak = peak
        """The peak traffic: requests/s or requests in flight at once."""
        self.max_copies = max_copies
        """The most copies (instances, for an instance endpoint) autoscaling allows."""

    @staticmethod
    @typed_factory
    def requests_per_second(peak: float, *, max_copies: int) -> PeakCapacity:
        """A peak arrival rate (requests/s), served by ``max_copies`` copies (1 to 10,000) at
        the measured knee's requests/s per copy (or an open-loop load's sustainable rate)."""
        check_range(
            "PeakCapacity.requests_per_second(peak)", peak, minimum=0.001,
            fix="pass the peak arrival rate in requests/s, e.g. 4",
        )  # fmt: skip
        _check_max_copies("PeakCapacity.requests_per_second(max_copies)", max_copies)
        return PeakCapacity(peak=Traffic(requests_per_second=peak), max_copies=max_copies)

    @staticmethod
    @typed_factory
    def concurrency(peak: int, *, max_copies: int) -> PeakCapacity:
        """A peak of requests in flight at once, served by ``max_copies`` copies (1 to
        10,000) at the measured knee concurrency per copy (closed-loop loads only)."""
        check_range(
            "PeakCapacity.concurrency(peak)", peak, minimum=1,
            fix="pass the most requests in flight at once, e.g. 32",
        )  # fmt: skip
        _check_max_copies("PeakCapacity.concurrency(max_copies)", max_copies)
        return PeakCapacity(peak=Traffic(concurrency=peak), max_copies=max_copies)

    def describe(self) -> str:
        """E.g. ``measured capacity per copy x 6 copies >= peak 4 requests/s``."""
        return (
            f"measured capacity per copy x {self.max_copies} copies >= peak {self.peak.describe()}"
        )

    def gate_keys(self) -> dict[str, float]:
        """The run's gate keys (``lambdas/benchmark/run.py`` reads them)."""
        if self.peak.requests_per_second is not None:
            return {"PeakRequestsPerS": self.peak.requests_per_second, "MaxCopies": self.max_copies}
        assert self.peak.concurrency is not None
        return {"PeakConcurrency": self.peak.concurrency, "MaxCopies": self.max_copies}


def _check_max_copies(prop: str, max_copies: int) -> None:
    check_range(
        prop, max_copies, minimum=1, maximum=MAX_COPIES,
        fix="pass the most copies (or instances) the autoscaling allows",
    )  # fmt: skip


@typed_props
@dataclass(frozen=True, kw_only=True)
class BenchmarkGate:
    """Measured figures below which the deployment fails (with the figures as the reason)."""

    max_p50_ms_per_token: float | None = None
    """The SLO at the lowest level (concurrency 1 in the default sweep): fail when its p50
    ms/token is above this. Default: not checked."""
    max_p50_ttft_ms: float | None = None
    """The SLO's time to first token at the lowest level: fail when its p50 TTFT (ms) is above
    this. Measured on streamed responses only (``RequestProtocol(stream=True)``). Default: not
    checked."""
    max_error_rate: float | None = None
    """Fail when more than this share (0-1) of a level's requests failed, at any level the
    published figures rest on: from the lowest up to the knee (closed loop) or the sustainable
    rate (open loop). The figures count successful requests only, so without it an endpoint
    failing half its requests still publishes a knee. Default: not checked."""
    min_knee_concurrency: int | None = None
    """Closed loop: fail when the knee is below this concurrency. Default: not checked."""
    min_output_tokens_per_s: float | None = None
    """Fail when the max output throughput (within the knee rule's SLO) is below this.
    Default: not checked."""
    min_sustainable_requests_per_s: float | None = None
    """Open loop: fail when the sustainable rate is below this (requests/s). Default: not
    checked."""
    peak: PeakCapacity | None = None
    """Fail when the measured capacity per copy times the most copies autoscaling allows
    cannot serve this peak (``PeakCapacity.requests_per_second`` or ``.concurrency``); the
    reason gives the measured knee, the most copies, the peak and what to change. Default:
    not checked."""

    def __post_init__(self) -> None:
        check_range("max_p50_ms_per_token", self.max_p50_ms_per_token, minimum=0.001)
        check_range("max_p50_ttft_ms", self.max_p50_ttft_ms, minimum=0.001)
        check_range("max_error_rate", self.max_error_rate, minimum=0, maximum=1)
        check_range(
            "min_knee_concurrency", self.min_knee_concurrency, minimum=1, maximum=MAX_CONCURRENCY
        )
        check_range("min_output_tokens_per_s", self.min_output_tokens_per_s, minimum=0.001)
        check_range(
            "min_sustainable_requests_per_s", self.min_sustainable_requests_per_s,
            minimum=0.001, maximum=MAX_RATE,
        )  # fmt: skip

    def check_applies_to(self, load: BenchmarkLoad) -> None:
        """Raise ValidationError for a figure ``load`` does not measure."""
        if self.min_sustainable_requests_per_s is not None and not load.open_loop:
            raise ValidationError(
                "gate.min_sustainable_requests_per_s", self.min_sustainable_requests_per_s,
                "only an open-loop load measures a sustainable rate",
                "use BenchmarkLoad.request_rates or max_rate_search, or drop this gate",
            )  # fmt: skip
        if self.min_knee_concurrency is not None and load.open_loop:
            raise ValidationError(
                "gate.min_knee_concurrency", self.min_knee_concurrency,
                "an open-loop load has no knee (a closed-loop figure)",
                "gate on min_sustainable_requests_per_s, or use BenchmarkLoad.concurrency",
            )  # fmt: skip
        peak = self.peak
        if peak is not None and peak.peak.concurrency is not None and load.open_loop:
            raise ValidationError(
                "gate.peak", peak.peak.describe(),
                "an open-loop load measures a sustainable rate, not requests in flight per copy",
                "state the peak as PeakCapacity.requests_per_second(...), or use "
                "BenchmarkLoad.concurrency or knee_search",
            )  # fmt: skip

    def check_copies(self, copies: int) -> None:
        """Raise ValidationError when the peak gate counts on fewer copies than the sweep
        measures (``copies``)."""
        if self.peak is not None and self.peak.max_copies < copies:
            raise ValidationError(
                "gate.peak.max_copies", self.peak.max_copies,
                f"the sweep runs on {copies} copies, more than the most autoscaling allows",
                f"pass max_copies of at least {copies} (the autoscaling's maximum), or "
                "benchmark fewer copies",
            )  # fmt: skip

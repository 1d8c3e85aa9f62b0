"""The run: the sweep's configuration as the custom resource builds it and the workflow carries
it from step to step (``check_run`` validates it at every step), and what follows from it for
one level: its requests, its workers, its keys in S3, its payload.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ...benchmarking import KneeRule, PayloadSpec
from ...benchmarking.arrivals import ARRIVALS, Arrival
from ...benchmarking.benchmark_load import MAX_CONCURRENCY, MAX_LEVELS, MAX_RATE, MAX_REQUESTS
from ...benchmarking.goodput import GoodputSlo
from ...benchmarking.open_loop import level_requests as rate_level_requests
from ...benchmarking.payload import FORMATS, PayloadFormat, RequestProtocol
from ...benchmarking.search import SearchRule
from ...planning.workload import Workload
from ..runtime_support import shown
from .run_names import (
    BUCKET,
    KEY_PREFIX,
    RUN_NAME,
    SAGEMAKER_NAME,
    EventError,
    boolean,
    field,
    https_url,
    integer,
    known,
    matching,
    number,
    optional_number,
    string,
)
from .run_workload import check_engine, check_workload, shape_of

# The limits EndpointBenchmark enforces at synth time (BenchmarkEngine.lambda_workers, the
# workload's tokens), checked again here on the run the workflow carries; the levels' limits
# are BenchmarkLoad's own (benchmarking.benchmark_load).
MAX_WORKER_CAPACITY = 1024
MAX_WORKER_RATE = 10_000.0
MAX_WORKERS = 64
MAX_TOKENS = 200_000
MODES = ("concurrency", "rate")
SEARCHES = ("", "knee", "max-rate")
RUN_KEYS = frozenset(
    {
        "Name", "HandleUrl", "Deadline", "StartedAt", "Bucket", "Prefix", "EndpointName",
        "InferenceComponentName", "InputTokens", "OutputTokens", "Stream", "Format",
        "Concurrencies", "RequestsPerLevel", "WorkerCapacity", "Copies", "Rule", "Gate",
        "PricePerHour", "PriceSource", "Mode", "Rates", "Arrival", "Seed", "MaxConcurrency",
        "WorkerRateCapacity", "Slo", "Search", "SearchResolution", "SearchExpected", "Workload",
        "PrefixAwareId", "Engine", "Managed", "Deployment", "Burstiness", "RampUpS",
    }
)  # fmt: skip
DEPLOYMENT_KEYS = frozenset(
    {"Model", "ModelSpec", "EngineFamily", "EngineVersion", "InstanceType",
     "TensorParallelDegree", "CopiesPerInstance", "Precision", "EngineMemoryShare",
     "KvCachePrecision"}
)  # fmt: skip
"""What was benchmarked (optional): written to results.json's ``deployment`` section, the key
``cdk-sagemaker-llm calibrate`` files a calibration under."""
KV_CACHE = re.compile(r"auto|fp8")
"""A deployment's KV cache precision (``KvCachePrecision`` values)."""
MODEL_SPEC_INTEGERS = {
    "layers": 10_000, "attentionHeads": 100_000, "kvHeads": 100_000, "headDim": 100_000,
    "maxContext": 100_000_000, "experts": 100_000, "expertsPerToken": 100_000,
}  # fmt: skip
"""``ModelSpec.to_metadata()``'s integer fields and their upper bounds (a sanity limit)."""
MODEL_SPEC_NUMBERS = ("parameters", "activeParameters")
MODEL_SPEC_KEYS = frozenset({"name", *MODEL_SPEC_INTEGERS, *MODEL_SPEC_NUMBERS})
RULE_KEYS = frozenset({"MinGainPerDoubling", "SloMsPerToken", "MaxErrorRate", "SloTtftMs"})
GATE_KEYS = frozenset(
    {"MaxP50MsPerToken", "MaxP50TtftMs", "MaxErrorRate", "MinKneeConcurrency",
     "MinOutputTokensPerS", "MinSustainableRate", "PeakRequestsPerS", "PeakConcurrency",
     "MaxCopies"}
)  # fmt: skip
MAX_PEAK = 1e9
"""A peak gate's traffic limit (requests/s or requests in flight): a sanity bound."""
MAX_COPIES = 10_000
"""The most copies a run states (``Copies``) or a peak gate counts on (``MaxCopies``)."""
SLO_KEYS = frozenset({"MsPerToken", "TtftMs", "Fraction"})


def _levels(raw: Any, where: str, parse: Callable[[Any, str], float]) -> list[Any]:
    """A sweep's levels: 1 to ``MAX_LEVELS`` increasing numbers."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_LEVELS:
        raise EventError(f"{where}: expected a list of 1 to {MAX_LEVELS} levels")
    values = [parse(value, f"{where}[{index}]") for index, value in enumerate(raw)]
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise EventError(f"{where}: expected increasing levels, got {values}")
    return values


def _concurrency(value: Any, where: str) -> int:
    return integer(value, where, 1, MAX_CONCURRENCY)


def _rate(value: Any, where: str) -> float:
    rate = number(value, where, 0.0, MAX_RATE)
    if rate <= 0:
        raise EventError(f"{where}: a request rate is above 0, got {shown(value)}")
    return rate


def _expected(run: Mapping[str, Any], search: str, levels: list[Any], where: str) -> float | None:
    """A search's expected answer (0 or absent: none), within its range."""
    value = run.get("SearchExpected", 0)
    if not value:
        return None
    if not search:
        raise EventError(f"{where}.SearchExpected: only a search (Search) has an expectation")
    return number(value, f"{where}.SearchExpected", float(levels[0]), float(levels[-1]))


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
            field(run, "Concurrencies", where), f"{where}.Concurrencies", _concurrency
        )
        if run.get("Rates"):
            raise EventError(f"{where}.Rates: only an open-loop run (Mode rate) has rates")
        rates: list[float] = []
    else:
        rates = _levels(field(run, "Rates", where), f"{where}.Rates", _rate)
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
        raise EventError(f"{where}.Arrival: expected {', '.join(ARRIVALS)}, got {shown(arrival)}")
    if arrival != "gamma" and run.get("Burstiness", 1.0) not in (1, 1.0):
        raise EventError(f"{where}.Burstiness: only gamma arrivals have a burstiness")
    slo = run.get("Slo") or {}
    if not isinstance(slo, Mapping):
        raise EventError(f"{where}.Slo: expected an object")
    known(slo, SLO_KEYS, f"{where}.Slo")
    fraction = optional_number(slo, "Fraction", f"{where}.Slo", 1.0)
    checked_slo = {
        "MsPerToken": optional_number(slo, "MsPerToken", f"{where}.Slo", 1e6),
        "TtftMs": optional_number(slo, "TtftMs", f"{where}.Slo", 1e7),
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
        "SearchResolution": number(
            run.get("SearchResolution", 0.25), f"{where}.SearchResolution", 0.01, 10.0
        ),
        "SearchExpected": _expected(run, search, concurrencies or rates, where),
        "Arrival": arrival,
        "Seed": integer(run.get("Seed", 0), f"{where}.Seed", 0, 2**31 - 1),
        "Burstiness": number(run.get("Burstiness", 1.0), f"{where}.Burstiness", 0.01, 100.0),
        "RampUpS": number(run.get("RampUpS", 0.0), f"{where}.RampUpS", 0.0, 86_400.0),
        "MaxConcurrency": integer(
            run.get("MaxConcurrency", 0), f"{where}.MaxConcurrency", 0, MAX_CONCURRENCY
        ),
        "WorkerRateCapacity": number(
            run.get("WorkerRateCapacity", 200.0), f"{where}.WorkerRateCapacity", 0.1,
            MAX_WORKER_RATE,
        ),
        "Slo": checked_slo,
    }  # fmt: skip


def _deployment(raw: Any, where: str) -> dict[str, Any]:
    """The ``Deployment`` of a run, checked: strings and positive integers (CloudFormation
    sends numbers as strings)."""
    if not isinstance(raw, Mapping):
        raise EventError(f"{where}: expected an object")
    known(raw, DEPLOYMENT_KEYS, where)
    checked: dict[str, Any] = {}
    for key in ("Model", "EngineFamily", "EngineVersion", "InstanceType", "Precision"):
        if raw.get(key) not in (None, ""):
            checked[key] = string(raw[key], f"{where}.{key}", max_length=200)
    for key in ("TensorParallelDegree", "CopiesPerInstance"):
        if raw.get(key) not in (None, ""):
            checked[key] = integer(raw[key], f"{where}.{key}", 1, 1024)
    if raw.get("ModelSpec") not in (None, ""):
        checked["ModelSpec"] = _model_spec(raw["ModelSpec"], f"{where}.ModelSpec")
    if raw.get("EngineMemoryShare") not in (None, ""):  # a fraction of the memory, above 0
        share = number(raw["EngineMemoryShare"], f"{where}.EngineMemoryShare", 0.01, 1)
        checked["EngineMemoryShare"] = share
    if raw.get("KvCachePrecision") not in (None, ""):
        where_kv = f"{where}.KvCachePrecision"
        checked["KvCachePrecision"] = matching(raw["KvCachePrecision"], where_kv, KV_CACHE, 4)
    return checked


def _model_spec(raw: Any, where: str) -> dict[str, Any]:
    """The benchmarked model's architecture (``ModelSpec.to_metadata()``), checked and with its
    numbers typed again (CloudFormation sends them as strings)."""
    if not isinstance(raw, Mapping):
        raise EventError(f"{where}: expected an object")
    known(raw, MODEL_SPEC_KEYS, where)
    checked: dict[str, Any] = {
        "name": string(field(raw, "name", where), f"{where}.name", max_length=200)
    }
    for key, high in MODEL_SPEC_INTEGERS.items():
        if raw.get(key) not in (None, ""):
            checked[key] = integer(raw[key], f"{where}.{key}", 1, high)
    for key in MODEL_SPEC_NUMBERS:
        if raw.get(key) not in (None, ""):
            checked[key] = number(raw[key], f"{where}.{key}", 1, 1e15)
    missing = sorted(
        key
        for key in ("parameters", "layers", "attentionHeads", "kvHeads", "headDim", "maxContext")
        if key not in checked
    )
    if missing:
        raise EventError(f"{where}: missing {', '.join(missing)}")
    return checked


def deployment_section(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """results.json's ``deployment`` section (``planning.calibration_fit.deployment_of`` reads
    it), or None when the run does not say what it benchmarked."""
    deployment = run.get("Deployment")
    if not deployment:
        return None
    section: dict[str, Any] = {
        "model": deployment.get("Model"),
        "model_spec": deployment.get("ModelSpec"),
        "engine": {
            "family": deployment["EngineFamily"],
            "version": deployment.get("EngineVersion"),
        }
        if deployment.get("EngineFamily")
        else None,
        "instance_type": deployment.get("InstanceType"),
        "tensor_parallel_degree": deployment.get("TensorParallelDegree"),
        "copies_per_instance": deployment.get("CopiesPerInstance"),
        "precision": deployment.get("Precision"),
        "engine_memory_share": deployment.get("EngineMemoryShare"),
        "kv_cache_precision": deployment.get("KvCachePrecision"),
    }
    return section


def _peak_gate(gate: Mapping[str, Any], mode: str, where: str) -> dict[str, Any]:
    """The peak gate's keys: at most one peak (a rate, or requests in flight in a closed
    loop), present together with the most copies it counts on, or none of them."""
    rate = optional_number(gate, "PeakRequestsPerS", where, MAX_PEAK)
    in_flight = gate.get("PeakConcurrency")
    concurrency = (
        None
        if in_flight in (None, "")
        else integer(in_flight, f"{where}.PeakConcurrency", 1, int(MAX_PEAK))
    )
    copies = gate.get("MaxCopies")
    max_copies = (
        None if copies in (None, "") else integer(copies, f"{where}.MaxCopies", 1, MAX_COPIES)
    )
    if rate is not None and concurrency is not None:
        raise EventError(f"{where}: expected one of PeakRequestsPerS and PeakConcurrency")
    if (rate is None and concurrency is None) != (max_copies is None):
        raise EventError(
            f"{where}: MaxCopies goes with a peak (PeakRequestsPerS or "
            "PeakConcurrency), and a peak with MaxCopies"
        )
    if rate == 0:
        raise EventError(f"{where}.PeakRequestsPerS: a peak rate is above 0")
    if concurrency is not None and mode == "rate":
        raise EventError(f"{where}.PeakConcurrency: an open-loop run has no knee concurrency")
    return {"PeakRequestsPerS": rate, "PeakConcurrency": concurrency, "MaxCopies": max_copies}


def check_run(run: Any, where: str = "Run") -> dict[str, Any]:
    """The sweep's configuration, validated (it travels in the workflow's state)."""
    if not isinstance(run, Mapping):
        raise EventError(f"{where}: expected an object, got {type(run).__name__}")
    known(run, RUN_KEYS, where)
    modes = _check_mode(run, where)
    fmt = string(field(run, "Format", where), f"{where}.Format")
    if fmt not in FORMATS:
        raise EventError(f"{where}.Format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    rule = _check_rule(field(run, "Rule", where), f"{where}.Rule")
    gate = _check_gate(run.get("Gate") or {}, modes["Mode"], f"{where}.Gate")
    bucket = matching(field(run, "Bucket", where), f"{where}.Bucket", BUCKET, 63)
    prefix = matching(field(run, "Prefix", where), f"{where}.Prefix", KEY_PREFIX, 900)
    if prefix.startswith("/") or not prefix.endswith("/"):
        raise EventError(
            f"{where}.Prefix: expected a key prefix ending in '/', got {shown(prefix)}"
        )
    capacity = integer(
        field(run, "WorkerCapacity", where), f"{where}.WorkerCapacity", 1, MAX_WORKER_CAPACITY
    )
    top = (modes["Concurrencies"] or modes["Rates"])[-1]
    needed = workers_of({**modes, "WorkerCapacity": capacity}, top)
    if needed > MAX_WORKERS:
        what = "WorkerCapacity" if modes["Mode"] == "concurrency" else "WorkerRateCapacity"
        raise EventError(
            f"{where}.{what}: level {top:g} would need {needed} workers, more than {MAX_WORKERS}"
        )
    component = string(
        run.get("InferenceComponentName", ""),
        f"{where}.InferenceComponentName",
        max_length=63,
        allow_empty=True,
    )
    if component and not SAGEMAKER_NAME.fullmatch(component):
        raise EventError(f"{where}.InferenceComponentName: {shown(component)} is not a name")
    price = run.get("PricePerHour")
    deployment = (
        {"Deployment": _deployment(run["Deployment"], f"{where}.Deployment")}
        if run.get("Deployment")
        else {}
    )
    return {
        **deployment,
        "Name": matching(field(run, "Name", where), f"{where}.Name", RUN_NAME, 80),
        "HandleUrl": https_url(field(run, "HandleUrl", where), f"{where}.HandleUrl"),
        "Deadline": number(field(run, "Deadline", where), f"{where}.Deadline", 0, 1e11),
        "StartedAt": number(field(run, "StartedAt", where), f"{where}.StartedAt", 0, 1e11),
        "Bucket": bucket,
        "Prefix": prefix,
        "EndpointName": matching(
            field(run, "EndpointName", where), f"{where}.EndpointName", SAGEMAKER_NAME, 63
        ),
        "InferenceComponentName": component,
        "InputTokens": integer(
            field(run, "InputTokens", where), f"{where}.InputTokens", 1, MAX_TOKENS
        ),
        "OutputTokens": integer(
            field(run, "OutputTokens", where), f"{where}.OutputTokens", 1, MAX_TOKENS
        ),
        "Stream": boolean(field(run, "Stream", where), f"{where}.Stream"),
        "Format": fmt,
        **modes,
        "RequestsPerLevel": integer(
            run.get("RequestsPerLevel", 0), f"{where}.RequestsPerLevel", 0, MAX_REQUESTS
        ),
        "WorkerCapacity": capacity,
        "Copies": integer(run.get("Copies", 1), f"{where}.Copies", 1, MAX_COPIES),
        "Rule": rule,
        "Gate": gate,
        "PricePerHour": None
        if price is None or price == ""
        else number(price, f"{where}.PricePerHour", 0.0, 1e6),
        "PriceSource": string(
            run.get("PriceSource", ""), f"{where}.PriceSource", max_length=300, allow_empty=True
        ),
        **check_workload(run, where),
        **check_engine(run, where),
    }


def _check_rule(rule: Any, where: str) -> dict[str, Any]:
    """The knee rule: the least gain per doubling of concurrency, and the optional SLO
    (ms/token, error rate, TTFT) a level must meet."""
    if not isinstance(rule, Mapping):
        raise EventError(f"{where}: expected an object")
    known(rule, RULE_KEYS, where)
    return {
        "MinGainPerDoubling": number(
            field(rule, "MinGainPerDoubling", where), f"{where}.MinGainPerDoubling", 0.0, 10.0
        ),
        "SloMsPerToken": optional_number(rule, "SloMsPerToken", where, 1e6),
        "MaxErrorRate": optional_number(rule, "MaxErrorRate", where, 1.0),
        "SloTtftMs": optional_number(rule, "SloTtftMs", where, 1e6),
    }


def _check_gate(gate: Any, mode: str, where: str) -> dict[str, Any]:
    """The figures that fail the deployment when unmet, each optional."""
    if not isinstance(gate, Mapping):
        raise EventError(f"{where}: expected an object")
    known(gate, GATE_KEYS, where)
    return {
        "MaxP50MsPerToken": optional_number(gate, "MaxP50MsPerToken", where, 1e6),
        "MaxP50TtftMs": optional_number(gate, "MaxP50TtftMs", where, 1e6),
        "MaxErrorRate": optional_number(gate, "MaxErrorRate", where, 1.0),
        "MinKneeConcurrency": optional_number(gate, "MinKneeConcurrency", where, MAX_CONCURRENCY),
        "MinOutputTokensPerS": optional_number(gate, "MinOutputTokensPerS", where, 1e9),
        "MinSustainableRate": optional_number(gate, "MinSustainableRate", where, MAX_RATE),
        **_peak_gate(gate, mode, where),
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


def workers_for(concurrency: int, capacity: int) -> int:
    """Workers a level needs: one per ``capacity`` concurrent requests."""
    return max(1, math.ceil(concurrency / capacity))


def split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` shares differing by at most one."""
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


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


def samples_key(run: Mapping[str, Any], level: float, worker: int) -> str:
    """Where one worker writes the raw samples of one level (without the extension)."""
    if run["Mode"] == "rate":
        return f"{run['Prefix']}samples/rate-{level:g}/worker-{worker:03d}"
    return f"{run['Prefix']}samples/level-{int(level):05d}/worker-{worker:03d}"


def results_key(run: Mapping[str, Any], name: str) -> str:
    return f"{run['Prefix']}{name}"


def payload_of(run: Mapping[str, Any]) -> PayloadSpec:
    """The run's requests: its workload, sent by its protocol."""
    return PayloadSpec.of(
        Workload(run["InputTokens"], run["OutputTokens"], shape_of(run)),
        RequestProtocol(
            PayloadFormat(run["Format"]), run["Stream"], run.get("PrefixAwareId") or None
        ),
    )


def arrival_of(run: Mapping[str, Any]) -> Arrival:
    """The run's arrival process (open loop)."""
    return Arrival(run["Arrival"], run["Seed"], run["Burstiness"], run["RampUpS"])


def slo_of(run: Mapping[str, Any]) -> GoodputSlo:
    """The run's goodput SLOs."""
    slo = run["Slo"]
    return GoodputSlo(slo["MsPerToken"], slo["TtftMs"], slo["Fraction"])


def knee_rule_of(run: Mapping[str, Any]) -> KneeRule:
    """The run's knee rule."""
    return KneeRule(
        min_gain_per_doubling=run["Rule"]["MinGainPerDoubling"],
        slo_ms_per_token=run["Rule"]["SloMsPerToken"],
        max_error_rate=run["Rule"]["MaxErrorRate"],
        slo_ttft_ms=run["Rule"].get("SloTtftMs"),
    )


def search_rule(run: Mapping[str, Any]) -> SearchRule | None:
    """The run's search over its levels' range, if it searches."""
    if not run["Search"]:
        return None
    listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
    return SearchRule(
        run["Search"], listed[0], listed[-1], run["SearchResolution"], run.get("SearchExpected")
    )

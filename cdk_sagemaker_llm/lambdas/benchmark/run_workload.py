"""A deploy-time run's workload shape, ``PrefixAwareId`` and engine (run keys ``Workload``,
``PrefixAwareId``, ``Engine`` and ``Managed``): validated at every step like the rest of the
run (CloudFormation hands numbers over as strings), and the shape turned back into the
``planning.workload`` one the benchmark engine builds requests from. ``EndpointBenchmark``
writes them (``benchmarking.workloads.run_keys``, ``ManagedBenchmarkOptions.run_keys``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...benchmarking.aiperf import MANAGED_ENGINE
from ...benchmarking.payload import PREFIX_AWARE_ID_MAX_LENGTH
from ...benchmarking.workloads import MAX_RUN_TRACE_BLOCKS, MAX_RUN_TRACE_RECORDS
from ...planning.workload import (
    MAX_GROUPS,
    MAX_SHAPE_TOKENS,
    MAX_TURNS,
    MultiTurn,
    Shape,
    SharedPrefix,
    Trace,
    TraceRecord,
)
from ..runtime_support import shown
from .run_names import EventError, field, integer, known, number, string

PREFIX_AWARE_ID = re.compile(rf"[A-Za-z0-9_.:\-]{{1,{PREFIX_AWARE_ID_MAX_LENGTH}}}")
KINDS = ("shared-prefix", "multi-turn", "trace")
_KEYS = {
    "shared-prefix": frozenset({"Kind", "Prefixes", "PrefixTokens", "RequestsPerPrefix",
                                "SuffixTokens"}),
    "multi-turn": frozenset({"Kind", "Conversations", "Turns", "TurnTokens", "SystemTokens"}),
    "trace": frozenset({"Kind", "BlockTokens", "Records"}),
}  # fmt: skip


def check_workload(run: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The run's ``Workload`` (normalized; absent: none) and ``PrefixAwareId`` (absent: '')."""
    checked: dict[str, Any] = {"Workload": None, "PrefixAwareId": ""}
    raw_id = run.get("PrefixAwareId", "")
    if raw_id:
        text = string(raw_id, f"{where}.PrefixAwareId", max_length=PREFIX_AWARE_ID_MAX_LENGTH)
        if not PREFIX_AWARE_ID.fullmatch(text):
            raise EventError(f"{where}.PrefixAwareId: {shown(text)} is not a PrefixAwareId")
        checked["PrefixAwareId"] = text
    raw = run.get("Workload")
    if raw is None or raw == "":
        return checked
    where = f"{where}.Workload"
    if not isinstance(raw, Mapping):
        raise EventError(f"{where}: expected an object")
    kind = field(raw, "Kind", where)
    if kind not in KINDS:
        raise EventError(f"{where}.Kind: expected one of {', '.join(KINDS)}, got {shown(kind)}")
    known(raw, _KEYS[kind], where)

    def whole(key: str, low: int, high: int) -> int:
        return integer(field(raw, key, where), f"{where}.{key}", low, high)

    if kind == "shared-prefix":
        shape: dict[str, Any] = {
            "Kind": kind, "Prefixes": whole("Prefixes", 1, MAX_GROUPS),
            "PrefixTokens": whole("PrefixTokens", 1, MAX_SHAPE_TOKENS),
            "RequestsPerPrefix": whole("RequestsPerPrefix", 1, MAX_GROUPS),
            "SuffixTokens": whole("SuffixTokens", 1, MAX_SHAPE_TOKENS),
        }  # fmt: skip
    elif kind == "multi-turn":
        shape = {
            "Kind": kind, "Conversations": whole("Conversations", 1, MAX_GROUPS),
            "Turns": whole("Turns", 1, MAX_TURNS),
            "TurnTokens": whole("TurnTokens", 1, MAX_SHAPE_TOKENS),
            "SystemTokens": whole("SystemTokens", 0, MAX_SHAPE_TOKENS),
        }  # fmt: skip
    else:
        shape = {
            "Kind": kind,
            "BlockTokens": whole("BlockTokens", 1, 65_536),
            "Records": _records(field(raw, "Records", where), f"{where}.Records"),
        }
    checked["Workload"] = shape
    return checked


def _records(raw: Any, where: str) -> list[list[Any]]:
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_RUN_TRACE_RECORDS:
        raise EventError(f"{where}: expected a list of 1 to {MAX_RUN_TRACE_RECORDS} requests")
    records: list[list[Any]] = []
    blocks = 0
    previous = 0.0
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, list) or len(item) != 4 or not isinstance(item[3], list):
            raise EventError(f"{at}: expected [timestamp_s, input, output, [hash_ids]]")
        timestamp = number(item[0], f"{at}[0]", previous, 1e9)
        previous = timestamp
        ids = [integer(h, f"{at}[3]", -(2**62), 2**62) for h in item[3]]
        blocks += len(ids)
        if blocks > MAX_RUN_TRACE_BLOCKS:
            raise EventError(f"{where}: more than {MAX_RUN_TRACE_BLOCKS} hash_ids in all")
        records.append([
            timestamp,
            integer(item[1], f"{at}[1]", 1, MAX_SHAPE_TOKENS),
            integer(item[2], f"{at}[2]", 1, MAX_SHAPE_TOKENS),
            ids,
        ])  # fmt: skip
    return records


def shape_of(run: Mapping[str, Any]) -> Shape | None:
    """The ``planning.workload`` shape of a checked run's ``Workload``."""
    raw = run.get("Workload")
    if not raw:
        return None
    if raw["Kind"] == "shared-prefix":
        return SharedPrefix(
            raw["Prefixes"], raw["PrefixTokens"], raw["RequestsPerPrefix"], raw["SuffixTokens"]
        )
    if raw["Kind"] == "multi-turn":
        return MultiTurn(raw["Conversations"], raw["Turns"], raw["TurnTokens"], raw["SystemTokens"])
    return Trace(
        tuple(TraceRecord(t, i, o, tuple(h)) for t, i, o, h in raw["Records"]),
        "run",
        raw["BlockTokens"],
    )


ENGINES = ("lambda-workers", MANAGED_ENGINE)
AI_RESOURCE_IDENTIFIER = re.compile(
    r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z\-]*/)?"
    r"([a-zA-Z0-9]([a-zA-Z0-9\-]){0,62})(?<!-)"
)
"""botocore's ``AIResourceIdentifier``: a workload configuration's name or ARN."""
ROLE_ARN = re.compile(r"arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+")
TOOL_VALUE = re.compile(r"[A-Za-z0-9_.\-/]{1,200}")
_MANAGED_KEYS = frozenset(
    {"PollSeconds", "Tokenizer", "ToolingVersion", "WorkloadConfig", "RoleArn"}
)


def check_engine(run: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The run's ``Engine`` (absent: the Lambda workers) and, for a SageMaker AI benchmark job,
    its ``Managed`` settings: a closed-loop sweep, the workload configuration's name or ARN, the
    job's role (the patterns of botocore's ``AIResourceIdentifier`` and ``RoleArn``), the poll
    interval."""
    engine = run.get("Engine") or "lambda-workers"
    if engine not in ENGINES:
        raise EventError(
            f"{where}.Engine: expected one of {', '.join(ENGINES)}, got {shown(engine)}"
        )
    if engine != MANAGED_ENGINE:
        if run.get("Managed"):
            raise EventError(f"{where}.Managed: only a benchmark job's run (Engine) has these")
        return {"Engine": engine, "Managed": None}
    raw = field(run, "Managed", where)
    at = f"{where}.Managed"
    if not isinstance(raw, Mapping):
        raise EventError(f"{at}: expected an object")
    known(raw, _MANAGED_KEYS, at)
    if run.get("Mode", "concurrency") != "concurrency" or run.get("Search"):
        raise EventError(f"{where}.Mode: a benchmark job runs a closed-loop concurrency sweep")
    managed: dict[str, Any] = {
        "PollSeconds": integer(field(raw, "PollSeconds", at), f"{at}.PollSeconds", 10, 3600),
        "WorkloadConfig": string(
            field(raw, "WorkloadConfig", at), f"{at}.WorkloadConfig", max_length=256
        ),
        "RoleArn": string(field(raw, "RoleArn", at), f"{at}.RoleArn", max_length=2048),
    }
    if not AI_RESOURCE_IDENTIFIER.fullmatch(managed["WorkloadConfig"]):
        raise EventError(f"{at}.WorkloadConfig: {shown(managed['WorkloadConfig'])} is not a name")
    if not ROLE_ARN.fullmatch(managed["RoleArn"]):
        raise EventError(f"{at}.RoleArn: {shown(managed['RoleArn'])} is not a role ARN")
    for key in ("Tokenizer", "ToolingVersion"):
        if raw.get(key):
            value = string(raw[key], f"{at}.{key}", max_length=200)
            if not TOOL_VALUE.fullmatch(value):
                raise EventError(f"{at}.{key}: {shown(value)} is not allowed")
            managed[key] = value
    return {"Engine": engine, "Managed": managed}

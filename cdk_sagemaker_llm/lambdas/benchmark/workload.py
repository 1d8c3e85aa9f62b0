"""A deploy-time run's workload shape and ``PrefixAwareId`` (run keys ``Workload`` and
``PrefixAwareId``): validated at every step like the rest of the run (CloudFormation hands
numbers over as strings), and turned back into the ``planning.workload`` shape the benchmark
engine builds requests from. ``EndpointBenchmark`` writes them
(``benchmarking.workloads.run_keys``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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
from .events import EventError, field, integer, known, number, string

PREFIX_AWARE_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,256}")
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
        text = string(raw_id, f"{where}.PrefixAwareId", max_length=256)
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

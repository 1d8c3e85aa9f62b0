"""Untrusted input, checked the same way by every handler: the error a malformed event raises,
the checks of one field each, and the constants every custom resource shares.

A malformed event, state or property fails with the offending field named (``EventError``,
"<where>: expected ..., got ..."), never an unhandled exception. CloudFormation hands custom
resources every scalar as a string, so the number and boolean checks accept their decimal or
``true``/``false`` forms. An integer is a JSON number with no fractional part: ``3``, ``"3"``
and ``3.0`` are all 3 (JSON has one number type, and a Step Functions state may carry a
whole number as ``3.0``), while ``3.5``, ``True`` and ``"3.0"`` are refused.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Set
from typing import Any

from .runtime_support import HTTPS_URL, HandlerError, shown
from .runtime_support import explain as explain_failure


class EventError(HandlerError, ValueError):
    """A malformed event or property: permanent, reported with the offending field."""


def explain(error: BaseException) -> str:
    """A reason for CloudFormation: the field for a malformed event, else as ``runtime_support``
    explains it (the service's own words for AWS errors)."""
    return str(error) if isinstance(error, EventError) else explain_failure(error)


REQUEST_TYPES = ("Create", "Update", "Delete")
"""The ``RequestType`` of a custom resource event."""
IGNORED_PROPERTIES = frozenset({"ServiceToken", "ServiceTimeout"})
"""Properties CloudFormation itself adds to ``ResourceProperties``."""
MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
SAGEMAKER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
"""A SageMaker resource name (endpoint, component, job): letters, digits and inner hyphens."""
STATE_MACHINE_ARN = re.compile(
    r"arn:aws[a-z-]*:states:[a-z0-9-]+:\d{1,12}:stateMachine:[a-zA-Z0-9_-]{1,80}"
)
"""A Step Functions state machine ARN."""


def check_request_type(event: Any) -> str:
    """A custom resource event's ``RequestType``: Create, Update or Delete."""
    if not isinstance(event, Mapping):
        raise EventError(f"event: expected an object, got {type(event).__name__}")
    request_type = event.get("RequestType")
    if request_type not in REQUEST_TYPES:
        raise EventError(
            f"RequestType: expected Create, Update or Delete, got {shown(request_type)}"
        )
    return str(request_type)


def field(data: Any, key: str, where: str) -> Any:
    """``data[key]``: ``data`` must be an object that has ``key``."""
    if not isinstance(data, Mapping):
        raise EventError(f"{where}: expected an object, got {type(data).__name__}")
    if key not in data:
        raise EventError(f"{where}.{key}: missing")
    return data[key]


def mapping(
    value: Any,
    where: str,
    required: Set[str] = frozenset(),
    optional: Set[str] | None = None,
) -> dict[str, Any]:
    """``value`` as an object that has every ``required`` key and, when ``optional`` is given,
    no key outside ``required`` and ``optional`` (any other key when it is None)."""
    if not isinstance(value, Mapping):
        raise EventError(f"{where}: expected an object, got {type(value).__name__}")
    for key in sorted(required):
        field(value, key, where)
    if optional is not None:
        known(value, frozenset(required | optional), where)
    return dict(value)


def items(value: Any, where: str, low: int, high: int) -> list[Any]:
    """``value`` as a list of ``low`` to ``high`` items."""
    if not isinstance(value, list) or not low <= len(value) <= high:
        got = f"{len(value)} items" if isinstance(value, list) else type(value).__name__
        raise EventError(f"{where}: expected a list of {low} to {high} items, got {got}")
    return value


def known(data: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    """Reject keys a valid event never carries (a typo, or something injected)."""
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise EventError(f"{where}: unknown properties {shown(unknown)}")


def matching(
    value: Any,
    where: str,
    pattern: re.Pattern[str],
    max_length: int,
    *,
    allow_empty: bool = False,
) -> str:
    """A string of at most ``max_length`` characters (empty only with ``allow_empty``)
    matching ``pattern`` whole."""
    text = string(value, where, max_length=max_length, allow_empty=allow_empty)
    if not pattern.fullmatch(text):
        raise EventError(f"{where}: {shown(text)} does not match {pattern.pattern}")
    return text


def integer(value: Any, where: str, low: int, high: int) -> int:
    """An integer (or its decimal string: CloudFormation turns numbers into strings)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,18}\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise EventError(f"{where}: expected an integer from {low} to {high}, got {shown(value)}")
    return value


def number(value: Any, where: str, low: float, high: float) -> float:
    """A finite number from ``low`` to ``high`` (or its decimal string)."""
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


def optional_number(data: Mapping[str, Any], key: str, where: str, high: float) -> float | None:
    """``data[key]`` as a number from 0 to ``high``; None when absent or empty."""
    value = data.get(key)
    if value is None or value == "":
        return None
    return number(value, f"{where}.{key}", 0.0, high)


def boolean(value: Any, where: str) -> bool:
    """true or false (or their strings, as CloudFormation sends them)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise EventError(f"{where}: expected true or false, got {shown(value)}")


def string(value: Any, where: str, *, max_length: int = 2048, allow_empty: bool = False) -> str:
    """A string of 1 (0 with ``allow_empty``) to ``max_length`` characters."""
    if not isinstance(value, str) or len(value) > max_length or (not value and not allow_empty):
        raise EventError(f"{where}: expected a string of 1 to {max_length} characters")
    return value


def https_url(value: Any, where: str) -> str:
    """An https:// URL, such as a presigned wait-condition handle."""
    url = string(value, where)
    if not HTTPS_URL.fullmatch(url):
        raise EventError(f"{where}: expected an https:// URL (a presigned wait-condition handle)")
    return url

"""The library's one error type for bad input, which names the property, the value and the fix;
and the checks every layer shares (pure: no aws_cdk)."""

from __future__ import annotations

import sys
from typing import Any


class ValidationError(ValueError):
    """A construct property is invalid; raised at synth time, before anything is deployed.

    The message always has three parts: which property, which value, and how to fix it.
    """

    def __init__(self, prop: str, value: Any, problem: str, fix: str) -> None:
        self.prop = prop
        self.value = value
        self.problem = problem
        self.fix = fix
        super().__init__(f"{prop}={value!r}: {problem}. Fix: {fix}")


def is_token(value: Any) -> bool:
    """True for a CDK token standing for a string, number or list (known at deploy time)."""
    cdk = sys.modules.get("aws_cdk")  # no aws_cdk loaded: no token can exist
    if cdk is None or isinstance(value, bool) or not isinstance(value, str | int | float | list):
        return False
    return bool(cdk.Token.is_unresolved(value))


def check_range(
    prop: str,
    value: float | None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    fix: str | None = None,
) -> None:
    """Check ``minimum <= value <= maximum`` for a literal number (tokens pass unchecked)."""
    if value is None or is_token(value):
        return
    low_ok = minimum is None or value >= minimum
    high_ok = maximum is None or value <= maximum
    if low_ok and high_ok:
        return
    if minimum is not None and maximum is not None:
        bounds = f"must be between {minimum} and {maximum}"
    elif minimum is not None:
        bounds = f"must be at least {minimum}"
    else:
        bounds = f"must be at most {maximum}"
    raise ValidationError(prop, value, bounds, fix or f"set {prop} within that range")

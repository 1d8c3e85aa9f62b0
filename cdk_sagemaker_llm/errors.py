"""The library's one error type for bad input, which names the property, the value and the fix;
and the checks every layer shares (pure: no aws_cdk)."""

from __future__ import annotations

import math
import re
import sys
from contextvars import ContextVar, Token
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
        message = f"{prop}={_shown(value)}: {problem}. Fix: {fix}"
        super().__init__(_ENCODED_TOKEN.sub(repr(_DeployTimeToken()), message))


class _DeployTimeToken:
    """How a message shows a token: never its encoded value (``-1.888e+289``)."""

    def __repr__(self) -> str:
        return "<deploy-time token>"


def _scalar_token(value: Any) -> bool:
    return isinstance(value, str | int | float) and is_token(value)


def _has_token(value: Any) -> bool:
    """True for a token, or a tuple or list with one among its items (only strings and numbers
    are asked: a jsii call on any other object would try to serialize it)."""
    if isinstance(value, tuple | list):
        return any(_scalar_token(item) for item in value)
    return _scalar_token(value)


_ADDRESS = re.compile(r" (object )?at 0x[0-9a-fA-F]+")
"""``<Foo object at 0x7f14...>``: a memory address, different on every run."""
_LONGEST_SHOWN = 160


def _shown(value: Any) -> str:
    """``repr(value)``, a token (alone or in a tuple or list) shown as ``<deploy-time token>``;
    without memory addresses, and an object whose repr runs past a line by its type and
    ``name`` (an ``InstanceType``'s repr is over 1,000 characters)."""
    if _scalar_token(value):
        return repr(_DeployTimeToken())
    if isinstance(value, tuple | list) and _has_token(value):
        return repr(type(value)(_DeployTimeToken() if _scalar_token(i) else i for i in value))
    text = _ADDRESS.sub("", repr(value))
    if len(text) <= _LONGEST_SHOWN:
        return text
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return f"{type(value).__name__}({name!r})"
    return text[: _LONGEST_SHOWN - 3] + "..."


_unchecked: ContextVar[list[str] | None] = ContextVar("unchecked", default=None)
"""The checks skipped on tokens while the innermost construct is being built."""


def note_unchecked(prop: str, check: str) -> None:
    """Record that ``check`` on ``prop`` did not run: its value is a deploy-time token. The
    construct being built reports it as an info message at synth (``prop_types``)."""
    notes = _unchecked.get()
    if notes is not None:
        notes.append(
            f"{prop} is a deploy-time token: {check} is not checked at synth "
            "(CloudFormation or SageMaker checks it at deploy)"
        )


def collecting_unchecked() -> tuple[list[str], Token]:
    """Start collecting the checks skipped on tokens (``note_unchecked``); returns the list
    and the token that ``_unchecked.reset`` takes to stop."""
    notes: list[str] = []
    return notes, _unchecked.set(notes)


def stop_collecting_unchecked(token: Token) -> None:
    _unchecked.reset(token)


def require_concrete(prop: str, value: Any, decision: str) -> None:
    """Raise ValidationError when ``value`` (or an item of it) is a deploy-time token: a
    decision taken at synth (``decision``) needs the number itself."""
    if _has_token(value):
        kind = "name" if isinstance(value, str) else "number"
        raise ValidationError(
            prop,
            value,
            f"{decision} at synth, which needs a concrete {kind}; a deploy-time token (a "
            "CfnParameter, a resource attribute) has no value until deploy",
            f"pass the {kind} itself for {prop}",
        )


_ENCODED_TOKEN = re.compile(r"\$\{Token\[[^\]]*\]\}|#\{Token\[[^\]]*\]\}|-1\.88\d*e\+289")
"""An encoded token inside a message's text (a prop name, a path or a number formatted into
the problem or the fix): a message shows ``<deploy-time token>`` instead."""

TOKEN_STRING_MARKER = "Token["
"""What every encoded string or list token contains (aws-cdk-lib core ``encoding.ts``:
``${Token[NAME.ID]}`` in strings, ``#{Token[NAME.ID]}`` as a list's item)."""
TOKEN_NUMBER_MAGNITUDE = 1e288
"""Encoded number tokens are doubles near -1.888e+289 (aws-cdk-lib core ``encoding.ts``,
``DOUBLE_TOKEN_MARKER_BITS``); no literal a prop takes comes near."""


def may_be_token(value: str | float | list[Any]) -> bool:
    """Could ``value`` be an encoded token? Answered in Python: a jsii call costs a round trip
    to the CDK's process, and the kernel is not safe to call from several threads at once
    (the benchmark workers check their payloads in threads). False is certain; True needs
    ``Token.is_unresolved`` to confirm."""
    if isinstance(value, str):
        return TOKEN_STRING_MARKER in value
    if isinstance(value, list):
        return any(isinstance(item, str) and TOKEN_STRING_MARKER in item for item in value)
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        return False  # no float, so no token (math.isfinite would overflow)
    return math.isfinite(value) and abs(value) >= TOKEN_NUMBER_MAGNITUDE


def is_token(value: Any) -> bool:
    """True for a CDK token standing for a string, number or list (known at deploy time)."""
    cdk = sys.modules.get("aws_cdk")  # no aws_cdk loaded: no token can exist
    if cdk is None or isinstance(value, bool) or not isinstance(value, str | int | float | list):
        return False
    return may_be_token(value) and bool(cdk.Token.is_unresolved(value))


def check_range(
    prop: str,
    value: float | None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    fix: str | None = None,
) -> None:
    """Check ``minimum <= value <= maximum`` for a literal, finite number (an infinity passes
    no range: it would reach the CDK's process, whose JSON has none); a token passes unchecked
    (noted: synth reports it as an info message)."""
    if value is None:
        return
    if is_token(value):
        note_unchecked(prop, f"the range {_bounds(minimum, maximum)}")
        return
    low_ok = minimum is None or value >= minimum
    high_ok = maximum is None or value <= maximum
    if low_ok and high_ok and (isinstance(value, int) or math.isfinite(value)):
        return
    finite = "" if isinstance(value, int) or not math.isinf(value) else "finite and "
    raise ValidationError(
        prop,
        value,
        f"must be {finite}{_bounds(minimum, maximum)}",
        fix or f"set {prop} within that range",
    )


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"between {minimum} and {maximum}"
    if minimum is not None:
        return f"at least {minimum}"
    return f"at most {maximum}"

"""Synth-time validation errors that name the property, the bad value and the fix."""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Duration, Size, SizeRoundingBehavior, Token

from ..errors import ValidationError, check_range, may_be_token, note_unchecked, require_concrete
from ..prop_types import typed_props

__all__ = [
    "ValidationError",
    "check_range",
    "check_sagemaker_name",
    "is_unresolved",
    "note_unchecked",
    "require_concrete",
    "typed_props",
]


def is_unresolved(value: Any) -> bool:
    """True when ``value`` is a CDK token whose value is only known at deploy time.

    A string, number or list that cannot hold an encoded token (``errors.may_be_token``) is
    answered here: asking ``Token.is_unresolved`` is a round trip to the jsii kernel, and
    constructs ask it of nearly every prop (synth cost, ``benchmarks/README.md``)."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, str | int | float | list) and not may_be_token(value):
        return False
    return bool(Token.is_unresolved(value))


SAGEMAKER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
SAGEMAKER_NAME_MAX_LENGTH = 63


def arn_resource_name(name: str) -> str:
    """``name`` as it appears in a SageMaker ARN, which SageMaker writes in lower case. A
    deploy-time name (a parameter, another stack's output) is kept as it is: lower-casing its
    token placeholder (``${Token[...]}``) would leave a literal that resolves to nothing, and
    CloudFormation has no function to lower-case it at deploy time."""
    return name if is_unresolved(name) else name.lower()


def check_sagemaker_name(prop: str, name: str | None) -> None:
    """Check a SageMaker resource name (endpoint, model, component): 1-63 chars of [a-zA-Z0-9-]."""
    if name is None or is_unresolved(name):
        return
    if len(name) > SAGEMAKER_NAME_MAX_LENGTH or not SAGEMAKER_NAME.match(name):
        raise ValidationError(
            prop,
            name,
            "SageMaker names are 1-63 letters, digits or hyphens, starting and ending "
            "with a letter or digit",
            "shorten the name or replace other characters with hyphens, or omit it to get "
            "a generated name",
        )


def whole_seconds(prop: str, duration: Duration) -> int:
    """``duration`` in whole seconds (the CDK's ``to_seconds()`` raises a bare
    "CannotConvertedIntoWhole" for part seconds): a ValidationError naming ``prop``."""
    milliseconds = duration.to_milliseconds()
    if is_unresolved(milliseconds):
        return int(duration.to_seconds())
    if milliseconds % 1000:
        raise ValidationError(
            prop,
            f"{milliseconds:g} ms",
            "SageMaker and Application Auto Scaling take this in whole seconds",
            f"pass Duration.seconds({max(1, round(milliseconds / 1000))})",
        )
    return int(milliseconds // 1000)


def whole_gibibytes(prop: str, size: Size) -> int:
    """``size`` in whole GiB (``to_gibibytes()`` raises a bare "CannotConvertedIntoWhole"
    for a part): a ValidationError naming ``prop``."""
    return _whole(prop, size.to_gibibytes(rounding=SizeRoundingBehavior.NONE), "GiB", "gibibytes")


def whole_mebibytes(prop: str, size: Size) -> int:
    """``size`` in whole MiB: a ValidationError naming ``prop`` for a part."""
    return _whole(prop, size.to_mebibytes(rounding=SizeRoundingBehavior.NONE), "MiB", "mebibytes")


def _whole(prop: str, amount: float, unit: str, factory: str) -> int:
    if is_unresolved(amount):
        return int(amount)
    if amount != int(amount):
        raise ValidationError(
            prop,
            f"{amount:g} {unit}",
            f"SageMaker takes this in whole {unit}",
            f"pass Size.{factory}({max(1, round(amount))})",
        )
    return int(amount)

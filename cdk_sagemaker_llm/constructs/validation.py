"""Synth-time validation errors that name the property, the bad value and the fix."""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Token

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

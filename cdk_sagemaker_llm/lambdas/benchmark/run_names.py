"""Untrusted input of ``EndpointBenchmark``'s handlers: the names and prefixes a benchmark run
carries. The checks and the error every handler shares live in ``lambdas/event_checks`` and are
re-exported here.
"""

from __future__ import annotations

import re

from ..event_checks import (
    IGNORED_PROPERTIES,
    REQUEST_TYPES,
    SAGEMAKER_NAME,
    STATE_MACHINE_ARN,
    EventError,
    boolean,
    check_request_type,
    explain,
    field,
    https_url,
    integer,
    known,
    matching,
    number,
    optional_number,
    string,
)

__all__ = [
    "BUCKET",
    "IGNORED_PROPERTIES",
    "KEY_PREFIX",
    "REQUEST_TYPES",
    "RUN_NAME",
    "RUN_STEM",
    "SAGEMAKER_NAME",
    "STATE_MACHINE_ARN",
    "EventError",
    "boolean",
    "check_request_type",
    "explain",
    "field",
    "https_url",
    "integer",
    "known",
    "matching",
    "number",
    "optional_number",
    "string",
]

RUN_STEM = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,72}")
"""A run name stem: ASCII letters, digits, '-' and '_' (Step Functions execution names)."""
RUN_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,79}")
BUCKET = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,61}[a-zA-Z0-9]")
KEY_PREFIX = re.compile(r"[^\x00-\x1f\x7f]+")
"""An S3 key prefix: any characters but control characters (keys are literal: no traversal)."""

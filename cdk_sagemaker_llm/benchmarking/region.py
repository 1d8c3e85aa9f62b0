"""Which AWS region a benchmark calls, resolved the way the AWS CLI resolves it.

Order (AWS CLI v2, "Configuring environment variables for the AWS CLI",
https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-envvars.html, and the SDKs'
shared "AWS Region" setting, https://docs.aws.amazon.com/sdkref/latest/guide/feature-region.html):

1. the explicit value (``--region``, ``region=``);
2. ``AWS_REGION``, which overrides ``AWS_DEFAULT_REGION`` and the profile's ``region``;
3. ``AWS_DEFAULT_REGION``;
4. the ``region`` of the profile in the config file (``AWS_PROFILE``, default ``default``).

botocore alone reads only 3 and 4, so ``AWS_REGION=us-east-1`` by itself used to leave a
benchmark without a region.
"""

from __future__ import annotations

import os
from typing import Any

REGION_SOURCES = "--region, AWS_REGION, AWS_DEFAULT_REGION, or the profile's region"
"""Where a region is read from, in order, as error messages state it."""

NO_REGION = (
    f"no AWS region: read from {REGION_SOURCES} (in that order); "
    "pass --region (e.g. --region us-west-2) or set AWS_REGION"
)


def resolve_region(explicit: str | None = None, session: Any = None) -> str | None:
    """The region to call: ``explicit``, else ``AWS_REGION``, else botocore's
    configuration chain of ``session`` (``AWS_DEFAULT_REGION``, then the profile); ``None``
    when none is set. ``session`` is a botocore or boto3 session (default: a new botocore
    one, created only when the environment names no region)."""
    for value in (explicit, os.environ.get("AWS_REGION")):
        if value and value.strip():
            return value.strip()
    if session is None:
        import botocore.session

        session = botocore.session.get_session()
    botocore_session = getattr(session, "_session", session)  # boto3.Session wraps one
    region = botocore_session.get_config_variable("region")
    return str(region) if region else None

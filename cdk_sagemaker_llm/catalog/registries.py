"""ECR domains and ARN partitions of regions.

The registry account of every Deep Learning Container release per region is in the generated
catalog (``containers.DLC_LINES``); these rules turn a region into the rest of an image URI.
"""

from __future__ import annotations

import difflib

from ..errors import ValidationError, is_token
from .containers import DLC_LINES

KNOWN_REGIONS = frozenset(
    region
    for line in DLC_LINES.values()
    for release in line.releases.values()
    for region in release.registries
)
"""Every region some Deep Learning Container line is published in (the generated catalog):
the regions SageMaker hosting runs in, as far as the library knows them."""


def check_region(prop: str, region: str | None) -> None:
    """Raise ValidationError for a region name no catalog line knows (a typo such as
    ``us-esat-1``), suggesting the closest; None and deploy-time tokens pass."""
    if region is None or is_token(region) or region in KNOWN_REGIONS:
        return
    close = difflib.get_close_matches(str(region), sorted(KNOWN_REGIONS), n=3)
    raise ValidationError(
        prop,
        region,
        "not an AWS region the library knows (the regions its Deep Learning Container "
        "catalog lists)",
        f"did you mean {' or '.join(repr(name) for name in close)}?"
        if close
        else "pass a region such as 'us-east-1'",
    )


def ecr_domain(region: str) -> str:
    """The ECR domain suffix of a region: ``amazonaws.com.cn`` in China, else ``amazonaws.com``."""
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"


def partition(region: str) -> str:
    """The ARN partition of a region."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"

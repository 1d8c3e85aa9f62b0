"""ECR domains and ARN partitions of regions.

The registry account of every Deep Learning Container release per region is in the generated
catalog (``containers.DLC_LINES``); these rules turn a region into the rest of an image URI.
"""

from __future__ import annotations


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

"""Where AWS publishes Deep Learning Container images: registry account per region."""

from __future__ import annotations

_DEFAULT_ACCOUNT = "763104351884"
_DEFAULT_ACCOUNT_REGIONS = [
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "sa-east-1",
    "eu-central-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-north-1",
    "ap-south-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-southeast-1",
    "ap-southeast-2",
]

DLC_REGISTRY_ACCOUNTS: dict[str, str] = {
    **dict.fromkeys(_DEFAULT_ACCOUNT_REGIONS, _DEFAULT_ACCOUNT),
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "me-south-1": "217643126080",
    "me-central-1": "914824155844",
    "il-central-1": "780543022126",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "eu-central-2": "380420809688",
    "ca-west-1": "204538143572",
    "mx-central-1": "637423239942",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "us-gov-east-1": "446045086412",
    "us-gov-west-1": "442386744353",
}
"""The account that hosts LMI, TGI, PyTorch and Triton DLC repositories, by region."""


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

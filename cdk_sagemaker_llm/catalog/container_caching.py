"""SageMaker container caching: when a new instance skips pulling the serving image.

The rule, from AWS's announcement "Introducing container caching in Amazon SageMaker AI for
faster model scaling" (AWS Machine Learning Blog, 2026-06-16,
https://aws.amazon.com/blogs/machine-learning/introducing-container-caching-in-amazon-sagemaker-ai-for-faster-model-scaling/):
caching is automatic, needs no configuration, and covers **any container image hosted in
Amazon ECR** (Deep Learning Containers and custom images alike) on **accelerator instance
types**, in **all commercial AWS Regions** where SageMaker AI inference is available. Each
endpoint has its own cache; an inference-component endpoint caches every distinct image its
components reference. If the cache misses, SageMaker pulls from ECR as before.

It replaced the rule of the December 2024 launch, which covered only listed Deep Learning
Container releases (LMI 0.29.0, TGI 2.4.0, PyTorch 2.5.1, Triton 24.09 and later) and only
inference-component endpoints.
"""

from __future__ import annotations

from .instance_types import InstanceType
from .registries import partition


def caching_applies(instance_type: InstanceType, region: str | None = None) -> bool | None:
    """True when an endpoint on ``instance_type`` in ``region`` caches its images; False on a
    CPU-only type or outside the commercial partition (China, GovCloud); None when the type's
    accelerators are unknown (neither the catalog nor you stated them). ``region`` None (a
    region-agnostic stack) is taken as commercial."""
    if region is not None and partition(region) != "aws":
        return False
    if not instance_type.accelerators_known:
        return None
    return instance_type.accelerator is not None

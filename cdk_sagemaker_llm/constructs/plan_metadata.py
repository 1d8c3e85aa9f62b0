"""Template metadata the constructs leave for ``cdk-sagemaker-llm plan``.

``plan`` reads only synthesized templates. Most of what it reports is in real resource
properties; the few facts that are not (a model's architecture, whether an image is covered by
SageMaker container caching) are added as resource metadata under ``cdk-sagemaker-llm:`` keys,
kept small and deterministic.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource

from ..catalog.model_specs import ModelSpec
from ..template_metadata import IMAGE, MODEL_SPEC
from .images import ContainerImage


def image_metadata(image: ContainerImage) -> dict[str, Any]:
    """What ``plan`` needs to know about an image and cannot derive from its URI."""
    return {
        "family": image.family.value,
        "release": image.release,
        "containerCachingEligible": image.container_caching_eligible,
    }


def add_plan_metadata(
    resource: CfnResource, *, image: ContainerImage | None, spec: ModelSpec | None
) -> None:
    """Attach the image and model-spec metadata to ``resource``."""
    if image is not None:
        resource.add_metadata(IMAGE, image_metadata(image))
    if spec is not None:
        resource.add_metadata(MODEL_SPEC, spec.to_metadata())

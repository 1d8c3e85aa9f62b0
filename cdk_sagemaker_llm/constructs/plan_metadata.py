"""Template metadata the constructs leave for ``cdk-sagemaker-llm plan``.

``plan`` reads only synthesized templates. Most of what it reports is in real resource
properties; the few facts that are not (a model's architecture, whether an image is covered by
SageMaker container caching) are added as resource metadata under ``cdk-sagemaker-llm:`` keys,
kept small and deterministic. A fact ``plan`` derives the same way from the resource's own
properties is not repeated: a Deep Learning Container's family, release and caching
eligibility from a literal image URI (``catalog.containers.image_facts_of_uri``, which
``plan.serving.image_plan`` also uses), a model's architecture from its literal
``HF_MODEL_ID`` (``ModelSpec.from_hugging_face_id``, as ``plan.serving.spec_of`` reads it).
Each entry written costs a jsii round trip and template size the synth-time validation reads
(synth cost in ``benchmarks/README.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnResource

from ..catalog.containers import image_facts_of_uri
from ..catalog.model_specs import ModelSpec
from ..errors import may_be_token
from ..template_metadata import IMAGE, MODEL_SPEC
from .images import ContainerImage


def image_metadata(image: ContainerImage) -> dict[str, Any]:
    """What ``plan`` needs to know about an image and cannot derive from its URI."""
    return {
        "family": image.family.value,
        "release": image.release,
        "containerCachingEligible": image.container_caching_eligible,
    }


def image_facts_in_uri(uri: str | None) -> dict[str, Any] | None:
    """The image metadata ``plan`` reads from a literal image URI (None for a token, which
    ``plan`` cannot read)."""
    if not isinstance(uri, str) or may_be_token(uri):
        return None
    family, release, eligible = image_facts_of_uri(uri)
    return {"family": family, "release": release, "containerCachingEligible": eligible}


def spec_in_environment(environment: Mapping[str, Any] | None) -> ModelSpec | None:
    """The architecture ``plan`` infers from a container's literal ``HF_MODEL_ID``."""
    model_id = (environment or {}).get("HF_MODEL_ID")
    if not isinstance(model_id, str) or may_be_token(model_id):
        return None
    return ModelSpec.from_hugging_face_id(model_id)


def add_plan_metadata(
    resource: CfnResource,
    *,
    image: ContainerImage | None,
    spec: ModelSpec | None,
    image_uri: str | None = None,
    environment: Mapping[str, Any] | None = None,
) -> None:
    """Attach the image and model-spec metadata to ``resource``, except what ``plan`` derives
    alike from the rendered ``image_uri`` and container ``environment`` (when given)."""
    if image is not None:
        facts = image_metadata(image)
        if facts != image_facts_in_uri(image_uri):
            resource.add_metadata(IMAGE, facts)
    if spec is not None and spec != spec_in_environment(environment):
        resource.add_metadata(MODEL_SPEC, spec.to_metadata())

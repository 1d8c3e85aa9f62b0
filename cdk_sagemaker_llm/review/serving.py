"""Images, models and sizing: what a component or variant serves, whether its image is cached,
and whether the model fits (``planning.sizing`` over the ``cdk-sagemaker-llm:model-spec``
metadata).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog.container_caching import caching_applies
from ..catalog.containers import ECR_URI, image_facts_of_uri
from ..catalog.instance_types import InstanceType
from ..catalog.jumpstart import MODEL_ID_TAG, MODEL_VERSION_TAG
from ..catalog.model_specs import ModelSpec
from ..catalog.registries import partition
from ..errors import ValidationError
from ..planning.configured_sizing import size_as_configured
from ..planning.engine_profiles import profile_name_for
from ..template_metadata import IMAGE, MODEL_SPEC
from .deploy_plan import ImagePlan, SizingVerdict
from .template import Template, environment_of, shown


def image_plan(
    uri_value: Any,
    metadata: dict[str, Any],
    instance_type: InstanceType | None,
    region: str | None = None,
) -> ImagePlan:
    """The image of a container and whether SageMaker caches it on ``instance_type`` in the
    stack's ``region`` (None: environment-agnostic; the region of a literal ECR URI is then
    read from the URI). Caching covers commercial regions only (``caching_applies``)."""
    uri = shown(uri_value)
    facts = metadata.get(IMAGE)
    family = release = None
    eligible: bool | None = None
    if isinstance(facts, dict):
        family, release = facts.get("family"), facts.get("release")
        eligible = bool(facts.get("containerCachingEligible"))
    elif isinstance(uri_value, str):
        family, release, eligible = image_facts_of_uri(uri_value)
    if region is None and isinstance(uri_value, str):
        match = ECR_URI.match(uri_value)
        region = match.group("region") if match is not None else None
    applies = caching_applies(instance_type, region) if instance_type is not None else None
    reason = None
    if eligible and applies is not True:
        if region is not None and partition(region) != "aws":
            reason = (
                f"{region} is not a commercial AWS Region (caching covers commercial Regions only)"
            )
        elif applies is None:
            reason = "the instance type's accelerators are unknown"
        else:
            reason = "the instance type has no accelerator"
    return ImagePlan(
        uri=uri,
        family=family,
        release=release,
        caching_eligible=eligible,
        caching_applies=bool(eligible) and applies is True,
        caching_unapplied_reason=reason,
    )


@dataclass
class Container:
    image_value: Any
    environment: dict[str, str]
    metadata: dict[str, Any]
    model_data: Any = None
    """Where the weights come from in S3 (``ModelDataUrl``, ``ModelDataSource`` or a
    component's ``ArtifactUrl``), or None."""
    jumpstart: str | None = None
    """``<JumpStart id> <version>`` and whether its licence was accepted, for a model tagged
    as deployed from JumpStart; None otherwise."""


def model_data_of(container: dict[str, Any]) -> Any:
    """The S3 location of a container's weights, or None (a Hugging Face id, say)."""
    if container.get("ModelDataUrl") is not None:
        return container["ModelDataUrl"]
    if container.get("ArtifactUrl") is not None:
        return container["ArtifactUrl"]
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    return source.get("S3Uri")


def model_container(template: Template, model_id: str) -> Container:
    properties = template.properties(model_id)
    container = properties.get("PrimaryContainer") or {}
    if (
        not container
        and isinstance(properties.get("Containers"), list)
        and properties["Containers"]
    ):
        container = properties["Containers"][0]
    return Container(
        image_value=container.get("Image"),
        environment=environment_of(container.get("Environment")),
        metadata=template.metadata(model_id),
        model_data=model_data_of(container),
        jumpstart=jumpstart_of(properties.get("Tags"), container),
    )


def jumpstart_of(tags: Any, container: dict[str, Any]) -> str | None:
    """A JumpStart model's id and version (SageMaker Studio's tags on the model) and whether
    the weights' ``ModelAccessConfig`` accepts the licence."""
    values = {
        tag.get("Key"): tag.get("Value")
        for tag in (tags if isinstance(tags, list) else [])
        if isinstance(tag, dict)
    }
    model_id = values.get(MODEL_ID_TAG)
    if not isinstance(model_id, str):
        return None
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    accepted = (source.get("ModelAccessConfig") or {}).get("AcceptEula") is True
    licence = "licence accepted" if accepted else "no licence accepted"
    return f"JumpStart {model_id} {values.get(MODEL_VERSION_TAG, '?')}, {licence}"


def spec_of(container: Container) -> ModelSpec | None:
    data = container.metadata.get(MODEL_SPEC)
    if isinstance(data, dict):
        try:
            return ModelSpec.from_metadata(data)
        except (KeyError, TypeError, ValueError):
            pass
    model_id = container.environment.get("HF_MODEL_ID")
    return ModelSpec.from_hugging_face_id(model_id) if model_id else None


def model_label(container: Container, spec: ModelSpec | None) -> str | None:
    """The Hugging Face id, or the S3 location the weights come from (the container's
    ``HF_MODEL_ID`` is then the local ``/opt/ml/model``), with the architecture when known."""
    model_id = container.environment.get("HF_MODEL_ID")
    if container.jumpstart is not None:
        model_id = container.jumpstart
    elif container.model_data is not None and (not model_id or model_id.startswith("/")):
        model_id = shown(container.model_data)
    if model_id and spec:
        return f"{model_id} ({spec.name})"
    return model_id or (spec.name if spec else None)


def _engine_of(container: Container, instance_type: InstanceType) -> str | None:
    """The engine profile of the container's image (as the Model construct's fit check ranks
    with it); None when the image is not recognized: ``predict``'s default profile."""
    image = image_plan(container.image_value, container.metadata, instance_type)
    if image.family is None:
        return None
    try:
        return profile_name_for(image.family, image.release)
    except ValueError:  # a family the profiles do not know
        return None


def sizing_verdict(
    container: Container, instance_type: InstanceType, accelerators: int | None
) -> SizingVerdict:
    spec = spec_of(container)
    if spec is None:
        return SizingVerdict(None, None, "not checked: the model's architecture is unknown")
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        return SizingVerdict(
            spec.name, None, f"not checked: no accelerator facts for {instance_type.name}"
        )
    engine = _engine_of(container, instance_type)
    try:
        copy = size_as_configured(
            spec, instance_type, container.environment, engine=engine, accelerators=accelerators
        )
    except ValidationError as error:
        if not str(error.prop).startswith("environment["):
            raise
        # a memory share that is not a fraction: the engine refuses it at start
        return SizingVerdict(spec.name, False, f"does not start: {error}")
    facts, share, report = copy.facts, copy.share, copy.report
    degree = report.tensor_parallel_degree
    warnings = []
    if report.fits and not report.engine_fits:
        summary = (
            f"does not start: {spec.name} {report.precision} fits on {degree} x "
            f"{instance_type.accelerator.name}, but not in the {share.describe()} its engine "
            f"({report.engine}) allocates; it needs at least "
            f"{share.least_fraction(report.memory):.0%}"
        )
    elif report.fits:
        summary = (
            f"fits: {spec.name} {report.precision} at tensor-parallel degree {degree}, "
            f"weights {report.weights_gib:.1f} GiB, KV cache holds "
            f"{report.max_concurrent_sequences} sequences of {report.max_total_tokens} tokens"
            + (
                f" ({report.engine_sequences} in the share of the memory {report.engine} allocates)"
                if report.engine_sequences is not None
                else ""
            )
        )
        held = report.engine_held_sequences
        if facts.max_concurrency and facts.max_concurrency > held:
            warnings.append(
                f"max concurrency {facts.max_concurrency} exceeds the "
                f"{held} full-length sequences the KV cache holds"
            )
    else:
        summary = (
            f"does not fit: {spec.name} {report.precision} needs "
            f"{report.needed_bytes / 1e9:.1f} GB on {degree} x {instance_type.accelerator.name} "
            f"({report.usable_memory_bytes / 1e9:.1f} GB usable)"
        )
    if (
        report.recommended_tensor_parallel_degree is not None
        and report.recommended_tensor_parallel_degree < degree
    ):
        warnings.append(
            f"tensor-parallel degree {report.recommended_tensor_parallel_degree} also fits: "
            f"{instance_type.accelerator_count // report.recommended_tensor_parallel_degree} "
            "copies per instance instead of "
            f"{instance_type.accelerator_count // degree}"
        )
    return SizingVerdict(spec.name, report.engine_fits, summary, warnings, report.to_dict())

"""SageMaker JumpStart's text-generation models: serving image per region, environment, weights
location, instance types and licence, by JumpStart model id.

The facts are generated (``scripts/generate_jumpstart_catalog.py``) from the JumpStart specs
snapshot that AWS's generative-AI CDK constructs publish on npm, and checked in as
``jumpstart_catalog.json``; ``JUMPSTART_SOURCE`` names the package and its date. Pure facts (no
aws_cdk): ``ModelSource.from_jumpstart`` binds them to a stack, the commands read them.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

from ..errors import ValidationError
from .model_specs import PRESETS, ModelSpec

_DOCUMENT: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("jumpstart_catalog.json").read_text()
)

JUMPSTART_SOURCE = (
    f"{_DOCUMENT['source']['package']} {_DOCUMENT['source']['version']} "
    f"({_DOCUMENT['source']['published']})"
)
"""The npm package (and its publication date) the JumpStart catalog was generated from."""


MODEL_ID_TAG = "sagemaker-studio:jumpstart-model-id"
"""The tag SageMaker Studio (and the SageMaker Python SDK's JumpStart deploy) puts on a model
deployed from JumpStart: its model id. ``plan`` reads it back."""
MODEL_VERSION_TAG = "sagemaker-studio:jumpstart-model-version"
"""The tag with the JumpStart model version."""


@dataclass(frozen=True)
class JumpStartModel:
    """One JumpStart model version: what deploying it needs."""

    model_id: str
    """The JumpStart model id, e.g. ``meta-textgeneration-llama-3-1-8b-instruct``."""
    version: str
    """The model version the catalog holds (the newest with serving images)."""
    default_instance_type: str
    """JumpStart's default instance type."""
    instance_types: tuple[str, ...]
    """The instance types JumpStart supports for hosting it."""
    environment: Mapping[str, str]
    """The container environment JumpStart sets."""
    instance_environment: Mapping[str, Mapping[str, str]]
    """Extra variables per instance type (tensor-parallel degree ...)."""
    artifact_key: str
    """The weights' key (a prefix ending in ``/`` or a ``.tar.gz``) in JumpStart's bucket."""
    gated_bucket: bool
    """True when the weights are in JumpStart's gated (private) bucket."""
    eula: str | None
    """The licence to accept before deploying (its key in JumpStart's bucket), or None."""
    image_of_family: Mapping[str, str]
    """Instance family (``g5``) -> image alias."""
    images: Mapping[str, Mapping[str, str]]
    """Image alias -> region -> ECR image URI."""

    @property
    def regions(self) -> list[str]:
        """The regions where JumpStart offers this model (its images and weights)."""
        return sorted({region for by_region in self.images.values() for region in by_region})

    @property
    def spec(self) -> ModelSpec | None:
        """The architecture preset the id names (``llama-3-1-8b`` -> ``llama-3.1-8b``), or None
        when the id names no preset: sizing and fit checks then need ``spec=`` given."""
        padded = f"-{self.model_id.lower()}-"
        named = [spec for name, spec in PRESETS.items() if f"-{name.replace('.', '-')}-" in padded]
        return max(named, key=lambda spec: len(spec.name)) if named else None

    def image_uri(self, region: str, instance_type: str) -> str:
        """The serving image for ``instance_type`` (``ml.g5.2xlarge``) in ``region``; raises
        ValidationError where the model is not offered or the type has no image."""
        if instance_type not in self.instance_types:
            raise ValidationError(
                "ModelSource.from_jumpstart(instance_type)",
                instance_type,
                f"JumpStart does not host {self.model_id} {self.version} on this type",
                f"use one of {', '.join(self.instance_types)} "
                f"(JumpStart's default: {self.default_instance_type})",
            )
        family = instance_type.split(".")[1]
        alias = self.image_of_family.get(family)
        by_region = self.images.get(alias or "", {})
        if region not in by_region:
            offered = sorted(by_region) if alias else self.regions
            raise ValidationError(
                "region",
                region,
                f"JumpStart does not offer {self.model_id} {self.version} in {region}"
                + (f" on {instance_type}" if alias else ""),
                f"deploy to one of {', '.join(offered)}",
            )
        return by_region[region]

    def placement_problem(self, chosen: str, placed_on: str) -> tuple[str, str] | None:
        """Why a model set up for instance type ``chosen`` cannot run on ``placed_on`` (the
        problem and the fix), or None: JumpStart does not host it there, or gives that type
        another image or environment."""
        if placed_on not in self.instance_types:
            return (
                f"JumpStart does not host {self.model_id} {self.version} on {placed_on}",
                f"place it on one of {', '.join(self.instance_types)}",
            )
        same_image = self.image_of_family.get(chosen.split(".")[1]) == self.image_of_family.get(
            placed_on.split(".")[1]
        )
        if same_image and self.environment_for(chosen) == self.environment_for(placed_on):
            return None
        return (
            f"the model was set up with JumpStart's image and environment for {chosen}, which "
            f"differ on {placed_on}",
            f"pass ModelSource.from_jumpstart(..., instance_type={placed_on!r})",
        )

    def bucket(self, region: str) -> str:
        """JumpStart's bucket holding the weights in ``region`` (gated or public)."""
        buckets = _DOCUMENT["buckets"][region]
        return str(buckets["gated" if self.gated_bucket else "content"])

    def environment_for(self, instance_type: str) -> dict[str, str]:
        """JumpStart's environment for ``instance_type``: the model's, then the type's."""
        return {**self.environment, **self.instance_environment.get(instance_type, {})}


def _model(model_id: str, entry: dict[str, Any]) -> JumpStartModel:
    sets = _DOCUMENT["region_sets"]
    registries = _DOCUMENT["registries"]
    images = {
        alias: MappingProxyType(
            {
                region: f"{registries[region]}/{image}"
                for image, index in entries
                for region in sets[index]
            }
        )
        for alias, entries in entry["images"].items()
    }
    return JumpStartModel(
        model_id=model_id,
        version=entry["version"],
        default_instance_type=entry["default_instance_type"],
        instance_types=tuple(entry["instance_types"]),
        environment=MappingProxyType(entry["environment"]),
        instance_environment=MappingProxyType(entry["instance_environment"]),
        artifact_key=entry["artifact_key"],
        gated_bucket=entry["gated_bucket"],
        eula=entry["eula"],
        image_of_family=MappingProxyType(entry["image_of_family"]),
        images=MappingProxyType(images),
    )


JUMPSTART_MODELS: Mapping[str, JumpStartModel] = MappingProxyType(
    {model_id: _model(model_id, entry) for model_id, entry in _DOCUMENT["models"].items()}
)
"""The text-generation models of the JumpStart catalog, by model id."""


def closest_jumpstart_ids(model_id: str) -> list[str]:
    """Up to three catalog model ids closest to ``model_id``, closest first: what every "did you
    mean" about a JumpStart id suggests."""
    return difflib.get_close_matches(model_id, list(JUMPSTART_MODELS), n=3, cutoff=0.6)


def jumpstart_model(
    model_id: str, version: str | None = None, prop: str = "ModelSource.from_jumpstart"
) -> JumpStartModel:
    """The catalog's model ``model_id`` (at ``version``, when given); an unknown id is a
    ValidationError suggesting the closest ids, another version one naming the version held."""
    found = JUMPSTART_MODELS.get(model_id) if isinstance(model_id, str) else None
    if found is None:
        close = closest_jumpstart_ids(str(model_id))
        raise ValidationError(
            f"{prop}(model_id)",
            model_id,
            f"not a JumpStart text-generation model id in the catalog ({JUMPSTART_SOURCE})",
            f"did you mean {', '.join(close)}?"
            if close
            else "pass a JumpStart model id such as meta-textgeneration-llama-3-1-8b-instruct",
        )
    if version is not None and version not in ("*", found.version):
        raise ValidationError(
            f"{prop}(version)",
            version,
            f"the catalog holds {model_id} version {found.version} only (the newest with "
            "serving images)",
            f"pass version={found.version!r} or leave it unset",
        )
    return found


SERVING_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        # TGI launcher arguments (huggingface.co/docs/text-generation-inference/reference/
        # launcher): --max-input-tokens (env MAX_INPUT_TOKENS) was --max-input-length
        # (MAX_INPUT_LENGTH), kept as an alias; --num-shard (NUM_SHARD) and --sharded (SHARDED)
        # are what SageMaker's TGI entrypoint derives from SM_NUM_GPUS.
        "MAX_INPUT_LENGTH": "MAX_INPUT_TOKENS",
        "NUM_SHARD": "SM_NUM_GPUS",
        "SHARDED": "SM_NUM_GPUS",
    }
)
"""JumpStart variables that set, under another name, what a decided serving variable sets:
the decided one replaces them."""

QUANTIZATION_KEYS = ("OPTION_QUANTIZE", "HF_MODEL_QUANTIZE", "QUANTIZE")
"""Variables that pick the weights' quantization: LMI ``option.quantize`` (docs.djl.ai, LMI
configurations), TGI ``--quantize`` (``QUANTIZE``; ``HF_MODEL_QUANTIZE`` in SageMaker's TGI
entrypoint). The precision is the decision's input, not something it can override."""


def merge_serving_environment(
    jumpstart: Mapping[str, str], decided: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """JumpStart's environment with the decided serving variables (the merged environment and
    the JumpStart variables replaced). The decided variables win for the keys they set, and
    replace JumpStart's aliases of them (``SERVING_ALIASES``); JumpStart's stay for the rest.
    A quantization JumpStart sets that the decided variables do not set the same way is a
    ValidationError: the decision sized another precision."""
    decided_quantization = next((decided[k] for k in QUANTIZATION_KEYS if k in decided), None)
    for key in QUANTIZATION_KEYS:
        if key in jumpstart and jumpstart[key] != decided_quantization:
            raise ValidationError(
                "search.precision",
                decided_quantization or "unquantized",
                f"JumpStart serves this model with {key}={jumpstart[key]!r}, which the "
                "decision's precision does not match",
                "pass search=SearchSpace(precision=...) with the precision JumpStart serves",
            )
    replaced = {
        key: value
        for key, value in jumpstart.items()
        if (key in decided and decided[key] != value)
        or (SERVING_ALIASES.get(key) in decided and key not in decided)
    }
    merged = {k: v for k, v in jumpstart.items() if SERVING_ALIASES.get(k) not in decided}
    merged.update(decided)
    return dict(sorted(merged.items())), replaced

"""Speculative decoding without an optimization job: a draft model on the serving container.

A small draft model proposes tokens that the served (target) model verifies in one pass, which
roughly doubles decode throughput for large models at no job cost (domain.md). LMI reads the
draft from ``OPTION_SPECULATIVE_DRAFT_MODEL``, as the SageMaker Python SDK sets it:

- ``SpeculativeDecoding.provider_draft()``: SageMaker's own draft for the model
  (``OPTION_SPECULATIVE_DRAFT_MODEL=sagemaker``). SageMaker does not support it on inference
  components, with custom inference code, or for models fine-tuned outside JumpStart: the
  first two are rejected at synth.
- ``SpeculativeDecoding.from_hugging_face("org/draft")``: the container downloads the draft
  from the Hugging Face Hub (needs network access).
- ``SpeculativeDecoding.from_s3(bucket, "drafts/llama-3-1b/")``: your own draft's uncompressed
  weights. The SDK mounts such a draft as an additional model data source at
  ``/opt/ml/additional-model-data-sources/draft_model``, but ``AWS::SageMaker::Model``'s
  ``ContainerDefinition`` has no ``AdditionalModelDataSources`` (neither aws-cdk-lib 2.275's
  ``CfnModel.ContainerDefinitionProperty`` nor CloudFormation's schema), so the draft is given
  as its ``s3://`` URI, which LMI downloads at start with the model's execution role. That
  role is granted read on exactly the draft's prefix; the container needs network access, so
  network isolation is rejected with an S3 draft.
- ``OptimizationJob.as_speculative_draft()``: the EAGLE head a speculative-decoding
  optimization job trained, read from the job's output folder like an S3 draft.

``speculative_length`` sets ``OPTION_SPECULATIVE_LENGTH``, the draft tokens proposed per step
(LMI's default 5). LMI documents ``option.speculative_draft_model``,
``option.speculative_length`` and ``option.draft_model_tp_size`` from release 0.27.0 (LMI
user guide, "LMI-Dist Engine User Guide", configuration table); ``check_serving_image``
refuses images that cannot serve a draft: TGI and other non-LMI families, LMI with
TensorRT-LLM (its drafts are compiled engines, not these variables) and LMI before 0.27.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam

from ..catalog.containers import (
    DRAFT_MODEL_VARIABLE,
    FIRST_DRAFT_RELEASE,
    HUB_TOKEN_VARIABLE,
    SPECULATIVE_LENGTH_VARIABLE,
    draft_release,
    draft_serving_problem,
)
from ..prop_types import typed_props
from .images import ContainerFamily, ContainerImage
from .model_source import ModelSource, check_hub_id, refuse_gated_without_token
from .validation import ValidationError, check_range, is_unresolved

if TYPE_CHECKING:  # annotations only: importing it costs synth time
    from aws_cdk import aws_s3 as s3

PROVIDER_DRAFT = "sagemaker"
"""The value of ``OPTION_SPECULATIVE_DRAFT_MODEL`` that selects SageMaker's own draft."""
ADDITIONAL_MODEL_DATA_DIRECTORY = "/opt/ml/additional-model-data-sources"
"""Where SageMaker mounts additional model data sources (not reachable from CloudFormation)."""
CUSTOM_CODE_VARIABLES = ("SAGEMAKER_PROGRAM", "OPTION_ENTRYPOINT", "OPTION_ENTRY_POINT")
"""Container variables that load custom inference code."""


class DraftModelKind(Enum):
    """Where the draft model comes from."""

    PROVIDER = "provider"
    """SageMaker's own draft model."""
    HUGGING_FACE = "hugging-face"
    """A Hugging Face Hub model id."""
    S3 = "s3"
    """Uncompressed weights under an S3 prefix."""


@typed_props
class SpeculativeDecoding:
    """A draft model for speculative decoding, set on a ``Model``'s serving container.

    Pass it as ``Model(..., speculative_decoding=SpeculativeDecoding.provider_draft())``. It
    needs an LMI image (the variables are LMI's); an image given by URI is trusted to be one.
    """

    def __init__(
        self,
        kind: DraftModelKind,
        *,
        model_id: str | None = None,
        bucket: s3.IBucket | None = None,
        prefix: str | None = None,
        speculative_length: int | None = None,
    ) -> None:
        # a token is not compared (check_range notes it for synth's info message)
        check_range(
            "speculative_length",
            speculative_length,
            minimum=1,
            maximum=16,
            fix="pass e.g. 5 (LMI's default), or leave it out",
        )
        self.kind = kind
        """Where the draft model comes from."""
        self.model_id = model_id
        """The Hugging Face model id, for Hugging Face drafts."""
        self.bucket = bucket
        """The S3 bucket, for S3 drafts."""
        self.prefix = prefix
        """The S3 prefix (ending in ``/``), for S3 drafts."""
        self.speculative_length = speculative_length
        """Draft tokens proposed per step (``OPTION_SPECULATIVE_LENGTH``); None: LMI's 5."""

    @staticmethod
    def provider_draft() -> SpeculativeDecoding:
        """SageMaker's own draft model (JumpStart models on single-model endpoints only)."""
        return SpeculativeDecoding(DraftModelKind.PROVIDER)

    @staticmethod
    def from_hugging_face(model_id: str) -> SpeculativeDecoding:
        """A draft downloaded from the Hugging Face Hub by the container, e.g.
        ``"meta-llama/Llama-3.2-1B-Instruct"``."""
        check_hub_id("SpeculativeDecoding.from_hugging_face(model_id)", model_id)
        return SpeculativeDecoding(DraftModelKind.HUGGING_FACE, model_id=model_id)

    @staticmethod
    def from_s3(
        bucket: s3.IBucket, prefix: str, *, speculative_length: int | None = None
    ) -> SpeculativeDecoding:
        """Your own draft's uncompressed weights under ``prefix`` (ending in ``/``);
        ``speculative_length`` draft tokens per step (default LMI's 5)."""
        if not is_unresolved(prefix) and (not prefix.endswith("/") or prefix.startswith("/")):
            raise ValidationError(
                "SpeculativeDecoding.from_s3(prefix)",
                prefix,
                "a draft model's S3 prefix must end with '/' and not start with '/'",
                f"pass {prefix.strip('/') + '/'!r}",
            )
        return SpeculativeDecoding(
            DraftModelKind.S3, bucket=bucket, prefix=prefix, speculative_length=speculative_length
        )

    @property
    def is_provider_draft(self) -> bool:
        """True for SageMaker's own draft, which inference components do not support."""
        return self.kind is DraftModelKind.PROVIDER

    @property
    def s3_uri(self) -> str | None:
        """``s3://bucket/prefix`` of an S3 draft, None otherwise."""
        if self.bucket is None:
            return None
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"

    def validate(
        self,
        image: ContainerImage,
        environment: Mapping[str, str] | None,
        *,
        network_isolation: bool = False,
    ) -> None:
        """Raise ValidationError when this draft cannot work with the given container."""
        if not image.family.is_lmi and image.family is not ContainerFamily.CUSTOM:
            raise ValidationError(
                "speculative_decoding",
                self.kind.value,
                f"the draft model is set through LMI's {DRAFT_MODEL_VARIABLE}, which a "
                f"{image.family.value} image ignores",
                "serve the model with an LMI image (ContainerImage.lmi(...)), or drop "
                "speculative_decoding",
            )
        _check_release("speculative_decoding", image)
        custom_code = sorted(set(CUSTOM_CODE_VARIABLES) & set(environment or {}))
        if self.is_provider_draft and (image.family is ContainerFamily.CUSTOM or custom_code):
            detail = (
                f"the container loads custom inference code ({', '.join(custom_code)})"
                if custom_code
                else "the image is not a SageMaker LMI container (custom inference code)"
            )
            raise ValidationError(
                "speculative_decoding",
                "provider_draft()",
                f"SageMaker's draft model is not supported with custom inference code: {detail}",
                "use your own draft (SpeculativeDecoding.from_s3 or .from_hugging_face), or "
                "serve with a SageMaker LMI image and no custom entry point",
            )
        if network_isolation and self.kind is not DraftModelKind.PROVIDER:
            raise ValidationError(
                "speculative_decoding",
                self.s3_uri or self.model_id,
                "the container downloads this draft at start, which network isolation forbids "
                "(CloudFormation cannot mount a draft as an additional model data source)",
                "disable network_isolation, or drop speculative_decoding",
            )

    def check_token(self, environment: Mapping[str, str]) -> None:
        """Raise ValidationError for a gated Hub draft (``catalog/hub_access.py``) in a
        container without ``HF_TOKEN``: LMI downloads the draft with the container's token."""
        if self.model_id is None or HUB_TOKEN_VARIABLE in environment:
            return
        refuse_gated_without_token(
            "SpeculativeDecoding.from_hugging_face(model_id)",
            self.model_id,
            "give the model a token: ModelSource.from_hugging_face(..., token_secret=...) (the "
            "container's HF_TOKEN also downloads the draft), or serve the draft from S3 "
            "(SpeculativeDecoding.from_s3)",
        )

    def bind(self, role: iam.IRole | None) -> dict[str, str]:
        """The container variables; grants ``role`` read on exactly an S3 draft's prefix."""
        rendered = {DRAFT_MODEL_VARIABLE: self._draft(role)}
        if self.speculative_length is not None:
            rendered[SPECULATIVE_LENGTH_VARIABLE] = str(self.speculative_length)
        return rendered

    def _draft(self, role: iam.IRole | None) -> str:
        """The value of ``OPTION_SPECULATIVE_DRAFT_MODEL``."""
        if self.kind is DraftModelKind.PROVIDER:
            return PROVIDER_DRAFT
        if self.kind is DraftModelKind.HUGGING_FACE:
            assert self.model_id is not None
            return self.model_id
        assert self.bucket is not None and self.prefix is not None
        if role is not None:
            self._grant_read(role)
        return self.s3_uri or ""

    def _grant_read(self, role: iam.IRole) -> None:
        """Read on exactly the draft's prefix (the model source's grant: objects, listing)."""
        assert self.bucket is not None and self.prefix is not None
        ModelSource.from_s3(self.bucket, self.prefix).bind(role)

    def __repr__(self) -> str:
        where = self.s3_uri or self.model_id or PROVIDER_DRAFT
        return f"SpeculativeDecoding({self.kind.value}, {where})"


def check_serving_image(prop: str, image: ContainerImage, fix: str) -> None:
    """Raise ValidationError naming ``prop`` when ``image`` cannot serve a speculative draft
    (``catalog.containers.draft_serving_problem``): a family other than LMI with vLLM /
    LMI-Dist (TGI, TensorRT-LLM, NeuronX, ...) or an LMI release before the draft options
    (``FIRST_DRAFT_RELEASE``)."""
    if image.family is not ContainerFamily.LMI:
        problem = draft_serving_problem(image.family, None)
        assert problem is not None
        raise ValidationError(
            prop, f"{image.family.value} {image.release or ''}".strip(), problem, fix
        )
    _check_release(prop, image, fix)


def _check_release(prop: str, image: ContainerImage, fix: str | None = None) -> None:
    """An LMI release known to predate the draft options is refused: the catalog's release,
    else the DJL version a full tag starts with (``0.26.0-deepspeed0.12.6-cu121``); an image
    whose release is unknown (by URI) is trusted."""
    if image.family is not ContainerFamily.LMI:
        return
    release = draft_release(image.release, image.tag)
    problem = draft_serving_problem(image.family, release)
    if problem is not None:
        raise ValidationError(
            prop,
            f"lmi {release}",
            problem,
            fix or f"use ContainerImage.lmi('{FIRST_DRAFT_RELEASE}') or later",
        )

"""Capturing an endpoint's requests and responses to S3."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker

from ..prop_types import typed_props
from .nag import acknowledge_wildcard_actions, acknowledge_wildcard_resources
from .validation import ValidationError, check_range

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3


@typed_props
@dataclass(frozen=True, kw_only=True)
class DataCapture:
    """Write a sample of an endpoint's requests and responses to S3 (``DataCaptureConfig``)."""

    bucket: s3.IBucket
    """The destination bucket."""
    prefix: str = "data-capture/"
    """The key prefix; ends with ``/``. Default ``data-capture/``."""
    sampling_percentage: int = 100
    """Share of requests captured, 0-100; default 100."""
    capture_input: bool = True
    """Capture requests; default True."""
    capture_output: bool = True
    """Capture responses; default True."""
    kms_key: kms.IKey | None = None
    """Encrypt captured data with this key; default the bucket's encryption."""

    def bind(self, roles: list[iam.IRole]) -> sagemaker.CfnEndpointConfig.DataCaptureConfigProperty:
        """Validate, grant ``roles`` write access to exactly the prefix, and render."""
        check_range(
            "data_capture.sampling_percentage", self.sampling_percentage, minimum=0, maximum=100
        )
        if not self.capture_input and not self.capture_output:
            raise ValidationError(
                "data_capture.capture_input/capture_output",
                False,
                "capturing neither requests nor responses captures nothing",
                "enable capture_input or capture_output, or drop data_capture",
            )
        if not self.prefix.endswith("/"):
            raise ValidationError(
                "data_capture.prefix",
                self.prefix,
                "must end with '/'",
                f"use {self.prefix + '/'!r}",
            )
        for role in roles:
            iam.Grant.add_to_principal(
                grantee=role,
                actions=["s3:PutObject"],
                resource_arns=[self.bucket.arn_for_objects(self.prefix + "*")],
            )
            acknowledge_wildcard_resources(
                role,
                [self.bucket.arn_for_objects(self.prefix + "*")],
                "SageMaker writes captured requests under keys it generates below the capture "
                "prefix (endpoint, variant, date); the grant is exactly that prefix",
            )
            key = self.kms_key if self.kms_key is not None else self.bucket.encryption_key
            if key is not None:
                key.grant_encrypt(role)
                acknowledge_wildcard_actions(
                    role,
                    ["kms:GenerateDataKey*", "kms:ReEncrypt*"],
                    "Key.grant_encrypt's action families on exactly the capture key: SageMaker "
                    "generates data keys to encrypt the captured objects",
                )
        modes = [
            mode
            for mode, on in (("Input", self.capture_input), ("Output", self.capture_output))
            if on
        ]
        return sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
            capture_options=[
                sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode=mode)
                for mode in modes
            ],
            destination_s3_uri=f"s3://{self.bucket.bucket_name}/{self.prefix}",
            initial_sampling_percentage=self.sampling_percentage,
            enable_capture=True,
            kms_key_id=self.kms_key.key_arn if self.kms_key else None,
        )

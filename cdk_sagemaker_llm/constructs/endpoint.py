"""SageMaker real-time endpoints: instance-based, and inference-component-based."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations, Duration, Size
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..catalog.instance_types import InstanceType
from .availability import require_inference_components
from .data_capture import DataCapture
from .deployment import RollingDeployment
from .endpoint_base import (
    DEFAULT_VARIANT_NAME,
    INVOKE_ACTIONS,
    EndpointBase,
    import_endpoint_by_arn,
    import_endpoint_by_name,
)
from .execution_role import create_execution_role, depend_on_role_policy
from .inference_component import InferenceComponent
from .interfaces import IEndpoint
from .model import Model
from .networking import place_in_vpc
from .prop_types import typed_props
from .validation import ValidationError, check_range, check_sagemaker_name, is_unresolved

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms

__all__ = [
    "INVOKE_ACTIONS",
    "Endpoint",
    "EndpointBase",
    "IEndpoint",
    "InferenceComponentEndpoint",
    "ProductionVariant",
    "RoutingStrategy",
]


class RoutingStrategy(Enum):
    """How an endpoint spreads requests over instances (``RoutingConfig``)."""

    LEAST_OUTSTANDING_REQUESTS = "LEAST_OUTSTANDING_REQUESTS"
    RANDOM = "RANDOM"


@typed_props
@dataclass(frozen=True, kw_only=True)
class ProductionVariant:
    """One weighted production variant of an instance-based endpoint."""

    model: Model
    """The model served."""
    instance_type: InstanceType
    """Instance type of the variant."""
    initial_instance_count: int = 1
    """Instances at creation; default 1."""
    initial_weight: float = 1.0
    """Traffic weight relative to the other variants; default 1."""
    variant_name: str | None = None
    """Variant name; default ``AllTraffic`` for a single variant, else ``Variant<n>``."""
    volume_size: Size | None = None
    """ML storage volume (1-512 GiB); not allowed on instances with local NVMe storage."""
    container_startup_health_check_timeout: Duration | None = None
    """How long the container may take to pass its health check (60-3600 s)."""
    model_data_download_timeout: Duration | None = None
    """How long downloading the model data may take (60-3600 s)."""
    routing_strategy: RoutingStrategy | None = None
    """How requests are spread over the variant's instances; default SageMaker's (random)."""


def _check_instance_storage(
    instance_type: InstanceType, volume_size: Size | None, kms_key: kms.IKey | None, prop: str
) -> None:
    if not instance_type.has_local_nvme_storage:
        return
    if volume_size is not None:
        raise ValidationError(
            f"{prop}.volume_size",
            f"{volume_size.to_gibibytes()} GiB",
            f"{instance_type.name} has local NVMe storage; SageMaker rejects a volume size for it",
            "drop volume_size (the instance store is used), or pick a type without local storage",
        )
    if kms_key is not None:
        raise ValidationError(
            "kms_key",
            kms_key.key_arn,
            f"{instance_type.name} has local NVMe storage; SageMaker rejects a KMS key for its "
            "storage volume (the instance store is encrypted by hardware)",
            "drop kms_key for this instance type, or pick a type without local storage",
        )


def _timeouts(
    prefix: str,
    startup: Duration | None,
    download: Duration | None,
) -> tuple[int | None, int | None]:
    values = []
    for name, value in (
        ("container_startup_health_check_timeout", startup),
        ("model_data_download_timeout", download),
    ):
        seconds = int(value.to_seconds()) if value is not None else None
        check_range(f"{prefix}{name} (seconds)", seconds, minimum=60, maximum=3600)
        values.append(seconds)
    return values[0], values[1]


def _volume_gib(prop: str, size: Size | None) -> int | None:
    if size is None:
        return None
    gib = int(size.to_gibibytes())
    check_range(f"{prop}.volume_size (GiB)", gib, minimum=1, maximum=512)
    return gib


@typed_props
class Endpoint(EndpointBase):
    """An instance-based endpoint: one or more weighted variants, each serving one model."""

    from_endpoint_name = staticmethod(import_endpoint_by_name)
    from_endpoint_arn = staticmethod(import_endpoint_by_arn)

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        variants: Sequence[ProductionVariant],
        endpoint_name: str | None = None,
        kms_key: kms.IKey | None = None,
        data_capture: DataCapture | None = None,
        deployment: RollingDeployment | None = None,
    ) -> None:
        """
        :param variants: the production variants (at least one, at most 10).
        :param endpoint_name: the endpoint name; default generated by CloudFormation.
        :param kms_key: encrypt the ML storage volumes; default AWS-managed encryption. Not
            allowed on instance types with local NVMe storage.
        :param data_capture: capture requests/responses to S3; default off.
        :param deployment: rolling update with alarm rollback for later changes; default
            SageMaker's blue/green all-at-once.
        """
        super().__init__(scope, id)
        check_sagemaker_name("endpoint_name", endpoint_name)
        if not variants or len(variants) > 10:
            raise ValidationError(
                "variants",
                len(variants),
                "an endpoint has 1 to 10 variants",
                "pass 1 to 10 variants",
            )
        if deployment is not None:
            deployment.validate("deployment")
        names = [
            v.variant_name
            or (DEFAULT_VARIANT_NAME if len(variants) == 1 else f"Variant{index + 1}")
            for index, v in enumerate(variants)
        ]
        if len(set(names)) != len(names):
            raise ValidationError(
                "variants[].variant_name",
                names,
                "variant names must be unique",
                "rename the duplicates",
            )
        self.variants = list(variants)
        """The production variants."""
        self.variant_names = names
        """The variant names, in order."""
        self.default_variant_name = names[0]

        rendered = []
        for index, (variant, name) in enumerate(zip(variants, names, strict=True)):
            prop = f"variants[{index}]"
            check_sagemaker_name(f"{prop}.variant_name", name)
            check_range(f"{prop}.initial_instance_count", variant.initial_instance_count, minimum=1)
            check_range(f"{prop}.initial_weight", variant.initial_weight, minimum=0)
            variant.model.check_placement(
                variant.instance_type,
                variant.instance_type.accelerator_count or None,
                f"{prop}.instance_type",
            )
            _check_instance_storage(variant.instance_type, variant.volume_size, kms_key, prop)
            startup, download = _timeouts(
                f"{prop}.",
                variant.container_startup_health_check_timeout,
                variant.model_data_download_timeout,
            )
            rendered.append(
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=name,
                    model_name=variant.model.model_name,
                    instance_type=variant.instance_type.name,
                    initial_instance_count=variant.initial_instance_count,
                    initial_variant_weight=variant.initial_weight,
                    volume_size_in_gb=_volume_gib(prop, variant.volume_size),
                    container_startup_health_check_timeout_in_seconds=startup,
                    model_data_download_timeout_in_seconds=download,
                    routing_config=_routing(variant.routing_strategy),
                )
            )
        roles: list[iam.IRole] = []
        for variant in variants:
            if not any(role is variant.model.role for role in roles):
                roles.append(variant.model.role)
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            production_variants=rendered,
            kms_key_id=kms_key.key_arn if kms_key else None,
            data_capture_config=data_capture.bind(roles) if data_capture else None,
        )
        if kms_key is not None:
            for role in roles:
                kms_key.grant_encrypt_decrypt(role)
        self.resource = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            endpoint_name=endpoint_name,
            deployment_config=deployment.for_endpoint() if deployment else None,
        )
        self.endpoint_name = self.resource.attr_endpoint_name
        self.endpoint_arn = self.resource.ref

    def check_variant_scaling(
        self, variant_name: str, min_instances: int, max_instances: int
    ) -> None:
        """Raise ValidationError when the variant does not exist or its initial instance count
        lies above ``max_instances``."""
        if variant_name not in self.variant_names:
            raise ValidationError(
                "variant_name",
                variant_name,
                f"{self.node.path} has no such variant (it has {self.variant_names})",
                "pass one of the endpoint's variant names",
            )
        initial = self.variants[self.variant_names.index(variant_name)].initial_instance_count
        if is_unresolved(max_instances) or not isinstance(max_instances, int):
            return
        if initial > max_instances:
            raise ValidationError(
                "max_instances",
                max_instances,
                f"is below the variant's initial_instance_count ({initial})",
                f"raise max_instances to at least {initial} or lower initial_instance_count",
            )


@typed_props
class InferenceComponentEndpoint(EndpointBase):
    """An endpoint that hosts inference components on shared instances.

    The variant has no model; components (``add_inference_component``) bring their own, and
    SageMaker's managed instance scaling adds and removes instances between
    ``min_instance_count`` and ``max_instance_count`` as components scale their copies. Only
    this kind of endpoint benefits from SageMaker container caching.
    """

    from_endpoint_name = staticmethod(import_endpoint_by_name)
    from_endpoint_arn = staticmethod(import_endpoint_by_arn)

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: InstanceType,
        initial_instance_count: int = 1,
        min_instance_count: int = 1,
        max_instance_count: int | None = None,
        variant_name: str = DEFAULT_VARIANT_NAME,
        routing_strategy: RoutingStrategy | None = None,
        volume_size: Size | None = None,
        container_startup_health_check_timeout: Duration | None = None,
        model_data_download_timeout: Duration | None = None,
        role: iam.IRole | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        network_isolation: bool = False,
        kms_key: kms.IKey | None = None,
        data_capture: DataCapture | None = None,
        endpoint_name: str | None = None,
    ) -> None:
        """
        :param instance_type: the instance type every component shares.
        :param initial_instance_count: instances at creation; default 1.
        :param min_instance_count: fewest instances managed scaling keeps; default 1. 0 allows
            scale to zero (not accepted in every region).
        :param max_instance_count: most instances; default ``initial_instance_count``.
        :param variant_name: the variant name; default ``AllTraffic``.
        :param routing_strategy: request routing; default SageMaker's.
        :param volume_size: ML storage volume (1-512 GiB); not allowed with local NVMe storage.
        :param container_startup_health_check_timeout: default for components (60-3600 s).
        :param model_data_download_timeout: default for components (60-3600 s).
        :param role: the execution role the API requires; default a new least-privilege role
            (components with their own container add their grants to it).
        :param vpc: run component containers in this VPC; default none.
        :param vpc_subnets: subnets within ``vpc``; default the private subnets.
        :param security_groups: default one new group with no inbound rules.
        :param network_isolation: forbid containers network access; default False.
        :param kms_key: encrypt storage volumes; default AWS-managed. Not allowed with local
            NVMe storage.
        :param data_capture: capture requests/responses to S3; default off.
        :param endpoint_name: default generated by CloudFormation.
        """
        super().__init__(scope, id)
        require_inference_components(self, "region of the stack")
        check_sagemaker_name("endpoint_name", endpoint_name)
        check_sagemaker_name("variant_name", variant_name)
        maximum = max_instance_count if max_instance_count is not None else initial_instance_count
        check_range(
            "initial_instance_count",
            initial_instance_count,
            minimum=1,
            fix="create with at least 1 instance; scale to zero afterwards",
        )
        check_range("min_instance_count", min_instance_count, minimum=0)
        check_range("max_instance_count", maximum, minimum=1)
        if not min_instance_count <= initial_instance_count <= maximum:
            raise ValidationError(
                "min_instance_count/initial_instance_count/max_instance_count",
                (min_instance_count, initial_instance_count, maximum),
                "must satisfy min <= initial <= max",
                "raise max_instance_count or lower min_instance_count",
            )
        if min_instance_count == 0:
            Annotations.of(self).add_warning_v2(
                "cdk-sagemaker-llm:min-instance-count-zero",
                "min_instance_count=0 (scale to zero) is not accepted in every region; check "
                "that yours supports it before deploying.",
            )
        _check_instance_storage(instance_type, volume_size, kms_key, "endpoint")
        startup, download = _timeouts(
            "", container_startup_health_check_timeout, model_data_download_timeout
        )
        self.instance_type = instance_type
        """The instance type every component shares."""
        self.min_instance_count = min_instance_count
        """Fewest instances managed scaling keeps."""
        self.max_instance_count = maximum
        """Most instances managed scaling adds."""
        self.default_variant_name = variant_name
        self.network_isolation = network_isolation
        """Whether containers are denied network access."""
        self.components: list[InferenceComponent] = []
        """Components added with ``add_inference_component``."""
        self.role: iam.IRole = role or create_execution_role(
            self, "ExecutionRole", description=f"SageMaker execution role of {self.node.path}"
        )
        """The execution role of the endpoint's component containers."""

        network = place_in_vpc(
            self, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups, role=self.role
        )
        self.security_groups: list[ec2.ISecurityGroup] = network.security_groups if network else []
        """Security groups of the containers' network interfaces (empty without a VPC)."""
        vpc_config = (
            sagemaker.CfnEndpointConfig.VpcConfigProperty(
                security_group_ids=network.security_group_ids, subnets=network.subnet_ids
            )
            if network
            else None
        )
        if kms_key is not None:
            kms_key.grant_encrypt_decrypt(self.role)

        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            execution_role_arn=self.role.role_arn,
            enable_network_isolation=network_isolation or None,
            vpc_config=vpc_config,
            kms_key_id=kms_key.key_arn if kms_key else None,
            data_capture_config=data_capture.bind([self.role]) if data_capture else None,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=variant_name,
                    instance_type=instance_type.name,
                    initial_instance_count=initial_instance_count,
                    managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                        status="ENABLED",
                        min_instance_count=min_instance_count,
                        max_instance_count=maximum,
                    ),
                    routing_config=_routing(routing_strategy),
                    volume_size_in_gb=_volume_gib("endpoint", volume_size),
                    container_startup_health_check_timeout_in_seconds=startup,
                    model_data_download_timeout_in_seconds=download,
                )
            ],
        )
        depend_on_role_policy(self.endpoint_config, self.role)
        self.resource = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            endpoint_name=endpoint_name,
        )
        self.endpoint_name = self.resource.attr_endpoint_name
        self.endpoint_arn = self.resource.ref

    def add_inference_component(self, id: str, **props: Any) -> InferenceComponent:
        """Add a component to this endpoint; ``props`` are ``InferenceComponent``'s."""
        return InferenceComponent(self, id, endpoint=self, **props)

    def check_variant_scaling(
        self, variant_name: str, min_instances: int, max_instances: int
    ) -> None:
        """Always raises: this endpoint's instances follow its components' copies."""
        raise ValidationError(
            "endpoint",
            self.node.path,
            "an inference-component endpoint's instances follow its components (managed "
            "instance scaling between min_instance_count and max_instance_count)",
            "scale the components with ComponentScaling and set the instance bounds on the "
            "InferenceComponentEndpoint",
        )

    def check_scale_to_zero(self) -> bool:
        """Raise ValidationError unless managed instance scaling may release every instance."""
        if self.min_instance_count != 0:
            raise ValidationError(
                "min_copies",
                0,
                "scale to zero needs the endpoint's managed instance scaling to allow 0 "
                f"instances, but {self.node.path} has min_instance_count={self.min_instance_count}",
                "set min_instance_count=0 on the InferenceComponentEndpoint, or min_copies >= 1",
            )
        return True


def _routing(
    strategy: RoutingStrategy | None,
) -> sagemaker.CfnEndpointConfig.RoutingConfigProperty | None:
    if strategy is None:
        return None
    return sagemaker.CfnEndpointConfig.RoutingConfigProperty(routing_strategy=strategy.value)

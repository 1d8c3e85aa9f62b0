"""SageMaker real-time endpoints: instance-based, and inference-component-based."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations, Duration, Size, SizeRoundingBehavior
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..catalog.instance_types import InstanceType
from ..prop_types import typed_props
from .availability import require_hosting, require_inference_components
from .capacity_check import CopyDemand, check_capacity
from .endpoint_base import (
    DEFAULT_VARIANT_NAME,
    INVOKE_ACTIONS,
    EndpointBase,
    import_endpoint_by_arn,
    import_endpoint_by_name,
)
from .execution_role import check_grants_land, create_execution_role, depend_on_role_policy
from .fixed_names import claim_fixed_name
from .inference_component import InferenceComponent
from .interfaces import IEndpoint, IHostedComponent
from .model import ModelBase, note_unknown_instance_type
from .nag import acknowledge_key_grant, batched_acknowledgments
from .networking import ContainerNetworking, place_in_vpc
from .synth_cache import node_path, remember
from .validation import (
    ValidationError,
    check_range,
    check_sagemaker_name,
    is_unresolved,
    note_unchecked,
    require_concrete,
    whole_gibibytes,
)
from .variant_options import (
    CapacityReservation,
    ContainerStartup,
    InferenceAmiVersion,
    InstancePool,
    ManagedInstanceScaling,
    PrefixAwareRouting,
    RoutingStrategy,
    StorageVolume,
    VariantPlatform,
    timeout_seconds,
)

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms

    # Optional features, imported where used (a prop left at None never needs them; the type
    # checks resolve them as the package's exports): importing them costs synth time.
    from .async_inference import AsyncInference
    from .data_capture import DataCapture
    from .deployment import RollingDeployment
    from .endpoint_metrics import EndpointMetrics
    from .serverless import ServerlessConfig

__all__ = [
    "INVOKE_ACTIONS",
    "Endpoint",
    "EndpointBase",
    "IEndpoint",
    "InferenceComponentEndpoint",
    "ProductionVariant",
    "RoutingStrategy",
]

STORAGE_KEY_REASON = (
    "Key.grant_encrypt_decrypt's action families on exactly the endpoint's storage-volume key "
    "(KmsKeyId): SageMaker encrypts the ML storage volume with data keys of that key"
)


@typed_props
@dataclass(frozen=True, kw_only=True)
class ProductionVariant:
    """One weighted production variant of an instance-based endpoint."""

    model: ModelBase
    """The model served (created, or imported with ``Model.from_model_name``)."""
    instance_type: InstanceType | None = None
    """Instance type of the variant; required unless ``instance_pools`` or ``serverless``."""
    initial_instance_count: int | None = None
    """Instances at creation; default 1 (none for a serverless variant)."""
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
    prefix_aware_routing: PrefixAwareRouting | None = None
    """Settings of ``RoutingStrategy.PREFIX_AWARE`` (required with it; implies it)."""
    instance_pools: Sequence[InstancePool] | None = None
    """1-5 instance types by priority, tried in turn when capacity is short; replaces
    ``instance_type``; default none."""
    provision_timeout: Duration | None = None
    """How long provisioning (across pools) may take, 300-3600 s; default SageMaker's."""
    capacity_reservation: CapacityReservation | None = None
    """Launch into an ML capacity reservation; default on-demand capacity."""
    inference_ami_version: InferenceAmiVersion | None = None
    """The inference AMI (drivers, CUDA/Neuron); default SageMaker's."""
    enable_ssm_access: bool | None = None
    """Allow AWS Systems Manager sessions into the containers; default off."""
    serverless: ServerlessConfig | None = None
    """Serve serverlessly (memory and concurrency, no instances); default instance-based."""

    def platform(self) -> VariantPlatform:
        """The variant's instance-type, routing and capacity options."""
        return VariantPlatform(
            instance_pools=self.instance_pools,
            provision_timeout=self.provision_timeout,
            routing_strategy=self.routing_strategy,
            prefix_aware_routing=self.prefix_aware_routing,
            capacity_reservation=self.capacity_reservation,
            inference_ami_version=self.inference_ami_version,
            enable_ssm_access=self.enable_ssm_access,
        )


def _check_instance_storage(
    instance_type: InstanceType,
    volume_size: Size | None,
    kms_key: kms.IKey | None,
    size_prop: str,
    key_prop: str = "kms_key",
) -> None:
    if not instance_type.has_local_nvme_storage:
        return
    if volume_size is not None:
        raise ValidationError(
            size_prop,
            f"{volume_size.to_gibibytes(rounding=SizeRoundingBehavior.NONE):g} GiB",
            f"{instance_type.name} has local NVMe storage; SageMaker rejects a volume size for it",
            "drop the volume size (the instance store is used), or pick a type without local "
            "storage",
        )
    if kms_key is not None:
        raise ValidationError(
            key_prop,
            kms_key.key_arn,
            f"{instance_type.name} has local NVMe storage; SageMaker rejects a KMS key for its "
            "storage volume (the instance store is encrypted by hardware)",
            f"drop {key_prop} for this instance type, or pick a type without local storage",
        )


def _instance_variant(
    variant: ProductionVariant, prop: str, kms_key: kms.IKey | None
) -> dict[str, Any]:
    """Check an instance-based variant on each of its instance types; its L1 arguments."""
    count = variant.initial_instance_count if variant.initial_instance_count is not None else 1
    check_range(f"{prop}.initial_instance_count", count, minimum=1)
    platform = variant.platform()
    instance_types = platform.instance_types(variant.instance_type, prop)
    platform.check_ami(instance_types, prop)
    models = {pool.instance_type.name: pool.model for pool in variant.instance_pools or []}
    for instance_type in instance_types:
        where = (
            f"{prop}.instance_pools[{instance_type.name}]"
            if variant.instance_pools
            else f"{prop}.instance_type"
        )
        model = models.get(instance_type.name) or variant.model
        model.check_placement(instance_type, instance_type.accelerator_count or None, where)
        _check_instance_storage(instance_type, variant.volume_size, kms_key, f"{prop}.volume_size")
    return {
        "instance_type": variant.instance_type.name if variant.instance_type else None,
        "initial_instance_count": count,
        **platform.render(prop),
    }


def _serverless_variant(
    variant: ProductionVariant,
    prop: str,
    variant_count: int,
    kms_key: kms.IKey | None,
    data_capture: DataCapture | None,
    async_inference: AsyncInference | None,
) -> dict[str, Any]:
    """Check a serverless variant against what serverless inference excludes; its L1 args."""
    assert variant.serverless is not None
    instance_only = {
        "instance_type": variant.instance_type,
        "initial_instance_count": variant.initial_instance_count,
        "instance_pools": variant.instance_pools,
        "provision_timeout": variant.provision_timeout,
        "volume_size": variant.volume_size,
        "routing_strategy": variant.routing_strategy,
        "prefix_aware_routing": variant.prefix_aware_routing,
        "capacity_reservation": variant.capacity_reservation,
        "inference_ami_version": variant.inference_ami_version,
        "enable_ssm_access": variant.enable_ssm_access,
    }
    for name, value in instance_only.items():
        if value is not None:
            raise ValidationError(
                f"{prop}.{name}",
                getattr(value, "name", value),
                "a serverless variant has no instances; this option is for instance-based variants",
                f"drop {name}, or drop serverless",
            )
    excluded: tuple[tuple[str, object, str], ...] = (
        (
            "variants",
            variant_count if variant_count > 1 else None,
            "a serverless endpoint has exactly one variant",
        ),
        (
            "kms_key",
            kms_key,
            "the key encrypts the instances' ML storage volumes, and a serverless variant has none",
        ),
        ("data_capture", data_capture, "serverless endpoints do not support data capture"),
        ("async_inference", async_inference, "asynchronous inference runs on instances"),
    )
    for name, excluded_value, problem in excluded:
        if excluded_value is not None:
            raise ValidationError(
                name,
                excluded_value
                if isinstance(excluded_value, int)
                else type(excluded_value).__name__,
                problem,
                f"drop {name}, or serve on instances",
            )
    from .serverless import ServerlessConfig

    ServerlessConfig.check_model(variant.model, f"{prop}")
    return {"serverless_config": variant.serverless.render(f"{prop}.serverless")}


def _component_instance_types(
    platform: VariantPlatform, instance_type: InstanceType | None, storage: StorageVolume
) -> list[InstanceType]:
    """The instance types an inference-component endpoint's variant may use, in priority
    order, each checked (AMI, storage); its pools bring no model (components do)."""
    instance_pools = platform.instance_pools
    if any(pool.model is not None for pool in instance_pools or []):
        raise ValidationError(
            "platform.instance_pools[].model",
            [pool.model.node.path for pool in instance_pools or [] if pool.model],
            "an inference-component endpoint's variant serves no model of its own",
            "drop model from the pools and give components per-type specifications",
        )
    instance_types = platform.instance_types(instance_type, "endpoint")
    platform.check_ami(instance_types, "endpoint")
    for each in instance_types:
        _check_instance_storage(
            each, storage.size, storage.kms_key, "storage.size", "storage.kms_key"
        )
    return instance_types


def _variant_names(variants: Sequence[ProductionVariant]) -> list[str]:
    """The variants' names (``AllTraffic`` for a single one, ``Variant<n>`` by default), after
    checking there are 1 to 10, named uniquely."""
    if not variants or len(variants) > 10:
        raise ValidationError(
            "variants",
            len(variants),
            "an endpoint has 1 to 10 variants",
            "pass 1 to 10 variants",
        )
    names = [
        v.variant_name or (DEFAULT_VARIANT_NAME if len(variants) == 1 else f"Variant{index + 1}")
        for index, v in enumerate(variants)
    ]
    if len(set(names)) != len(names):
        raise ValidationError(
            "variants[].variant_name",
            names,
            "variant names must be unique",
            "rename the duplicates",
        )
    return names


NO_ROLE_FOR_GRANTS_WARNING = "cdk-sagemaker-llm:noRoleForGrants"
"""The id of the warning that an imported model without ``role=`` gets no grants."""


def _models(variants: Sequence[ProductionVariant]) -> list[ModelBase]:
    """The variants' models, pool models included."""
    return [v.model for v in variants] + [
        pool.model for v in variants for pool in v.instance_pools or [] if pool.model
    ]


def _model_roles(variants: Sequence[ProductionVariant]) -> list[iam.IRole]:
    """The execution roles of the variants' models (pool models included), each once."""
    roles: list[iam.IRole] = []
    for model in _models(variants):
        role = model.role
        if role is not None and not any(known is role for known in roles):
            roles.append(role)
    return roles


def _timeouts(
    prefix: str,
    startup: Duration | None,
    download: Duration | None,
) -> tuple[int | None, int | None]:
    return (
        timeout_seconds(f"{prefix}container_startup_health_check_timeout", startup),
        timeout_seconds(f"{prefix}model_data_download_timeout", download),
    )


def _volume_gib(prop: str, size: Size | None) -> int | None:
    if size is None:
        return None
    gib = whole_gibibytes(f"{prop}.volume_size", size)
    check_range(f"{prop}.volume_size (GiB)", gib, minimum=1, maximum=512)
    return gib


ROLLING_DEPLOYMENT_EXCLUSIONS = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html"
)


def _check_rolling_deployment(variants: Sequence[ProductionVariant]) -> None:
    """Deployment guardrails, "Exclusions": "If you're doing a rolling deployment, there are
    additional feature-based exclusions: Serverless inference endpoints, Multi-variant
    inference endpoints" (``ROLLING_DEPLOYMENT_EXCLUSIONS``). SageMaker would silently fall
    back to an all-at-once blue/green update, without the alarms' rollback."""
    if len(variants) > 1:
        raise ValidationError(
            "deployment",
            f"RollingDeployment over {len(variants)} variants",
            "SageMaker excludes multi-variant endpoints from rolling deployments (deployment "
            "guardrails, Exclusions)",
            "drop deployment (updates are blue/green), or serve one variant per endpoint",
        )
    if any(variant.serverless is not None for variant in variants):
        raise ValidationError(
            "deployment",
            "RollingDeployment on a serverless variant",
            "SageMaker excludes serverless endpoints from rolling deployments (deployment "
            "guardrails, Exclusions)",
            "drop deployment, or serve the model on instances (instance_type=...)",
        )


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
        async_inference: AsyncInference | None = None,
        metrics: EndpointMetrics | None = None,
    ) -> None:
        """
        :param variants: the production variants (at least one, at most 10).
        :param endpoint_name: the endpoint name; default generated by CloudFormation.
        :param kms_key: encrypt the ML storage volumes; default AWS-managed encryption. Not
            allowed on instance types with local NVMe storage.
        :param data_capture: capture requests/responses to S3; default off.
        :param deployment: rolling update with alarm rollback for later changes; default
            SageMaker's blue/green all-at-once.
        :param async_inference: make it an asynchronous endpoint (requests and results in S3,
            scale to zero with ``AsyncScaling``); default real-time.
        :param metrics: which metrics SageMaker publishes and how often (``MetricsConfig``);
            default SageMaker's.
        """
        super().__init__(scope, id)
        require_hosting(self, "region of the stack")
        check_sagemaker_name("endpoint_name", endpoint_name)
        claim_fixed_name(self, "endpoint", "endpoint_name", endpoint_name)
        names = _variant_names(variants)
        if deployment is not None:
            deployment.validate("deployment")
            _check_rolling_deployment(variants)
        self.variants = list(variants)
        """The production variants."""
        self.deployment = deployment
        """The rolling deployment of later changes, if any."""
        self.variant_names = names
        """The variant names, in order."""
        self.default_variant_name = names[0]
        self.async_inference = async_inference
        """The asynchronous-inference settings; None for a real-time endpoint."""

        rendered = [
            self._render_variant(index, kms_key, data_capture)
            for index in range(len(self.variants))
        ]
        roles = _model_roles(self.variants)
        self._warn_roleless(kms_key, data_capture, async_inference, deployment)
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            production_variants=rendered,
            kms_key_id=kms_key.key_arn if kms_key else None,
            data_capture_config=data_capture.bind(roles) if data_capture else None,
            async_inference_config=async_inference.bind(roles) if async_inference else None,
            metrics_config=metrics.render("metrics") if metrics else None,
        )
        if kms_key is not None:
            for role in roles:
                kms_key.grant_encrypt_decrypt(role)
                acknowledge_key_grant(role, STORAGE_KEY_REASON)
        if deployment is not None:
            deployment.grant_alarm_reads(roles)  # guardrails read the alarms with these roles
        self.resource = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            endpoint_name=endpoint_name,
            deployment_config=deployment.for_endpoint() if deployment else None,
        )
        self.endpoint_name = self.resource.attr_endpoint_name
        self.endpoint_arn = self.resource.ref

    def _warn_roleless(
        self,
        kms_key: kms.IKey | None,
        data_capture: DataCapture | None,
        async_inference: AsyncInference | None,
        deployment: RollingDeployment | None,
    ) -> None:
        """A model imported without ``role=`` gets none of the grants the endpoint's options
        make to its models' roles (the storage key, data capture, async inference, the
        rollback alarms): warn, naming the model and what it misses, instead of dropping
        them in silence."""
        needs = [
            name
            for name, given in (
                ("kms_key", kms_key),
                ("data_capture", data_capture),
                ("async_inference", async_inference),
                ("deployment", deployment if deployment and deployment.rollback_alarms else None),
            )
            if given is not None
        ]
        if not needs:
            return
        for model in _models(self.variants):
            if model.role is None:
                Annotations.of(self).add_warning_v2(
                    NO_ROLE_FOR_GRANTS_WARNING,
                    f"the model {model.node.path} was imported without role=, so the grants "
                    f"{', '.join(needs)} make to the models' execution roles cannot reach it "
                    "and SageMaker may fail to use them: import it with "
                    "Model.from_model_name(..., role=its_execution_role), or grant that role "
                    f"yourself and acknowledge {NO_ROLE_FOR_GRANTS_WARNING}",
                )

    def _render_variant(
        self, index: int, kms_key: kms.IKey | None, data_capture: DataCapture | None
    ) -> sagemaker.CfnEndpointConfig.ProductionVariantProperty:
        """Check variant ``index`` (instance-based or serverless); its L1 property."""
        variant, name, prop = self.variants[index], self.variant_names[index], f"variants[{index}]"
        check_sagemaker_name(f"{prop}.variant_name", name)
        if self.deployment is not None and variant.serverless is None:
            # The effective count: an instance-based variant left at its default runs 1
            # (``_instance_variant``), and its batch is checked against that.
            given = variant.initial_instance_count
            self.deployment.check_batch_size(
                "deployment",
                given if given is not None else 1,
                "variant's instance count",
                f"{prop}.initial_instance_count" + (" (default)" if given is None else ""),
            )
        check_range(f"{prop}.initial_weight", variant.initial_weight, minimum=0)
        startup, download = _timeouts(
            f"{prop}.",
            variant.container_startup_health_check_timeout,
            variant.model_data_download_timeout,
        )
        if variant.serverless is not None:
            placement = _serverless_variant(
                variant, prop, len(self.variants), kms_key, data_capture, self.async_inference
            )
        else:
            placement = _instance_variant(variant, prop, kms_key)
        return sagemaker.CfnEndpointConfig.ProductionVariantProperty(
            variant_name=name,
            model_name=variant.model.model_name,
            initial_variant_weight=variant.initial_weight,
            volume_size_in_gb=_volume_gib(prop, variant.volume_size),
            container_startup_health_check_timeout_in_seconds=startup,
            model_data_download_timeout_in_seconds=download,
            **placement,
        )

    def grant_invoke_async(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to call ``InvokeEndpointAsync``, upload requests under the input
        prefix and read results and failures; only for an ``async_inference`` endpoint."""
        if self.async_inference is None:
            raise ValidationError(
                "endpoint",
                self.node.path,
                "is a real-time endpoint; it accepts no asynchronous invocations",
                "create it with async_inference=AsyncInference(...), or use grant_invoke",
            )
        return self.async_inference.grant_invoke(grantee, self.endpoint_arn)

    def serverless_config(self, variant_name: str) -> ServerlessConfig | None:
        """The serverless settings of a variant; None for an instance-based variant."""
        self._check_variant_name(variant_name)
        return self.variants[self.variant_names.index(variant_name)].serverless

    def _check_variant_name(self, variant_name: str) -> None:
        if variant_name not in self.variant_names and is_unresolved(variant_name):
            require_concrete(
                "variant_name",
                variant_name,
                "The variant name picks one of this endpoint's variants",
            )
        if variant_name not in self.variant_names:
            raise ValidationError(
                "variant_name",
                variant_name,
                f"{self.node.path} has no such variant (it has {self.variant_names})",
                "pass one of the endpoint's variant names",
            )

    def check_variant_scaling(
        self, variant_name: str, min_instances: int, max_instances: int
    ) -> None:
        """Raise ValidationError when the variant does not exist, is serverless, its initial
        instance count lies above ``max_instances``, or the rolling deployment's batch is not
        5 %-50 % of ``min_instances``."""
        if self.serverless_config(variant_name) is not None:
            raise ValidationError(
                "variant_name",
                variant_name,
                "a serverless variant has no instances to scale",
                "scale its provisioned concurrency with ServerlessScaling",
            )
        initial = self.variants[self.variant_names.index(variant_name)].initial_instance_count or 1
        if self.deployment is not None:
            self.deployment.check_batch_size(
                "endpoint.deployment", min_instances, "variant's instance count", "min_instances"
            )
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
    SageMaker's managed instance scaling adds and removes instances between the
    ``instance_scaling`` bounds as components scale their copies.
    """

    from_endpoint_name = staticmethod(import_endpoint_by_name)
    from_endpoint_arn = staticmethod(import_endpoint_by_arn)

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: InstanceType | None = None,
        instance_scaling: ManagedInstanceScaling | None = None,
        platform: VariantPlatform | None = None,
        storage: StorageVolume | None = None,
        startup: ContainerStartup | None = None,
        networking: ContainerNetworking | None = None,
        role: iam.IRole | None = None,
        data_capture: DataCapture | None = None,
        metrics: EndpointMetrics | None = None,
        variant_name: str = DEFAULT_VARIANT_NAME,
        endpoint_name: str | None = None,
    ) -> None:
        """
        :param instance_type: the instance type every component shares; or give
            ``platform=VariantPlatform(instance_pools=[...])``.
        :param instance_scaling: initial, fewest and most instances and the scale-in policy
            of managed instance scaling; default 1 instance, neither more nor fewer.
        :param platform: instance pools (1-5 instance types by priority, tried in turn when
            capacity is short; components are checked on each and may give per-type
            ``specifications``), provisioning timeout, routing, capacity reservation,
            inference AMI and SSM access; default SageMaker's.
        :param storage: the ML storage volume's size and KMS key; default SageMaker's and
            AWS-managed. Not allowed on instance types with local NVMe storage.
        :param startup: default health-check and download timeouts of the components'
            containers (60-3600 s); default SageMaker's.
        :param networking: the components' VPC, subnets, security groups and network
            isolation; default SageMaker's managed network.
        :param role: the execution role the API requires; default a new least-privilege role
            (components with their own container add their grants to it).
        :param data_capture: capture requests/responses to S3; default off.
        :param metrics: which metrics SageMaker publishes and how often (``MetricsConfig``;
            enhanced metrics are per container here); default SageMaker's.
        :param variant_name: the variant name; default ``AllTraffic``.
        :param endpoint_name: default generated by CloudFormation.
        """
        super().__init__(scope, id)
        remember(self, scope, id)
        with batched_acknowledgments():  # one cdk-nag call per role
            require_hosting(self, "region of the stack")
            require_inference_components(self, "region of the stack")
            check_sagemaker_name("endpoint_name", endpoint_name)
            claim_fixed_name(self, "endpoint", "endpoint_name", endpoint_name)
            check_sagemaker_name("variant_name", variant_name)
            scaling = instance_scaling or ManagedInstanceScaling()
            storage = storage or StorageVolume()
            networking = networking or ContainerNetworking()
            platform = platform or VariantPlatform()
            self._check_instance_counts(
                scaling.min_instance_count, scaling.initial_instance_count, scaling.maximum
            )
            self.instance_types = _component_instance_types(platform, instance_type, storage)
            """The instance types components run on, in priority order (one without pools)."""
            self.instance_type = self.instance_types[0]
            """The (first-priority) instance type."""
            for candidate in self.instance_types:
                note_unknown_instance_type(self, candidate, "instance_type")
            self.min_instance_count = scaling.min_instance_count
            """Fewest instances managed scaling keeps."""
            self.max_instance_count = scaling.maximum
            """Most instances managed scaling adds."""
            self.default_variant_name = variant_name
            self.network_isolation = networking.network_isolation
            """Whether containers are denied network access."""
            self.components: list[IHostedComponent] = []
            """Components this endpoint hosts, in the order they were created."""
            self._most_copies: dict[str, int] = {}
            """Each component's autoscaling maximum (its max_copies, or a scheduled
            max_capacity above it), by construct path, once it scales."""
            self.role: iam.IRole = role or create_execution_role(
                self, "ExecutionRole", description=f"SageMaker execution role of {node_path(self)}"
            )
            """The execution role of the endpoint's component containers."""
            if role is not None:
                check_grants_land(self, role, "role")
            self.endpoint_config = self._config(
                instance_type,
                scaling,
                platform,
                storage,
                startup,
                networking,
                data_capture,
                metrics,
            )
            depend_on_role_policy(self.endpoint_config, self.role)
            self.resource = sagemaker.CfnEndpoint(
                self,
                "Resource",
                endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
                endpoint_name=endpoint_name,
            )
            self.endpoint_name = self.resource.attr_endpoint_name

    @cached_property
    def endpoint_arn(self) -> str:  # type: ignore[override]
        """The endpoint ARN (read from the template on first use: a jsii round trip that most
        stacks never need)."""
        assert self.resource is not None  # created in __init__
        return self.resource.ref

    def _config(
        self,
        instance_type: InstanceType | None,
        scaling: ManagedInstanceScaling,
        platform: VariantPlatform,
        storage: StorageVolume,
        startup: ContainerStartup | None,
        networking: ContainerNetworking,
        data_capture: DataCapture | None,
        metrics: EndpointMetrics | None,
    ) -> sagemaker.CfnEndpointConfig:
        """The ``AWS::SageMaker::EndpointConfig``: its one variant with managed instance
        scaling, and the endpoint-wide role, network, key, data capture and metrics."""
        health_check, download = startup.seconds("startup") if startup else (None, None)
        vpc_config = self._vpc_config(networking)
        kms_key = storage.kms_key
        if kms_key is not None:
            kms_key.grant_encrypt_decrypt(self.role)
            acknowledge_key_grant(self.role, STORAGE_KEY_REASON)
        l1 = sagemaker.CfnEndpointConfig
        return l1(
            self,
            "Config",
            execution_role_arn=self.role.role_arn,
            enable_network_isolation=networking.network_isolation or None,
            vpc_config=vpc_config,
            kms_key_id=kms_key.key_arn if kms_key else None,
            data_capture_config=data_capture.bind([self.role]) if data_capture else None,
            metrics_config=metrics.render("metrics") if metrics else None,
            production_variants=[
                l1.ProductionVariantProperty(
                    variant_name=self.default_variant_name,
                    instance_type=instance_type.name if instance_type else None,
                    initial_instance_count=scaling.initial_instance_count,
                    managed_instance_scaling=l1.ManagedInstanceScalingProperty(
                        status="ENABLED",
                        min_instance_count=scaling.min_instance_count,
                        max_instance_count=scaling.maximum,
                        scale_in_policy=scaling.scale_in_policy.render(
                            "instance_scaling.scale_in_policy"
                        )
                        if scaling.scale_in_policy
                        else None,
                    ),
                    **platform.render("endpoint"),
                    volume_size_in_gb=storage.size_gib("storage"),
                    container_startup_health_check_timeout_in_seconds=health_check,
                    model_data_download_timeout_in_seconds=download,
                )
            ],
        )

    def _check_instance_counts(self, minimum: int, initial: int, maximum: int) -> None:
        """Managed instance scaling keeps ``minimum <= initial <= maximum`` instances; it starts
        with at least 1, and scaling to 0 is not accepted in every region (a warning)."""
        check_range(
            "instance_scaling.initial_instance_count",
            initial,
            minimum=1,
            fix="create with at least 1 instance; scale to zero afterwards",
        )
        check_range("instance_scaling.min_instance_count", minimum, minimum=0)
        check_range("instance_scaling.max_instance_count", maximum, minimum=1)
        if any(map(is_unresolved, (minimum, initial, maximum))):
            note_unchecked(
                "instance_scaling.min_instance_count/initial_instance_count/max_instance_count",
                "min <= initial <= max",
            )
        elif not minimum <= initial <= maximum:
            raise ValidationError(
                "instance_scaling.min_instance_count/initial_instance_count/max_instance_count",
                (minimum, initial, maximum),
                "must satisfy min <= initial <= max",
                "raise max_instance_count or lower min_instance_count",
            )
        if minimum == 0:
            Annotations.of(self).add_warning_v2(
                "cdk-sagemaker-llm:min-instance-count-zero",
                "min_instance_count=0 (scale to zero) is not accepted in every region; check "
                "that yours supports it before deploying.",
            )

    def _vpc_config(
        self, networking: ContainerNetworking
    ) -> sagemaker.CfnEndpointConfig.VpcConfigProperty | None:
        """Place the containers in the VPC (security groups and ENI rights for the role); the
        L1 property, None without a VPC."""
        network = place_in_vpc(
            self,
            vpc=networking.vpc,
            vpc_subnets=networking.vpc_subnets,
            security_groups=networking.security_groups,
            role=self.role,
        )
        self.security_groups: list[ec2.ISecurityGroup] = network.security_groups if network else []
        """Security groups of the containers' network interfaces (empty without a VPC)."""
        if network is None:
            return None
        return sagemaker.CfnEndpointConfig.VpcConfigProperty(
            security_group_ids=network.security_group_ids, subnets=network.subnet_ids
        )

    def add_inference_component(self, id: str, **props: Any) -> InferenceComponent:
        """Add a component to this endpoint; ``props`` are ``InferenceComponent``'s."""
        return InferenceComponent(self, id, endpoint=self, **props)

    def host(self, component: IHostedComponent) -> None:
        """Count ``component`` among the hosted ones; raise ValidationError (and leave it out)
        when ``max_instance_count`` instances can no longer hold every component's copies."""
        self._check_copies(node_path(component), component.copy_count, "copy_count", component)
        self.components.append(component)

    def check_variant_scaling(
        self, variant_name: str, min_instances: int, max_instances: int
    ) -> None:
        """Always raises: this endpoint's instances follow its components' copies."""
        raise ValidationError(
            "endpoint",
            self.node.path,
            "an inference-component endpoint's instances follow its components (managed "
            "instance scaling between its instance_scaling bounds)",
            "scale the components with ComponentScaling and set the instance bounds on the "
            "InferenceComponentEndpoint",
        )

    def check_copies(self, component: Construct, copies: int, prop: str) -> None:
        """Raise ValidationError when ``max_instance_count`` instances cannot hold ``copies``
        copies of ``component`` (its copy count or scaling maximum) and every other component's
        most copies (see ``capacity``)."""
        self._check_copies(node_path(component), copies, prop)

    def _check_copies(
        self, path: str, copies: int, prop: str, adding: IHostedComponent | None = None
    ) -> None:
        """Check the copies on every instance type the endpoint may be provisioned on: with
        instance pools SageMaker may fall back to any of them, so the type that holds the
        fewest copies decides, and the error names that pool. A rejected value is not
        remembered (a component being added is counted only once accepted)."""
        if is_unresolved(copies):
            return
        if is_unresolved(self.max_instance_count):
            note_unchecked("max_instance_count", "whether the instances hold every copy")
        else:
            hosted = [*self.components, *([adding] if adding is not None else [])]
            for instance_type in self.instance_types:
                check_capacity(
                    instance_type,
                    self.max_instance_count,
                    self._demands(hosted, instance_type, path, copies),
                    prop=prop,
                    value=copies,
                    pool=len(self.instance_types) > 1,
                )
        if prop == "max_copies":
            self._most_copies[path] = copies
        elif prop == "max_capacity":
            # A scheduled maximum (scale_on_schedule's max_capacity) above max_copies lets the
            # component scale that far too: the most copies it may run is the higher of both.
            self._most_copies[path] = max(copies, self._most_copies.get(path, copies))

    def _demands(
        self,
        hosted: Sequence[IHostedComponent],
        instance_type: InstanceType,
        path: str,
        copies: int,
    ) -> list[CopyDemand]:
        """What each hosted component's most copies reserve on ``instance_type``, with
        ``copies`` for the one at ``path``."""
        demands = []
        for component in hosted:
            component_path = node_path(component)
            most = self._most_copies.get(component_path, component.copy_count)
            if component_path == path:
                most = copies
            if component.base_component or is_unresolved(most):
                continue
            accelerators, memory_mib = component.requirements_on(instance_type)
            # A pool's specification may reserve other cores than the component's resources.
            cores = component.cpu_cores_on(instance_type)
            demands.append(CopyDemand(component_path, most, accelerators, memory_mib, cores))
        return demands

    def check_scale_to_zero(self) -> bool:
        """Raise ValidationError unless managed instance scaling may release every instance;
        a token min_instance_count is not compared (noted for synth's info message)."""
        if is_unresolved(self.min_instance_count):
            note_unchecked(
                f"{self.node.path} min_instance_count", "that it is 0, as scaling to zero needs"
            )
            return True
        if self.min_instance_count != 0:
            raise ValidationError(
                "min_copies",
                0,
                "scale to zero needs the endpoint's managed instance scaling to allow 0 "
                f"instances, but {self.node.path} has min_instance_count={self.min_instance_count}",
                "give the InferenceComponentEndpoint "
                "instance_scaling=ManagedInstanceScaling(min_instance_count=0, ...), or "
                "min_copies >= 1",
            )
        return True

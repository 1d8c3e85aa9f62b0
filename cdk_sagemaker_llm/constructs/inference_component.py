"""Inference components: one model (or copies of it) on an inference-component endpoint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations, Duration, Size, Stack, Stage
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..catalog.containers import ContainerFamily, hub_token_variable, vllm_variable
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..planning.sizing import serving_facts
from ..prop_types import typed_props
from .component_options import (
    ComponentModel,
    ComponentScheduling,
    ComponentSpecification,
    CopyResources,
)
from .endpoint_base import INVOKE_ACTIONS, import_endpoint_by_name, sagemaker_metric
from .fit_check import check_fit
from .fixed_names import claim_fixed_name
from .images import ContainerImage
from .interfaces import IComponentHost, IEndpoint, IInferenceComponent
from .lora_adapters import LoraAdapters, LoraServer
from .model import (
    ModelBase,
    check_degree_on_accelerators,
    check_environment_lengths,
    check_image_on_instance,
    merge_environment,
)
from .model_source import BoundModelSource, ModelSource, ModelSourceKind
from .plan_metadata import add_plan_metadata
from .serving_options import MAX_LORA_RANKS
from .synth_cache import node_path, remember, unique_resource_name
from .validation import (
    ValidationError,
    arn_resource_name,
    check_range,
    check_sagemaker_name,
    is_unresolved,
    whole_mebibytes,
)
from .variant_options import ContainerStartup

if TYPE_CHECKING:  # imported where used: importing them costs synth time
    from aws_cdk import aws_cloudwatch as cloudwatch

    from ..planning.workload import Workload
    from .autoscaling import ComponentScaling
    from .deployment import RollingDeployment

__all__ = ["IInferenceComponent", "InferenceComponent", "InferenceComponentBase"]

MIN_MEMORY_MIB = 128


@typed_props
class InferenceComponentBase(Construct):
    """What every component offers: invoke grants and CloudWatch metrics."""

    inference_component_name: str
    inference_component_arn: str
    endpoint: IEndpoint

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke this component (plain and streaming) on its endpoint."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=INVOKE_ACTIONS,
            resource_arns=[self.endpoint.endpoint_arn, self.inference_component_arn],
        )

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = "AWS/SageMaker",
        statistic: str = "Sum",
        period: Duration = Duration.minutes(1),
    ) -> cloudwatch.Metric:
        """Any metric of this component (dimension ``InferenceComponentName``)."""
        dimensions = {"InferenceComponentName": self.inference_component_name}
        return sagemaker_metric(metric_name, dimensions, namespace, statistic, period)

    def metric_invocations(self) -> cloudwatch.Metric:
        """Requests sent to the component (Sum per minute)."""
        return self.metric("Invocations")

    def metric_model_latency(self) -> cloudwatch.Metric:
        """Time the container took to answer, in microseconds (p90 per minute)."""
        return self.metric("ModelLatency", statistic="p90")

    def metric_invocation_errors(self, *, status_class: str = "5XX") -> cloudwatch.Metric:
        """Requests that failed with a ``4XX`` or ``5XX`` status (Sum per minute)."""
        if status_class not in ("4XX", "5XX"):
            raise ValidationError(
                "status_class", status_class, "must be 4XX or 5XX", 'pass "4XX" or "5XX"'
            )
        return self.metric(f"Invocation{status_class}Errors")

    def metric_concurrent_requests(self) -> cloudwatch.Metric:
        """In-flight requests per copy, streaming included (high resolution, 10 s, Maximum)."""
        return self.metric(
            "ConcurrentRequestsPerCopy", statistic="Maximum", period=Duration.seconds(10)
        )

    def metric_no_capacity_failures(self) -> cloudwatch.Metric:
        """Requests refused because the component had no copy (Sum per minute)."""
        return self.metric("NoCapacityInvocationFailures")

    def metric_gpu_utilization(self) -> cloudwatch.Metric:
        """GPU utilization of the component's copies, normalized to 0-100 (Average)."""
        return self.metric(
            "GPUUtilizationNormalized",
            namespace="/aws/sagemaker/InferenceComponents",
            statistic="Average",
        )

    def auto_scale_copies(self, *, max_copies: int, min_copies: int = 1) -> ComponentScaling:
        """Scale this component's copies; add policies to the result (see ``ComponentScaling``)."""
        from .autoscaling import ComponentScaling

        return ComponentScaling(
            self, "CopyScaling", component=self, min_copies=min_copies, max_copies=max_copies
        )


class _ImportedInferenceComponent(InferenceComponentBase):
    def __init__(self, scope: Construct, id: str, *, name: str, endpoint: IEndpoint) -> None:
        super().__init__(scope, id)
        self.inference_component_name = name
        self.inference_component_arn = Stack.of(scope).format_arn(
            service="sagemaker",
            resource="inference-component",
            resource_name=arn_resource_name(name),
        )
        self.endpoint = endpoint


@typed_props
class InferenceComponent(InferenceComponentBase):
    """One inference component: a model, or a container + artifact, with its compute share.

    What it serves is a ``ComponentModel``: ``ComponentModel.of(model)``,
    ``ComponentModel.from_image(image, ...)``, or ``ComponentModel.lora_adapter(base, ...)``.
    The ``resources`` reserve accelerators, memory and CPU for each copy; they must fit on one
    instance of the endpoint's type. A LoRA adapter takes no resources: it shares its base's
    copies, and its base's LMI LoRA options are set or checked for it.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IComponentHost,
        serves: ComponentModel,
        resources: CopyResources | None = None,
        copy_count: int = 1,
        startup: ContainerStartup | None = None,
        data_cache: bool = False,
        scheduling: ComponentScheduling | None = None,
        specifications: Sequence[ComponentSpecification] | None = None,
        deployment: RollingDeployment | None = None,
        inference_component_name: str | None = None,
    ) -> None:
        """
        :param endpoint: the inference-component endpoint that hosts this component.
        :param serves: the Model, container image or LoRA adapter served (``ComponentModel``).
        :param resources: what each copy reserves (``CopyResources``; ``min_memory`` is
            required); none for an adapter.
        :param copy_count: copies at creation (at least 1; scale to zero later); default 1. An
            adapter takes none (nor startup or data_cache): it runs in its base's copies.
        :param startup: the container's health-check and download timeouts, 60-3600 s each;
            default the endpoint's.
        :param data_cache: cache the model artifacts on the instance so new copies start
            faster; default False.
        :param scheduling: how copies are placed (spread or bin-pack, availability-zone
            balance); default SageMaker's.
        :param specifications: on an endpoint with instance pools, what runs on each instance
            type (one per pool type, 2-5); default one specification for every type, checked
            on each.
        :param deployment: rolling update with alarm rollback for later changes; default
            SageMaker's.
        :param inference_component_name: default generated by CloudFormation.
        """
        super().__init__(scope, id)
        remember(self, scope, id)
        _check_creation(inference_component_name, copy_count, deployment)
        claim_fixed_name(
            self, "inference component", "inference_component_name", inference_component_name
        )
        self.deployment = deployment
        """The rolling deployment of later changes, if any."""
        self.endpoint = endpoint
        self.serves = serves
        """What the component serves."""
        self.model = serves.model
        """The model served, when given as a Model."""
        self.copy_count = copy_count
        """Copies at creation (on the whole endpoint)."""
        self.base_component = serves.base_component
        """The component this adapter runs in, or None."""
        self.min_memory_mib = 0
        """Host memory reserved per copy (MiB) on the first-priority instance type; 0 for an
        adapter."""
        self.cpu_cores = resources.cpu_cores if resources is not None else None
        """CPU cores reserved per copy (on the first-priority instance type), or None."""
        self._min_memory_mib_by_instance_type: dict[str, int] = {}
        self._cpu_cores_by_instance_type: dict[str, float | None] = {}
        self.lora_adapters: LoraAdapters | None = None
        """The adapter components attached to this one; None for an adapter."""
        self.image: ContainerImage | None = None
        """The container image the copies run (the Model's or the given one); None for an
        adapter."""
        self.accelerators = 0
        """Accelerators reserved per copy (on the first-priority instance type)."""
        self.accelerators_by_instance_type: dict[str, int] = {}
        """Accelerators reserved per copy, by instance type."""
        self.sized_for: Workload | None = None
        """The typical request the component was sized for (``LlmService`` sets its
        workload); a benchmark of the component without a workload sends it. None otherwise."""

        specification: (
            sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty | None
        )
        if serves.base_component is not None:
            _check_adapter(
                resources, scheduling, specifications, copy_count, startup, data_cache=data_cache
            )
            specification, specifications_prop = self._adapter(serves, endpoint), None
        else:
            specification, specifications_prop = self._served(
                endpoint,
                serves,
                resources or CopyResources(),
                {
                    "startup_parameters": _startup(startup),
                    "data_cache_config": _data_cache(data_cache),
                    "scheduling_config": scheduling.render("scheduling") if scheduling else None,
                },
                specifications,
            )
        self.resource = self._resource(
            inference_component_name, copy_count, specification, specifications_prop
        )
        _order_after_base(self, serves.base_component)
        self._register(endpoint, deployment, serves.model, serves.artifact)

    def _adapter(
        self, serves: ComponentModel, endpoint: IComponentHost
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty:
        """An adapter: its specification, checked against its base's LoRA options."""
        assert serves.base_component is not None and serves.artifact is not None
        specification = self._adapter_specification(
            serves.base_component, serves.artifact, endpoint
        )
        _attach_adapter(self, serves.base_component, serves.lora_rank)
        return specification

    def _served(
        self,
        endpoint: IComponentHost,
        serves: ComponentModel,
        resources: CopyResources,
        common: Mapping[str, Any],
        specifications: Sequence[ComponentSpecification] | None,
    ) -> tuple[
        sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty | None,
        list[sagemaker.CfnInferenceComponent.InferenceComponentSpecificationForInstanceTypeProperty]
        | None,
    ]:
        """A component with copies of its own: its container (when it runs an image), the
        compute requirements checked on each instance type, and its specification(s)."""
        model, image = serves.model, serves.image
        _check_served(model, specifications, endpoint)
        self.lora_adapters = LoraAdapters(self)
        self._serve_models_to_adapters(model, specifications)
        self.image = model.image if model is not None else image
        if image is not None and serves.serving is not None:
            serves.serving.validate(image)
        container = self._container(serves, image, endpoint) if image is not None else None
        entries = _entries(endpoint, specifications)
        compute = {
            instance_type.name: self._requirements(
                instance_type, entry, serves, resources, specified=bool(specifications)
            )
            for instance_type, entry in entries
        }
        first = endpoint.instance_type.name
        self.accelerators = self.accelerators_by_instance_type[first]
        self.min_memory_mib = self._min_memory_mib_by_instance_type[first]
        self.cpu_cores = self._cpu_cores_by_instance_type[first]
        return _specifications(
            model, container, compute, entries, common, endpoint.instance_type, specifications
        )

    def _register(
        self,
        endpoint: IComponentHost,
        deployment: RollingDeployment | None,
        model: ModelBase | None,
        artifact: ModelSource | None,
    ) -> None:
        """Join the endpoint, let the guardrails read their alarms, leave plan metadata, and
        expose the component's name and ARN."""
        self.inference_component_name = self._name
        endpoint.host(self)  # a whole IHostedComponent by now (its name and ARN set)
        if deployment is not None:
            # Guardrails read the rollback alarms with the execution role(s).
            model_role = model.role if model is not None else None
            deployment.grant_alarm_reads([endpoint.role, *([model_role] if model_role else [])])
        if model is None and self.image is not None:
            spec = ModelSpec.from_hugging_face_id(artifact.model_id if artifact else None)
            add_plan_metadata(self.resource, image=self.image, spec=spec)

    def requirements_on(self, instance_type: InstanceType) -> tuple[int, int]:
        """Accelerators and MiB of host memory each copy reserves on ``instance_type`` (its
        specification's, or the first-priority type's when it has none)."""
        return (
            self.accelerators_by_instance_type.get(instance_type.name, self.accelerators),
            self._min_memory_mib_by_instance_type.get(instance_type.name, self.min_memory_mib),
        )

    def cpu_cores_on(self, instance_type: InstanceType) -> float | None:
        """CPU cores each copy reserves on ``instance_type`` (its specification's, or the
        first-priority type's when it has none); None when it reserves no cores."""
        return self._cpu_cores_by_instance_type.get(instance_type.name, self.cpu_cores)

    def _adapter_specification(
        self, base_component: IInferenceComponent, artifact: ModelSource, endpoint: IComponentHost
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty:
        """An adapter's specification: its weights, run in its base component's copies."""
        return sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
            base_inference_component_name=base_component.inference_component_name,
            container=sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty(
                artifact_url=self._artifact_url(artifact, endpoint)
            ),
        )

    def _serve_models_to_adapters(
        self, model: ModelBase | None, specifications: Sequence[ComponentSpecification] | None
    ) -> None:
        """Register each Model this component serves with its LoRA adapters (their options
        are checked against a Model's environment, not set in it)."""
        assert self.lora_adapters is not None
        served_models = [model] + [entry.model for entry in specifications or []]
        for served_model in dict.fromkeys(m for m in served_models if m is not None):
            self.lora_adapters.serve(
                LoraServer(
                    node_path(served_model),
                    served_model.image,
                    served_model.environment,
                    settable=False,
                )
            )

    def _resource(
        self,
        inference_component_name: str | None,
        copy_count: int,
        specification: sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty
        | None,
        specifications: list[
            sagemaker.CfnInferenceComponent.InferenceComponentSpecificationForInstanceTypeProperty
        ]
        | None,
    ) -> sagemaker.CfnInferenceComponent:
        """The ``AWS::SageMaker::InferenceComponent``."""
        # A name known at synth time lets scaling policies and metrics refer to it directly.
        self._name = inference_component_name or unique_resource_name(
            self, max_length=63, separator="-"
        )
        return sagemaker.CfnInferenceComponent(
            self,
            "Resource",
            endpoint_name=self.endpoint.endpoint_name,
            variant_name=self.endpoint.default_variant_name,
            inference_component_name=self._name,
            specification=specification,
            specifications=specifications,
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=copy_count
            )
            if self.base_component is None
            else None,
            deployment_config=self.deployment.for_component() if self.deployment else None,
        )

    @cached_property
    def inference_component_arn(self) -> str:  # type: ignore[override]
        """The component's ARN (read from the template on first use: a jsii round trip that
        most stacks never need)."""
        return self.resource.attr_inference_component_arn

    @property
    def container_caching_eligible(self) -> bool:
        """True when SageMaker container caching speeds up new copies of this component."""
        return self.image is not None and self.image.container_caching_eligible

    @staticmethod
    def from_inference_component_name(
        scope: Construct, id: str, *, inference_component_name: str, endpoint_name: str
    ) -> InferenceComponentBase:
        """An existing component by name, on an existing endpoint by name."""
        check_sagemaker_name("inference_component_name", inference_component_name)
        endpoint = import_endpoint_by_name(scope, f"{id}Endpoint", endpoint_name)
        return _ImportedInferenceComponent(
            scope, id, name=inference_component_name, endpoint=endpoint
        )

    def _container(
        self, serves: ComponentModel, image: ContainerImage, endpoint: IComponentHost
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty:
        artifact, environment = serves.artifact, serves.environment
        rendered: dict[str, str] = {}
        artifact_url = None
        if artifact is not None:
            if endpoint.network_isolation and artifact.needs_internet:
                raise ValidationError(
                    "serves.artifact",
                    artifact.model_id,
                    "the endpoint isolates containers from the network, so a Hugging Face "
                    "model cannot be downloaded",
                    "use an S3 tarball artifact, or create the endpoint without "
                    "networking.network_isolation",
                )
            bound = self._container_source(artifact, endpoint, image)
            artifact_url = bound.model_data_url
            rendered.update(bound.environment)
        if serves.serving is not None:
            rendered.update(serves.serving.environment(image))
        merged = merge_environment(rendered, environment, "serves.environment")
        _check_environment_entries(merged, environment)
        check_environment_lengths(merged, "serves.environment")
        assert self.lora_adapters is not None
        metrics = serves.container_metrics
        return sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty(
            image=image.bind(self, endpoint.role),
            artifact_url=artifact_url,
            # Lazy: adapters attached later may add LMI's LoRA options (lora_adapters.py).
            environment=self.lora_adapters.serve(LoraServer("image", image, merged, True)),
            container_metrics_config=metrics.render("serves.container_metrics")
            if metrics
            else None,
        )

    def _requirements(
        self,
        instance_type: InstanceType,
        entry: ComponentSpecification | None,
        serves: ComponentModel,
        resources: CopyResources,
        *,
        specified: bool,
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty:
        """Check that a copy fits on one ``instance_type`` (accelerator kind, tensor-parallel
        degree, model size, memory, vCPUs), with the values of its specification ``entry``
        first; record and return its compute requirements."""
        prop = (
            f"specifications[{instance_type.name}]"
            if specified
            else f"resources.accelerators (on {instance_type.name})"
        )
        model, image, serving = serves.model, serves.image, serves.serving
        accelerators, min_memory = resources.accelerators, resources.min_memory
        max_memory, cpu_cores = resources.max_memory, resources.cpu_cores
        if entry is not None:
            model = entry.model or model
            accelerators = entry.accelerators or accelerators
            min_memory = entry.min_memory or min_memory
            max_memory = entry.max_memory or max_memory
            cpu_cores = entry.cpu_cores or cpu_cores
        if model is not None:
            image = None
        per_copy = serving.accelerators_per_copy if serving and image is not None else None
        if model is not None and model.serving is not None:
            per_copy = model.serving.accelerators_per_copy
        # A degree stated only in the container's raw environment shards the copy as well.
        stated = (
            _environment_degree(model.image, model.environment)
            if model is not None
            else _environment_degree(image, serves.environment)
        )
        if per_copy is None and stated is not None:
            per_copy = stated[1]
        else:
            stated = None
        reserved = _accelerators(
            accelerators,
            # The degree counts NeuronCores on Neuron: its chips are what a copy reserves.
            instance_type.devices_for_degree(per_copy) if per_copy else per_copy,
            instance_type.accelerator_count,
        )
        self.accelerators_by_instance_type[instance_type.name] = reserved
        if stated is not None and instance_type.accelerator_count:
            variable, stated_degree = stated
            check_degree_on_accelerators(
                stated_degree,
                reserved,
                instance_type,
                "resources.accelerators" if not specified else prop,
                f"{'model' if model is not None else 'serves'}.environment['{variable}']",
            )
        if model is not None:
            if model.image is not None and not specified:
                # The model's image against the endpoint's type, named as the image path is.
                check_image_on_instance(model.image, instance_type, "endpoint.instance_type")
            model.check_placement(instance_type, reserved or None, prop)
        elif image is not None:
            check_image_on_instance(image, instance_type, "endpoint.instance_type")
            degree = serving.accelerators_per_copy if serving else None
            ranks = reserved * instance_type.tensor_parallel_ranks_per_device
            if degree is not None and degree > ranks:
                needed = instance_type.devices_for_degree(degree)
                cores = f" ({ranks} NeuronCores)" if instance_type.is_neuron else ""
                raise ValidationError(
                    "serves.serving.tensor_parallel_degree",
                    degree,
                    f"shards each copy over {degree} "
                    f"{'NeuronCores' if instance_type.is_neuron else 'accelerators'} but the "
                    f"component reserves {reserved}{cores} on {instance_type.name}",
                    f"set resources.accelerators to {needed} or lower the tensor-parallel degree",
                )
            check_fit(
                self,
                spec=ModelSpec.from_hugging_face_id(
                    serves.artifact.model_id if serves.artifact else None
                ),
                environment={
                    **(serving.environment(image) if serving else {}),
                    **(serves.environment or {}),
                },
                instance_type=instance_type,
                accelerators=reserved or None,
                prop=prop,
                engine=image.engine_profile.name,
            )
        min_mib, max_mib = _memory(min_memory, max_memory, instance_type.memory_mib)
        self._min_memory_mib_by_instance_type[instance_type.name] = min_mib
        self._cpu_cores_by_instance_type[instance_type.name] = cpu_cores
        _check_fit(reserved, cpu_cores, instance_type)
        return (
            sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
                number_of_accelerator_devices_required=reserved or None,
                min_memory_required_in_mb=min_mib,
                max_memory_required_in_mb=max_mib,
                number_of_cpu_cores_required=cpu_cores,
            )
        )

    @staticmethod
    def _container_source(
        artifact: ModelSource, endpoint: IComponentHost, image: ContainerImage
    ) -> BoundModelSource:
        """A component container's artifact bound to the endpoint's role: a ``.tar.gz`` (its
        URL, and ``HF_MODEL_ID`` pointing at where SageMaker unpacks it) or a Hub id."""
        if artifact.kind not in (ModelSourceKind.HUGGING_FACE, ModelSourceKind.S3_TARBALL):
            raise ValidationError(
                "serves.artifact",
                artifact.s3_uri,
                "a component's container takes a .tar.gz artifact or a Hugging Face id, not an "
                "S3 prefix of uncompressed weights",
                "wrap the prefix in a Model: serves=ComponentModel.of(Model(..., "
                "source=ModelSource.from_s3(...)))",
            )
        token_variable = hub_token_variable(image.family, image.release)
        return artifact.bind(endpoint.role, token_variable=token_variable)

    @staticmethod
    def _artifact_url(artifact: ModelSource, endpoint: IComponentHost) -> str:
        if artifact.kind is not ModelSourceKind.S3_TARBALL:
            raise ValidationError(
                "serves.artifact",
                artifact.s3_uri or artifact.model_id,
                "an adapter's artifact must be an S3 .tar.gz archive",
                "use ModelSource.from_s3_tarball(bucket, key)",
            )
        bound = artifact.bind(endpoint.role)
        assert bound.model_data_url is not None
        return bound.model_data_url


def _entries(
    endpoint: IComponentHost,
    specifications: Sequence[ComponentSpecification] | None,
) -> list[tuple[InstanceType, ComponentSpecification | None]]:
    """The instance types a component is placed on, each with its own specification if any."""
    if specifications is None:
        return [(instance_type, None) for instance_type in endpoint.instance_types]
    endpoint_types = [instance_type.name for instance_type in endpoint.instance_types]
    names = [entry.instance_type.name for entry in specifications]
    if len(endpoint_types) < 2:
        raise ValidationError(
            "specifications",
            names,
            "per-instance-type specifications are for endpoints with instance pools, and this "
            f"endpoint has one instance type ({endpoint_types[0]})",
            "drop specifications (set the requirements on the component), or give the "
            "endpoint instance_pools",
        )
    if sorted(names) != sorted(endpoint_types):
        raise ValidationError(
            "specifications[].instance_type",
            names,
            f"needs exactly one specification per instance type of the endpoint "
            f"({endpoint_types}); copies placed on a type without one could not start",
            "give one ComponentSpecification per pool instance type, or drop specifications",
        )
    by_name = {entry.instance_type.name: entry for entry in specifications}
    return [
        (instance_type, by_name[instance_type.name]) for instance_type in endpoint.instance_types
    ]


def _for_instance_type(
    container: sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty
    | None,
) -> (
    sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationForInstanceTypeProperty
    | None
):
    """The same container, as the per-instance-type L1 property (which has no DeployedImage)."""
    if container is None:
        return None
    l1 = sagemaker.CfnInferenceComponent
    return l1.InferenceComponentContainerSpecificationForInstanceTypeProperty(
        image=container.image,
        artifact_url=container.artifact_url,
        environment=container.environment,
        container_metrics_config=container.container_metrics_config,
    )


def _data_cache(
    enabled: bool,
) -> sagemaker.CfnInferenceComponent.InferenceComponentDataCacheConfigProperty | None:
    if not enabled:
        return None
    return sagemaker.CfnInferenceComponent.InferenceComponentDataCacheConfigProperty(
        enable_caching=True
    )


def _check_creation(
    inference_component_name: str | None, copy_count: int, deployment: RollingDeployment | None
) -> None:
    check_sagemaker_name("inference_component_name", inference_component_name)
    if not is_unresolved(copy_count) and (not isinstance(copy_count, int) or copy_count < 1):
        raise ValidationError(
            "copy_count",
            copy_count,
            "SageMaker refuses to create a component with fewer than 1 copy",
            "create with copy_count >= 1 and let a scaling policy (min_copies=0) scale to zero",
        )
    if deployment is not None:
        deployment.validate("deployment")
        deployment.check_batch_size("deployment", copy_count, "copy count", "copy_count")


MAX_ENVIRONMENT_ENTRIES = 16
"""SageMaker API reference, ``InferenceComponentContainerSpecification.Environment``: "We
support up to 16 entries in the map" (botocore's shape allows 100, so schema checks pass)."""


def _check_environment_entries(merged: Mapping[str, str], given: Mapping[str, str] | None) -> None:
    """A component's own container takes at most ``MAX_ENVIRONMENT_ENTRIES`` variables, those
    the library derives (serving options, the Hugging Face source) included."""
    if len(merged) <= MAX_ENVIRONMENT_ENTRIES:
        return
    derived = len(merged) - len(given or {})
    raise ValidationError(
        "serves.environment",
        f"{len(merged)} entries ({len(given or {})} given, {derived} from serving/artifact)",
        f"an inference component's container takes at most {MAX_ENVIRONMENT_ENTRIES} "
        "environment entries (SageMaker API reference, InferenceComponentContainerSpecification)",
        "drop the variables the container does not need, or serve a Model "
        "(serves=ComponentModel.of(model)), whose container takes more",
    )


def _check_served(
    model: ModelBase | None,
    specifications: Sequence[ComponentSpecification] | None,
    endpoint: IComponentHost,
) -> None:
    """The models a component with copies of its own serves take no provider draft, and
    download nothing on an endpoint that isolates its containers from the network."""
    for served in [model] + [entry.model for entry in specifications or []]:
        source = served.source if served is not None else None
        if endpoint.network_isolation and source is not None and source.needs_internet:
            raise ValidationError(
                "serves",
                f"ComponentModel.of({served.node.path})" if served is not None else None,
                "the endpoint isolates containers from the network, and the model's Hugging "
                f"Face source ({source.model_id}) is downloaded at start",
                "load the weights from S3 (ModelSource.from_s3), or create the endpoint "
                "without networking.network_isolation",
            )
        draft = served.speculative_decoding if served is not None else None
        if draft is not None and draft.is_provider_draft:
            raise ValidationError(
                "model.speculative_decoding",
                "provider_draft()",
                "SageMaker's own draft model is not supported on inference components",
                "use your own draft (SpeculativeDecoding.from_s3 or .from_hugging_face), "
                "or serve the model on a single-model Endpoint",
            )


def _specifications(
    model: ModelBase | None,
    container: sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty
    | None,
    compute: Mapping[
        str, sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty
    ],
    entries: list[tuple[InstanceType, ComponentSpecification | None]],
    common: Mapping[str, Any],
    first: InstanceType,
    specifications: Sequence[ComponentSpecification] | None,
) -> tuple[
    sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty | None,
    list[sagemaker.CfnInferenceComponent.InferenceComponentSpecificationForInstanceTypeProperty]
    | None,
]:
    """The L1 ``Specification`` (one for every instance type), or else the per-instance-type
    ``Specifications``."""
    l1 = sagemaker.CfnInferenceComponent
    if specifications is None:
        return l1.InferenceComponentSpecificationProperty(
            model_name=model.model_name if model is not None else None,
            container=container,
            compute_resource_requirements=compute[first.name],
            **common,
        ), None
    per_instance_type = []
    for instance_type, entry in entries:
        entry_model = entry.model if entry and entry.model else model
        per_instance_type.append(
            l1.InferenceComponentSpecificationForInstanceTypeProperty(
                instance_type=instance_type.name,
                model_name=entry_model.model_name if entry_model else None,
                container=_for_instance_type(container) if entry_model is None else None,
                compute_resource_requirements=compute[instance_type.name],
                **common,
            )
        )
    return None, per_instance_type


def _check_adapter(
    resources: CopyResources | None,
    scheduling: ComponentScheduling | None,
    specifications: Sequence[ComponentSpecification] | None,
    copy_count: int,
    startup: ContainerStartup | None,
    *,
    data_cache: bool,
) -> None:
    """An adapter's specification is its base's name and its weights (SageMaker developer
    guide, "Fine-tune models with adapter inference components"): it has no RuntimeConfig, no
    container of its own to start and no artifacts to cache, so those props would be dropped."""
    if resources is not None:
        raise ValidationError(
            "resources",
            "given with ComponentModel.lora_adapter",
            "an adapter shares its base component's compute and takes no requirements",
            "drop resources from the adapter",
        )
    if scheduling or specifications:
        raise ValidationError(
            "scheduling/specifications",
            "given with ComponentModel.lora_adapter",
            "an adapter has no copies of its own",
            "set them on the base component",
        )
    if copy_count != 1 and not is_unresolved(copy_count):
        raise ValidationError(
            "copy_count",
            copy_count,
            "an adapter has no copies of its own: it runs in every copy of its base component",
            "drop copy_count from the adapter and set it (or its scaling) on the base component",
        )
    if startup is not None or data_cache:
        raise ValidationError(
            "startup/data_cache",
            "given with ComponentModel.lora_adapter",
            "an adapter starts no container of its own: it is loaded into its base component's",
            "drop them from the adapter and set them on the base component",
        )


def _attach_adapter(
    adapter: InferenceComponent, base: IInferenceComponent, lora_rank: int | None
) -> None:
    """Check the adapter against its base's LoRA options (and let them grow to fit it)."""
    if isinstance(base, InferenceComponent):
        if base.lora_adapters is None:
            raise ValidationError(
                "base_component",
                base.node.path,
                "is itself an adapter; an adapter's base serves a model",
                "pass the component that serves the base model",
            )
        base.lora_adapters.attach(adapter, lora_rank)
        return
    check_range("lora_rank", lora_rank, minimum=1, maximum=MAX_LORA_RANKS[-1])
    Annotations.of(adapter).add_info(
        f"LoRA options of the imported base component {base.inference_component_name} not "
        "checked: its container is unknown."
    )


def _order_after_base(adapter: InferenceComponent, base: IInferenceComponent | None) -> None:
    """Create an adapter after its base and delete it before (SageMaker developer guide,
    "Fine-tune models with adapter inference components": the base component must exist when
    the adapter is created, and its adapters must be gone before it is deleted). The base's
    name is a literal, so the template has no reference that would order them; a base in
    another stack of the same stage orders the stacks (CDK adds the stack dependency); an
    imported base is already there."""
    if not isinstance(base, InferenceComponent):
        return
    if Stage.of(adapter) is not Stage.of(base):
        raise ValidationError(
            "base_component",
            base.node.path,
            "is in another stage (cloud assembly) than the adapter, so CloudFormation cannot "
            "order the adapter after it",
            "put the adapter in the base's stage, or import the base with "
            "InferenceComponent.from_inference_component_name(...) and deploy it first",
        )
    adapter.resource.node.add_dependency(base.resource)


TENSOR_PARALLEL_VARIABLES = (
    "OPTION_TENSOR_PARALLEL_DEGREE",
    "SM_NUM_GPUS",
    vllm_variable("tensor-parallel-size"),
)
"""The variables that shard a copy: LMI's, TGI's and SageMaker vLLM's, in the order
``planning.sizing.serving_facts`` (the fit check) reads them."""


def _environment_degree(
    image: ContainerImage | None, environment: Mapping[str, str] | None
) -> tuple[str, int] | None:
    """The variable and tensor-parallel degree a container's environment states as a literal
    number (as the fit check reads it), or None. TGI on Neuron reads none of them (its cores
    are ``HF_NUM_CORES``, which ``Model.check_placement`` checks)."""
    if not environment or (image is not None and image.family is ContainerFamily.TGI_NEURONX):
        return None
    degree = serving_facts(environment).tensor_parallel_degree
    if degree is None:
        return None
    variable = next(
        (name for name in TENSOR_PARALLEL_VARIABLES if _literal(environment.get(name)) == degree),
        TENSOR_PARALLEL_VARIABLES[0],
    )
    return variable, degree


def _literal(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _accelerators(requested: int | None, per_copy: int | None, available: int | None) -> int:
    if requested is None:
        if available == 0:
            return 0
        if available is None:  # accelerators unknown: only what the serving options state
            return per_copy or 0
        return per_copy or 1
    check_range(
        "resources.accelerators",
        requested,
        minimum=1,
        fix="reserve at least 1 accelerator per copy",
    )
    return requested


def _memory(
    min_memory: Size | None, max_memory: Size | None, instance_mib: int | None
) -> tuple[int, int | None]:
    if min_memory is None:
        hint = f" (one instance has {instance_mib} MiB)" if instance_mib else ""
        raise ValidationError(
            "resources.min_memory",
            None,
            "SageMaker needs the host memory each copy reserves",
            f"pass resources=CopyResources(min_memory=Size.gibibytes(N)){hint}",
        )
    min_mib = whole_mebibytes("resources.min_memory", min_memory)
    check_range("resources.min_memory (MiB)", min_mib, minimum=MIN_MEMORY_MIB)
    if instance_mib is not None and min_mib > instance_mib:
        raise ValidationError(
            "resources.min_memory (MiB)",
            min_mib,
            f"exceeds the host memory of one instance ({instance_mib} MiB)",
            "lower min_memory or use a larger instance type",
        )
    max_mib = (
        whole_mebibytes("resources.max_memory", max_memory) if max_memory is not None else None
    )
    if max_mib is not None and max_mib < min_mib:
        raise ValidationError(
            "resources.max_memory (MiB)",
            max_mib,
            f"is below min_memory ({min_mib} MiB)",
            "raise max_memory",
        )
    return min_mib, max_mib


def _check_fit(accelerators: int, cpu_cores: float | None, instance_type: InstanceType) -> None:
    if (
        instance_type.accelerator_count is not None
        and accelerators > instance_type.accelerator_count
    ):
        raise ValidationError(
            "resources.accelerators",
            accelerators,
            f"one copy must fit on one instance, and {instance_type.name} has "
            f"{instance_type.accelerator_count} accelerators",
            f"reserve at most {instance_type.accelerator_count} accelerators per copy, or use an "
            "instance type with more",
        )
    check_range("resources.cpu_cores", cpu_cores, minimum=0.25)
    if (
        cpu_cores is not None
        and instance_type.vcpus is not None
        and cpu_cores > instance_type.vcpus
    ):
        raise ValidationError(
            "resources.cpu_cores",
            cpu_cores,
            f"exceeds the {instance_type.vcpus} vCPUs of one {instance_type.name}",
            "lower cpu_cores or use a larger instance type",
        )


def _startup(
    startup: ContainerStartup | None,
) -> sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty | None:
    if startup is None:
        return None
    health_check, download = startup.seconds("startup")
    if health_check is None and download is None:
        return None
    return sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty(
        container_startup_health_check_timeout_in_seconds=health_check,
        model_data_download_timeout_in_seconds=download,
    )

"""Inference components: one model (or copies of it) on an inference-component endpoint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations, Duration, Names, Size, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..prop_types import typed_props
from .component_options import ComponentScheduling, ComponentSpecification, ContainerMetrics
from .deployment import RollingDeployment
from .endpoint_base import INVOKE_ACTIONS, import_endpoint_by_name
from .fit_check import check_fit
from .images import ContainerImage
from .interfaces import IComponentHost, IEndpoint, IInferenceComponent
from .lora_adapters import LoraAdapters, LoraServer
from .model import ModelBase, check_image_on_instance, merge_environment
from .model_source import ModelSource, ModelSourceKind
from .plan_metadata import add_plan_metadata
from .serving_options import MAX_LORA_RANKS, ServingOptions
from .synth_cache import node_path, remember
from .validation import ValidationError, check_range, check_sagemaker_name, is_unresolved

if TYPE_CHECKING:  # imported where used: importing them costs synth time
    from aws_cdk import aws_cloudwatch as cloudwatch

    from .autoscaling import ComponentScaling

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
        from aws_cdk import aws_cloudwatch as cloudwatch

        return cloudwatch.Metric(
            namespace=namespace,
            metric_name=metric_name,
            dimensions_map={"InferenceComponentName": self.inference_component_name},
            statistic=statistic,
            period=period,
        )

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
            service="sagemaker", resource="inference-component", resource_name=name.lower()
        )
        self.endpoint = endpoint


@typed_props
class InferenceComponent(InferenceComponentBase):
    """One inference component: a model, or a container + artifact, with its compute share.

    The compute requirements reserve accelerators, memory and CPU for each copy; they must fit
    on one instance of the endpoint's type. For LoRA adapters, pass ``base_component``, an
    ``artifact`` and the adapter's ``lora_rank``, and no compute requirements: the adapter
    shares its base's copies, and its base's LMI LoRA options are set or checked for it.
    """

    def __init__(  # noqa: PLR0913 - known offender (issue 18 item 5): group the props
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IComponentHost,
        model: ModelBase | None = None,
        image: ContainerImage | None = None,
        artifact: ModelSource | None = None,
        serving: ServingOptions | None = None,
        environment: Mapping[str, str] | None = None,
        accelerators: int | None = None,
        min_memory: Size | None = None,
        max_memory: Size | None = None,
        cpu_cores: float | None = None,
        copy_count: int = 1,
        container_startup_health_check_timeout: Duration | None = None,
        model_data_download_timeout: Duration | None = None,
        data_cache: bool = False,
        base_component: IInferenceComponent | None = None,
        deployment: RollingDeployment | None = None,
        inference_component_name: str | None = None,
        scheduling: ComponentScheduling | None = None,
        container_metrics: ContainerMetrics | None = None,
        specifications: Sequence[ComponentSpecification] | None = None,
        lora_rank: int | None = None,
    ) -> None:
        """
        :param endpoint: the inference-component endpoint that hosts this component.
        :param model: the model served; or give ``image`` (+ ``artifact``) instead.
        :param image: a container to run directly, pulled with the endpoint's role.
        :param artifact: with ``image`` or ``base_component``: a Hugging Face id or an S3
            ``.tar.gz`` (for adapters, the adapter weights).
        :param serving: with ``image``: typed serving options; default none.
        :param environment: with ``image``: extra container variables; default none.
        :param accelerators: accelerators per copy; default the model's tensor-parallel degree,
            or 1 on accelerated instances.
        :param min_memory: host memory reserved per copy (at least 128 MiB); required.
        :param max_memory: host memory limit per copy; default none.
        :param cpu_cores: CPU cores reserved per copy (at least 0.25); default none.
        :param copy_count: copies at creation (at least 1; scale to zero later); default 1.
        :param container_startup_health_check_timeout: 60-3600 s; default the endpoint's.
        :param model_data_download_timeout: 60-3600 s; default the endpoint's.
        :param data_cache: cache the model artifacts on the instance so new copies start
            faster; default False.
        :param base_component: makes this an adapter of that component.
        :param deployment: rolling update with alarm rollback for later changes; default
            SageMaker's.
        :param inference_component_name: default generated by CloudFormation.
        :param scheduling: how copies are placed (spread or bin-pack, availability-zone
            balance); default SageMaker's.
        :param container_metrics: publish the container's Prometheus metrics to CloudWatch;
            with ``image`` only (a Model-based component defines no container); default off.
        :param specifications: on an endpoint with instance pools, what runs on each instance
            type (one per pool type, 2-5); default one specification for every type, checked
            on each.
        :param lora_rank: with ``base_component``: the adapter's LoRA rank (``r`` in its
            ``adapter_config.json``), 1-512; required when the base runs LMI, whose LoRA
            options are set and checked against every adapter (see ``LmiLora``).
        """
        super().__init__(scope, id)
        remember(self, scope, id)
        _check_creation(inference_component_name, copy_count, deployment)
        self.deployment = deployment
        """The rolling deployment of later changes, if any."""
        self.endpoint = endpoint
        self.model = model
        """The model served, when given as a Model."""
        self.copy_count = copy_count
        """Copies at creation (on the whole endpoint)."""
        self.base_component = base_component
        """The component this adapter runs in, or None."""
        self.min_memory_mib = 0
        """Host memory reserved per copy (MiB) on the first-priority instance type; 0 for an
        adapter."""
        self.cpu_cores = cpu_cores
        """CPU cores reserved per copy, or None."""
        self._min_memory_mib_by_instance_type: dict[str, int] = {}
        self.lora_adapters: LoraAdapters | None = None
        """The adapter components attached to this one; None for an adapter."""

        specifications_prop = None
        if base_component is not None:
            _check_adapter(
                model,
                image,
                artifact,
                accelerators,
                min_memory,
                max_memory,
                cpu_cores,
                scheduling,
                container_metrics,
                specifications,
            )
            assert artifact is not None
            self.image: ContainerImage | None = None
            self.accelerators = 0
            self.accelerators_by_instance_type: dict[str, int] = {}
            specification: (
                sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty | None
            ) = self._adapter_specification(base_component, artifact, endpoint)
            _attach_adapter(self, base_component, lora_rank)
        else:
            _check_served(
                model,
                image,
                artifact,
                serving,
                environment,
                container_metrics,
                specifications,
                lora_rank,
            )
            self.lora_adapters = LoraAdapters(self)
            self._serve_models_to_adapters(model, specifications)
            self.image = model.image if model is not None else image
            if image is not None and serving is not None:
                serving.validate(image)
            container = (
                self._container(image, artifact, serving, environment, endpoint, container_metrics)
                if image is not None
                else None
            )
            entries = _entries(endpoint, specifications)
            self.accelerators_by_instance_type = {}
            """Accelerators reserved per copy, by instance type."""
            compute = {
                instance_type.name: self._requirements(
                    instance_type,
                    entry,
                    model=model,
                    image=image,
                    artifact=artifact,
                    serving=serving,
                    environment=environment,
                    accelerators=accelerators,
                    min_memory=min_memory,
                    max_memory=max_memory,
                    cpu_cores=cpu_cores,
                    specified=bool(specifications),
                )
                for instance_type, entry in entries
            }
            self.accelerators = self.accelerators_by_instance_type[endpoint.instance_type.name]
            """Accelerators reserved per copy (on the first-priority instance type)."""
            self.min_memory_mib = self._min_memory_mib_by_instance_type[endpoint.instance_type.name]
            common: dict[str, Any] = {
                "startup_parameters": _startup(
                    container_startup_health_check_timeout, model_data_download_timeout
                ),
                "data_cache_config": _data_cache(data_cache),
                "scheduling_config": scheduling.render("scheduling") if scheduling else None,
            }
            specification, specifications_prop = _specifications(
                model, container, compute, entries, common, endpoint.instance_type, specifications
            )

        self.resource = self._resource(
            inference_component_name, copy_count, specification, specifications_prop
        )
        self._register(endpoint, deployment, model, artifact)

    def _register(
        self,
        endpoint: IComponentHost,
        deployment: RollingDeployment | None,
        model: ModelBase | None,
        artifact: ModelSource | None,
    ) -> None:
        """Join the endpoint, let the guardrails read their alarms, leave plan metadata, and
        expose the component's name and ARN."""
        self.inference_component_name = self.resource.inference_component_name or ""
        self.inference_component_arn = self.resource.attr_inference_component_arn
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
        return sagemaker.CfnInferenceComponent(
            self,
            "Resource",
            endpoint_name=self.endpoint.endpoint_name,
            variant_name=self.endpoint.default_variant_name,
            # A name known at synth time lets scaling policies and metrics refer to it directly.
            inference_component_name=inference_component_name
            or Names.unique_resource_name(self, max_length=63, separator="-"),
            specification=specification,
            specifications=specifications,
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=copy_count
            )
            if self.base_component is None
            else None,
            deployment_config=self.deployment.for_component() if self.deployment else None,
        )

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
        self,
        image: ContainerImage,
        artifact: ModelSource | None,
        serving: ServingOptions | None,
        environment: Mapping[str, str] | None,
        endpoint: IComponentHost,
        metrics: ContainerMetrics | None = None,
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty:
        rendered: dict[str, str] = {}
        artifact_url = None
        if artifact is not None:
            if endpoint.network_isolation and artifact.needs_internet:
                raise ValidationError(
                    "artifact",
                    artifact.model_id,
                    "the endpoint isolates containers from the network, so a Hugging Face "
                    "model cannot be downloaded",
                    "use an S3 tarball artifact, or create the endpoint without network_isolation",
                )
            if artifact.kind is ModelSourceKind.S3_TARBALL:
                artifact_url = self._artifact_url(artifact, endpoint)
            else:
                rendered.update(self._hugging_face_environment(artifact, endpoint))
        if serving is not None:
            rendered.update(serving.environment())
        merged = merge_environment(rendered, environment, "environment")
        _check_environment_entries(merged, environment)
        assert self.lora_adapters is not None
        return sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty(
            image=image.bind(self, endpoint.role),
            artifact_url=artifact_url,
            # Lazy: adapters attached later may add LMI's LoRA options (lora_adapters.py).
            environment=self.lora_adapters.serve(LoraServer("image", image, merged, True)),
            container_metrics_config=metrics.render("container_metrics") if metrics else None,
        )

    def _requirements(
        self,
        instance_type: InstanceType,
        entry: ComponentSpecification | None,
        *,
        model: ModelBase | None,
        image: ContainerImage | None,
        artifact: ModelSource | None,
        serving: ServingOptions | None,
        environment: Mapping[str, str] | None,
        accelerators: int | None,
        min_memory: Size | None,
        max_memory: Size | None,
        cpu_cores: float | None,
        specified: bool,
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty:
        """Check that a copy fits on one ``instance_type`` (accelerator kind, tensor-parallel
        degree, model size, memory, vCPUs), with the values of its specification ``entry``
        first; record and return its compute requirements."""
        prop = (
            f"specifications[{instance_type.name}]"
            if specified
            else f"accelerators (on {instance_type.name})"
        )
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
        reserved = _accelerators(accelerators, per_copy, instance_type.accelerator_count)
        self.accelerators_by_instance_type[instance_type.name] = reserved
        if model is not None:
            model.check_placement(instance_type, reserved or None, prop)
        elif image is not None:
            check_image_on_instance(image, instance_type, "endpoint.instance_type")
            degree = serving.accelerators_per_copy if serving else None
            if degree is not None and degree > reserved:
                raise ValidationError(
                    "serving.tensor_parallel_degree",
                    degree,
                    f"shards each copy over {degree} accelerators but the component "
                    f"reserves {reserved} on {instance_type.name}",
                    f"set accelerators to {degree} or lower the tensor-parallel degree",
                )
            check_fit(
                self,
                spec=ModelSpec.from_hugging_face_id(artifact.model_id if artifact else None),
                environment={**(serving.environment() if serving else {}), **(environment or {})},
                instance_type=instance_type,
                accelerators=reserved or None,
                prop=prop,
            )
        min_mib, max_mib = _memory(min_memory, max_memory, instance_type.memory_mib)
        self._min_memory_mib_by_instance_type[instance_type.name] = min_mib
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
    def _hugging_face_environment(
        artifact: ModelSource, endpoint: IComponentHost
    ) -> dict[str, str]:
        if artifact.kind is not ModelSourceKind.HUGGING_FACE:
            raise ValidationError(
                "artifact",
                artifact.s3_uri,
                "a component's container takes a .tar.gz artifact or a Hugging Face id, not an "
                "S3 prefix of uncompressed weights",
                "wrap the prefix in a Model (model=Model(..., source=ModelSource.from_s3(...)))",
            )
        return artifact.bind(endpoint.role).environment

    @staticmethod
    def _artifact_url(artifact: ModelSource, endpoint: IComponentHost) -> str:
        if artifact.kind is not ModelSourceKind.S3_TARBALL:
            raise ValidationError(
                "artifact",
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
        "environment",
        f"{len(merged)} entries ({len(given or {})} given, {derived} from serving/artifact)",
        f"an inference component's container takes at most {MAX_ENVIRONMENT_ENTRIES} "
        "environment entries (SageMaker API reference, InferenceComponentContainerSpecification)",
        "drop the variables the container does not need, or serve a Model (model=...), whose "
        "container takes more",
    )


def _check_served(
    model: ModelBase | None,
    image: ContainerImage | None,
    artifact: ModelSource | None,
    serving: ServingOptions | None,
    environment: Mapping[str, str] | None,
    container_metrics: ContainerMetrics | None,
    specifications: Sequence[ComponentSpecification] | None,
    lora_rank: int | None,
) -> None:
    """What a component with copies of its own serves: a Model or an image, not both."""
    if lora_rank is not None:
        raise ValidationError(
            "lora_rank",
            lora_rank,
            "is the rank of an adapter, and this component has no base_component",
            "drop lora_rank, or pass base_component to make this an adapter",
        )
    if (model is None) == (image is None):
        raise ValidationError(
            "model/image",
            (model, image),
            "a component runs exactly one of a Model or a container image",
            "pass model=Model(...) or image=ContainerImage.<family>(...), not both",
        )
    if model is not None and container_metrics is not None:
        # ContainerMetricsConfig belongs to the component's own container specification
        # (CreateInferenceComponent: InferenceComponentContainerSpecification), which a
        # component that runs a Model (ModelName) does not render; Model has no such prop.
        raise ValidationError(
            "container_metrics",
            container_metrics,
            "metrics are scraped from a container the component specifies itself (image=); "
            "a component given model= runs the Model's container",
            "pass image=ContainerImage.<family>(...) (with artifact=, serving=, environment=) "
            "instead of model= to scrape its metrics, or drop container_metrics",
        )
    if model is not None and (artifact or serving or environment):
        given = [
            name
            for name, value in (
                ("artifact", artifact),
                ("serving", serving),
                ("environment", environment),
            )
            if value
        ]
        on_model = {"artifact": "source", "serving": "serving", "environment": "environment"}
        raise ValidationError(
            "/".join(given),
            "given with model",
            "these describe a container given by image; a Model carries its own",
            "set them on the Model ("
            + ", ".join(f"Model({on_model[name]}=...)" for name in given)
            + "), or pass image instead of model",
        )
    for served in [model] + [entry.model for entry in specifications or []]:
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
    model: ModelBase | None,
    image: ContainerImage | None,
    artifact: ModelSource | None,
    accelerators: int | None,
    min_memory: Size | None,
    max_memory: Size | None,
    cpu_cores: float | None,
    scheduling: ComponentScheduling | None,
    container_metrics: ContainerMetrics | None,
    specifications: Sequence[ComponentSpecification] | None,
) -> None:
    if model is not None or image is not None:
        raise ValidationError(
            "base_component",
            "given with model/image",
            "an adapter runs inside its base component's container",
            "drop model and image; pass the adapter weights as artifact",
        )
    if artifact is None:
        raise ValidationError(
            "artifact",
            None,
            "an adapter needs its weights",
            "pass artifact=ModelSource.from_s3_tarball(...)",
        )
    if any(value is not None for value in (accelerators, min_memory, max_memory, cpu_cores)):
        raise ValidationError(
            "accelerators/min_memory/max_memory/cpu_cores",
            "given with base_component",
            "an adapter shares its base component's compute and takes no requirements",
            "drop the compute requirements from the adapter",
        )
    if scheduling or container_metrics or specifications:
        raise ValidationError(
            "scheduling/container_metrics/specifications",
            "given with base_component",
            "an adapter has no copies or container of its own",
            "set them on the base component",
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


def _accelerators(requested: int | None, per_copy: int | None, available: int | None) -> int:
    if requested is None:
        if available == 0:
            return 0
        if available is None:  # accelerators unknown: only what the serving options state
            return per_copy or 0
        return per_copy or 1
    check_range("accelerators", requested, minimum=1, fix="reserve at least 1 accelerator per copy")
    return requested


def _memory(
    min_memory: Size | None, max_memory: Size | None, instance_mib: int | None
) -> tuple[int, int | None]:
    if min_memory is None:
        hint = f" (one instance has {instance_mib} MiB)" if instance_mib else ""
        raise ValidationError(
            "min_memory",
            None,
            "SageMaker needs the host memory each copy reserves",
            f"pass min_memory=Size.gibibytes(N){hint}",
        )
    min_mib = int(min_memory.to_mebibytes())
    check_range("min_memory (MiB)", min_mib, minimum=MIN_MEMORY_MIB)
    if instance_mib is not None and min_mib > instance_mib:
        raise ValidationError(
            "min_memory (MiB)",
            min_mib,
            f"exceeds the host memory of one instance ({instance_mib} MiB)",
            "lower min_memory or use a larger instance type",
        )
    max_mib = int(max_memory.to_mebibytes()) if max_memory is not None else None
    if max_mib is not None and max_mib < min_mib:
        raise ValidationError(
            "max_memory (MiB)", max_mib, f"is below min_memory ({min_mib} MiB)", "raise max_memory"
        )
    return min_mib, max_mib


def _check_fit(accelerators: int, cpu_cores: float | None, instance_type: InstanceType) -> None:
    if (
        instance_type.accelerator_count is not None
        and accelerators > instance_type.accelerator_count
    ):
        raise ValidationError(
            "accelerators",
            accelerators,
            f"one copy must fit on one instance, and {instance_type.name} has "
            f"{instance_type.accelerator_count} accelerators",
            f"reserve at most {instance_type.accelerator_count} accelerators per copy, or use an "
            "instance type with more",
        )
    check_range("cpu_cores", cpu_cores, minimum=0.25)
    if (
        cpu_cores is not None
        and instance_type.vcpus is not None
        and cpu_cores > instance_type.vcpus
    ):
        raise ValidationError(
            "cpu_cores",
            cpu_cores,
            f"exceeds the {instance_type.vcpus} vCPUs of one {instance_type.name}",
            "lower cpu_cores or use a larger instance type",
        )


def _startup(
    startup: Duration | None, download: Duration | None
) -> sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty | None:
    if startup is None and download is None:
        return None
    seconds = []
    for name, value in (
        ("container_startup_health_check_timeout", startup),
        ("model_data_download_timeout", download),
    ):
        converted = int(value.to_seconds()) if value is not None else None
        check_range(f"{name} (seconds)", converted, minimum=60, maximum=3600)
        seconds.append(converted)
    return sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty(
        container_startup_health_check_timeout_in_seconds=seconds[0],
        model_data_download_timeout_in_seconds=seconds[1],
    )

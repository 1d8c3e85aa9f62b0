"""``LlmService``'s construct-only settings: the model it serves, what each copy of its
inference component reserves, and its deploy-time benchmark. (What the decision uses, the
workload, SLO, search space, pricing, sizing and overrides, is shared with ``recommend`` in
``planning``.)"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, Size

from ..catalog.containers import ContainerFamily
from ..catalog.model_specs import ModelSpec
from ..prop_types import typed_factory, typed_props
from .deployment import RollingDeployment
from .images import ContainerImage
from .model_source import ModelSource
from .optimization_job import OptimizationJob
from .optimization_options import OptimizationOutput
from .optimization_techniques import TechniqueKind
from .validation import ValidationError

__all__ = ["ComponentSettings", "ServiceBenchmark", "ServiceModel"]

SERVICE_FAMILIES = (ContainerFamily.LMI, ContainerFamily.LMI_TENSORRT_LLM, ContainerFamily.TGI)
"""Images whose serving options LlmService renders (GPU LMI and TGI)."""
DEFAULT_LOADING_TIMEOUT = Duration.minutes(15)


@typed_props
class ServiceModel:
    """The model an ``LlmService`` serves and how its container runs: weights with a serving
    image (``ServiceModel.from_source``), a JumpStart model by id
    (``ServiceModel.from_jumpstart``), or an optimization job's output
    (``ServiceModel.from_optimization_job``).

    ::

        ServiceModel.from_source(
            ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hf_token
            ),
            image=ContainerImage.lmi("0.38.0"),
        )
    """

    def __init__(
        self,
        *,
        image: ContainerImage,
        source: ModelSource | None,
        optimization_job: OptimizationJob | None,
        spec: ModelSpec | None,
        environment: Mapping[str, str] | None,
        loading_timeout: Duration,
        optimization_output: OptimizationOutput | None = None,
    ) -> None:
        """Use the factories."""
        _check_image(image)
        self.image = image
        """The serving container (an LMI or TGI GPU image)."""
        self.source = source
        """The weights as given (None: the optimization job's output)."""
        self.optimization_job = optimization_job
        """The optimization job whose output is served (None: the weights as given)."""
        self.spec = spec
        """The model's architecture (None: inferred from a well-known Hugging Face id)."""
        self.environment = dict(environment or {})
        """Extra container variables."""
        self.loading_timeout = loading_timeout
        """How long a copy may take to load and pass its health check."""
        self.optimization_output = optimization_output
        """Where an optimization job the decision chooses writes its output (None: the
        decision may not choose one)."""

    @staticmethod
    @typed_factory
    def from_source(
        source: ModelSource,
        *,
        image: ContainerImage,
        spec: ModelSpec | None = None,
        environment: Mapping[str, str] | None = None,
        loading_timeout: Duration = DEFAULT_LOADING_TIMEOUT,
        optimization_output: OptimizationOutput | None = None,
    ) -> ServiceModel:
        """Serve ``source``'s weights with ``image``, an LMI (vLLM, LMI-Dist, TensorRT-LLM) or
        TGI GPU image.

        :param spec: the model's architecture; default inferred from a well-known Hugging
            Face id (required otherwise: the performance model needs it).
        :param environment: extra container variables; default none. A memory share set
            here (``OPTION_GPU_MEMORY_UTILIZATION``, ``CUDA_MEMORY_FRACTION``) is the one
            the decision sizes the KV cache in; a variable the service decides (degree, batch
            cap, longest sequence, precision, KV cache dtype) is a ValidationError naming the
            prop that sets it.
        :param loading_timeout: how long a copy may take to load and pass its health check;
            default 15 minutes.
        :param optimization_output: where the ``OptimizationJob`` that the decision may
            choose (``SearchSpace(optimizations=[Optimization.awq()])``) writes the optimized
            weights (``OptimizationOutput.in_bucket(bucket)``); needed with optimizations,
            whose job reads ``source`` from S3 (``ModelSource.from_s3``). Default none.
        """
        return ServiceModel(
            image=image,
            source=source,
            optimization_job=None,
            spec=spec,
            environment=environment,
            loading_timeout=loading_timeout,
            optimization_output=optimization_output,
        )

    @staticmethod
    @typed_factory
    def from_jumpstart(
        model_id: str,
        *,
        version: str | None = None,
        accept_eula: bool = False,
        spec: ModelSpec | None = None,
        environment: Mapping[str, str] | None = None,
        loading_timeout: Duration = DEFAULT_LOADING_TIMEOUT,
    ) -> ServiceModel:
        """Serve a SageMaker JumpStart text-generation model by id (``ModelSource.from_jumpstart``):
        the decision's engine is its JumpStart image's (for JumpStart's default instance type),
        its candidates the instance types JumpStart hosts it on, and the service renders
        JumpStart's image and weights for the stack's region and the decided instance type,
        with JumpStart's environment merged under the decided serving variables
        (``catalog.jumpstart.merge_serving_environment``).

        :param version: the model version; default (and only accepted) the catalog's.
        :param accept_eula: True to accept a gated model's licence; default False (a gated
            model without it is a ValidationError naming the licence).
        :param spec: the model's architecture; default the preset the id names.
        :param environment: extra container variables; default none (a JumpStart or decided
            variable set again is a ValidationError).
        :param loading_timeout: default 15 minutes.
        """
        source = ModelSource.from_jumpstart(model_id, version=version, accept_eula=accept_eula)
        assert source.jumpstart is not None and source.instance_type is not None
        # The image's family and release (the engine) are the same in every region JumpStart
        # offers the model; only the registry differs, which the service resolves per stack.
        model = source.jumpstart
        alias = model.image_of_family[source.instance_type.split(".")[1]]
        image = source.image_for(min(model.images[alias]))
        if image.family not in SERVICE_FAMILIES:
            raise ValidationError(
                "ServiceModel.from_jumpstart(model_id)",
                model_id,
                f"JumpStart serves it with {image.repository_name}:{image.tag}, an image "
                "LlmService renders no serving options for (GPU LMI and TGI only)",
                "deploy it with Model(source=ModelSource.from_jumpstart(...)) and an "
                "InferenceComponentEndpoint, or pick a JumpStart model served by LMI or TGI",
            )
        return ServiceModel(
            image=image,
            source=source,
            optimization_job=None,
            spec=spec,
            environment=environment,
            loading_timeout=loading_timeout,
        )

    @staticmethod
    @typed_factory
    def from_optimization_job(
        job: OptimizationJob,
        *,
        image: ContainerImage | None = None,
        spec: ModelSpec | None = None,
        environment: Mapping[str, str] | None = None,
        loading_timeout: Duration = DEFAULT_LOADING_TIMEOUT,
    ) -> ServiceModel:
        """Serve ``job``'s output (its quantization sets the default precision, its instance
        type the default candidate).

        :param image: the serving container; default the job's recommended image.
        :param spec: the model's architecture; required when the job's source is not a
            well-known Hugging Face id.
        :param environment: extra container variables; default none. A memory share set
            here (``OPTION_GPU_MEMORY_UTILIZATION``, ``CUDA_MEMORY_FRACTION``) is the one
            the decision sizes the KV cache in; a variable the service decides (degree, batch
            cap, longest sequence, precision, KV cache dtype) is a ValidationError naming the
            prop that sets it.
        :param loading_timeout: default 15 minutes.
        """
        _check_served_job(job)
        return ServiceModel(
            image=image or job.recommended_image(),
            source=None,
            optimization_job=job,
            spec=spec,
            environment=environment,
            loading_timeout=loading_timeout,
        )

    def weights(self) -> ModelSource:
        """The weights the model loads: the source, or the job's output."""
        if self.optimization_job is not None:
            return self.optimization_job.as_model_source()
        assert self.source is not None
        return self.source


def _check_served_job(job: OptimizationJob) -> None:
    """An EAGLE job writes a draft head, not a model to serve in place of the original."""
    if any(t.kind is TechniqueKind.SPECULATIVE_DECODING for t in job.techniques):
        raise ValidationError(
            "ServiceModel.from_optimization_job(job)",
            job.node.path,
            "a speculative-decoding job's output is an EAGLE draft head, not a model to serve "
            "in place of the original weights",
            "serve the original weights with ServiceModel.from_source(..., "
            "optimization_output=...) and SearchSpace(optimizations=[Optimization."
            "speculative_decoding()]), or build Model(..., speculative_decoding="
            "job.as_speculative_draft())",
        )


def _check_image(image: ContainerImage) -> None:
    if image.family not in SERVICE_FAMILIES:
        raise ValidationError(
            "image",
            image.family.value,
            "LlmService renders serving options for GPU LMI and TGI images only",
            "use ContainerImage.lmi(...), .lmi_tensorrt_llm(...) or .tgi(...), or build the "
            "endpoint by hand with Model and InferenceComponent",
        )


@typed_props
class ComponentSettings:
    """What each copy of the service's inference component reserves, and how copies roll
    out on an update (``CreateInferenceComponent``'s ``ComputeResourceRequirements`` and
    ``DeploymentConfig``, SageMaker API reference).

    ::

        ComponentSettings(min_memory_per_copy=Size.gibibytes(16), cpu_cores_per_copy=4)
    """

    def __init__(
        self,
        *,
        min_memory_per_copy: Size | None = None,
        cpu_cores_per_copy: float | None = None,
        deployment: RollingDeployment | None = None,
    ) -> None:
        """
        :param min_memory_per_copy: host memory each copy reserves; default half of its
            share of the instance's memory (its accelerators' share).
        :param cpu_cores_per_copy: CPU cores each copy reserves; default none reserved.
        :param deployment: rolling updates of the component with alarm rollback; default
            SageMaker's.
        """
        self.min_memory_per_copy = min_memory_per_copy
        """Host memory each copy reserves (None: derived)."""
        self.cpu_cores_per_copy = cpu_cores_per_copy
        """CPU cores each copy reserves (None: none)."""
        self.deployment = deployment
        """Rolling updates of the component (None: SageMaker's)."""

    @property
    def min_memory_mib(self) -> int | None:
        """``min_memory_per_copy`` in MiB, as the decision records it."""
        memory = self.min_memory_per_copy
        return None if memory is None else int(memory.to_mebibytes())


@typed_props
class ServiceBenchmark:
    """A deploy-time ``EndpointBenchmark`` of the service: ``ServiceBenchmark.knee_search()``
    measures the knee of the initial copies at the workload's payload (a knee search from
    the predicted knee, gated on the SLO), and copy autoscaling holds the measured knee."""

    def __init__(self, *, max_duration: Duration) -> None:
        """Use the factories."""
        self.max_duration = max_duration
        """The sweep's time limit."""

    @staticmethod
    @typed_factory
    def knee_search(*, max_duration: Duration = Duration.hours(1)) -> ServiceBenchmark:
        """A knee search of the initial copies, from 1 to four times the predicted knee,
        starting at the prediction; ``max_duration`` default 1 hour."""
        return ServiceBenchmark(max_duration=max_duration)

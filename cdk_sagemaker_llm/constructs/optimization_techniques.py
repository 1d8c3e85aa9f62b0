"""What an optimization job applies, and for which deployment instance type: the techniques
(quantization, compilation, sharding, speculative decoding) of ``CreateOptimizationJob``'s
``OptimizationConfigs``, and the synth-time checks of a combination of techniques against the
instance type the optimized model will be served on (SageMaker API reference,
``CreateOptimizationJob``; SageMaker developer guide, "Inference optimization for Amazon
SageMaker AI models")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import ModelSpec
from ..planning.placement import head_divisibility_problem
from ..prop_types import typed_props
from .images import ContainerImage
from .model import merge_environment
from .s3_prefix_grants import grant_read
from .validation import ValidationError, is_unresolved

DEPLOYMENT_INSTANCE_TYPES: tuple[str, ...] = (
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.g4dn.xlarge",
    "ml.g4dn.2xlarge",
    "ml.g4dn.4xlarge",
    "ml.g4dn.8xlarge",
    "ml.g4dn.12xlarge",
    "ml.g4dn.16xlarge",
    "ml.g5.xlarge",
    "ml.g5.2xlarge",
    "ml.g5.4xlarge",
    "ml.g5.8xlarge",
    "ml.g5.12xlarge",
    "ml.g5.16xlarge",
    "ml.g5.24xlarge",
    "ml.g5.48xlarge",
    "ml.g6.xlarge",
    "ml.g6.2xlarge",
    "ml.g6.4xlarge",
    "ml.g6.8xlarge",
    "ml.g6.12xlarge",
    "ml.g6.16xlarge",
    "ml.g6.24xlarge",
    "ml.g6.48xlarge",
    "ml.g6e.xlarge",
    "ml.g6e.2xlarge",
    "ml.g6e.4xlarge",
    "ml.g6e.8xlarge",
    "ml.g6e.12xlarge",
    "ml.g6e.16xlarge",
    "ml.g6e.24xlarge",
    "ml.g6e.48xlarge",
    "ml.inf2.xlarge",
    "ml.inf2.8xlarge",
    "ml.inf2.24xlarge",
    "ml.inf2.48xlarge",
    "ml.trn1.2xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    "ml.p6-b200.48xlarge",
    "ml.g7e.2xlarge",
    "ml.g7e.4xlarge",
    "ml.g7e.8xlarge",
    "ml.g7e.12xlarge",
    "ml.g7e.24xlarge",
    "ml.g7e.48xlarge",
    "ml.g7.2xlarge",
    "ml.g7.4xlarge",
    "ml.g7.8xlarge",
    "ml.g7.12xlarge",
    "ml.g7.24xlarge",
    "ml.g7.48xlarge",
)
"""``CreateOptimizationJob``'s ``DeploymentInstanceType`` enum (botocore 1.44.5)."""
MAX_ENVIRONMENT = 25
"""Variables per ``OptimizationEnvironment`` / ``OverrideEnvironment``."""
MAX_CONFIGS = 10
"""Techniques (``OptimizationConfigs``) per job."""
TENSOR_PARALLEL_VARIABLE = "OPTION_TENSOR_PARALLEL_DEGREE"


class TechniqueKind(Enum):
    """The optimization a technique applies (one ``OptimizationConfig`` each)."""

    QUANTIZATION = "ModelQuantizationConfig"
    COMPILATION = "ModelCompilationConfig"
    SHARDING = "ModelShardingConfig"
    SPECULATIVE_DECODING = "ModelSpeculativeDecodingConfig"


class QuantizationMethod(Enum):
    """Weight quantization methods of the optimization container (``OPTION_QUANTIZE``)."""

    AWQ = "awq"
    """Activation-aware weight quantization to INT4 (~4x smaller weights), NVIDIA GPUs."""
    FP8 = "fp8"
    """FP8 weights, NVIDIA GPUs (native on Ada and Hopper: g6, g6e, p5)."""


class CompilationTarget(Enum):
    """What a compilation produces ahead of time."""

    NEURON = "neuron"
    """Neuron artifacts for AWS Inferentia2 / Trainium (ml.inf2, ml.trn1)."""
    TENSORRT_LLM = "tensorrt-llm"
    """TensorRT-LLM engines for NVIDIA GPUs."""


@typed_props
@dataclass(frozen=True)
class OptimizationTechnique:
    """One technique of an optimization job; build it with the static factories."""

    kind: TechniqueKind
    """Which ``OptimizationConfig`` this renders."""
    environment: dict[str, str] = field(default_factory=dict)
    """The ``OverrideEnvironment`` of the optimization container."""
    image: ContainerImage | None = None
    """The optimization container; default SageMaker's for the technique."""
    quantization: QuantizationMethod | None = None
    """The quantization method, for quantization."""
    compilation_target: CompilationTarget | None = None
    """The compiler, for compilation."""
    training_data_bucket: s3.IBucket | None = None
    """Speculative decoding: the bucket of the EAGLE training data, if given."""
    training_data_key: str | None = None
    """Speculative decoding: the prefix or manifest key of the training data, if given."""
    training_data_is_manifest: bool = False
    """Speculative decoding: True when the key is a manifest file, not a prefix."""

    @staticmethod
    def quantization_of(
        method: QuantizationMethod = QuantizationMethod.AWQ,
        *,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Quantize the weights (``OPTION_QUANTIZE=<method>``); ``environment`` overrides
        other optimization-container variables (e.g. ``OPTION_TENSOR_PARALLEL_DEGREE``)."""
        rendered = merge_environment(
            {"OPTION_QUANTIZE": method.value}, environment, "quantization environment"
        )
        return OptimizationTechnique(
            TechniqueKind.QUANTIZATION, rendered, image, quantization=method
        )

    @staticmethod
    def compilation(
        target: CompilationTarget,
        *,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Compile ahead of time for Neuron or TensorRT-LLM; the artifacts are specific to
        the shapes, precision, tensor-parallel degree and batch size in ``environment``."""
        return OptimizationTechnique(
            TechniqueKind.COMPILATION, dict(environment or {}), image, compilation_target=target
        )

    @staticmethod
    def sharding(
        *,
        tensor_parallel_degree: int | None = None,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Pre-shard the weights for a tensor-parallel degree (``OPTION_TENSOR_PARALLEL_DEGREE``,
        from ``tensor_parallel_degree`` or ``environment``); not combinable with others."""
        rendered = (
            {TENSOR_PARALLEL_VARIABLE: str(tensor_parallel_degree)}
            if tensor_parallel_degree is not None
            else {}
        )
        return OptimizationTechnique(
            TechniqueKind.SHARDING,
            merge_environment(rendered, environment, "sharding environment"),
            image,
        )

    @staticmethod
    def speculative_decoding(
        *,
        training_data_bucket: s3.IBucket | None = None,
        training_data_key: str | None = None,
        manifest: bool = False,
    ) -> OptimizationTechnique:
        """Train an EAGLE draft head for the model; optionally on your own data (an S3 prefix
        ending in ``/``, or a manifest file with ``manifest=True``)."""
        if (training_data_bucket is None) != (training_data_key is None):
            raise ValidationError(
                "speculative_decoding(training_data_bucket/training_data_key)",
                (training_data_bucket, training_data_key),
                "training data needs both a bucket and a key",
                "pass both, or neither to use SageMaker's default data",
            )
        key = training_data_key
        if key is not None and not is_unresolved(key) and not manifest and not key.endswith("/"):
            raise ValidationError(
                "speculative_decoding(training_data_key)",
                key,
                "an S3 prefix of training data must end with '/'",
                f"pass {key + '/'!r}, or manifest=True for a manifest file",
            )
        return OptimizationTechnique(
            TechniqueKind.SPECULATIVE_DECODING,
            training_data_bucket=training_data_bucket,
            training_data_key=key,
            training_data_is_manifest=manifest,
        )

    def render(self, scope: Construct, role: iam.IRole) -> dict[str, Any]:
        """The ``OptimizationConfig`` (API shape); grants ``role`` what the technique reads."""
        if self.kind is TechniqueKind.SPECULATIVE_DECODING:
            config: dict[str, Any] = {"Technique": "EAGLE"}
            if self.training_data_bucket is not None and self.training_data_key is not None:
                grant_read(
                    role,
                    self.training_data_bucket,
                    self.training_data_key,
                    not self.training_data_is_manifest,
                )
                config["TrainingDataSource"] = {
                    "S3Uri": f"s3://{self.training_data_bucket.bucket_name}/{self.training_data_key}",
                    "S3DataType": "ManifestFile" if self.training_data_is_manifest else "S3Prefix",
                }
            return {self.kind.value: config}
        config = {}
        if self.image is not None:
            config["Image"] = self.image.bind(scope, role)
        if self.environment:
            config["OverrideEnvironment"] = dict(sorted(self.environment.items()))
        return {self.kind.value: config}


def is_neuron_deployment(instance_type: InstanceType) -> bool:
    """True for Inferentia / Trainium deployment types, as the instance catalog knows them
    (every one of ``DEPLOYMENT_INSTANCE_TYPES`` is in it); the API's others all have GPUs."""
    return CATALOG[instance_type.name].is_neuron


def check_instance_type(instance_type: InstanceType) -> None:
    if instance_type.name not in DEPLOYMENT_INSTANCE_TYPES:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "optimization jobs support only the API's deployment instance types (GPU: p4d, "
            "p4de, p5, p5e, p5en, p6-b200, g4dn, g5, g6, g6e, g7, g7e; Neuron: inf2, trn1, trn1n)",
            "pick the instance type you will serve on from that list, e.g. ml.g5.12xlarge",
        )


def check_techniques(
    techniques: Sequence[OptimizationTechnique], instance_type: InstanceType
) -> None:
    """The techniques as one job (count, kinds, combinations) and each on ``instance_type``."""
    _check_combination(techniques)
    neuron = is_neuron_deployment(instance_type)
    for index, technique in enumerate(techniques):
        prop = f"techniques[{index}]"
        check_environment(f"{prop}.environment", technique.environment)
        _check_on_hardware(technique, instance_type, neuron)
        if technique.kind is TechniqueKind.SHARDING:
            _check_tensor_parallel(prop, technique, instance_type)
        else:
            check_degree_fits(
                f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
                technique.environment.get(TENSOR_PARALLEL_VARIABLE),
                instance_type,
            )


def check_degree_fits(prop: str, degree: str | None, instance_type: InstanceType) -> None:
    """A tensor-parallel degree given to a quantization or a compilation: the optimization
    container loads the model at that degree on ``instance_type``, the instance the job runs
    on, and LMI starts no more ranks than it has accelerators (NeuronCores on Inferentia /
    Trainium, ``InstanceType.tensor_parallel_ranks_per_device``); a job with more fails
    after its instance has started, not at synth."""
    if degree is None or is_unresolved(degree):
        return
    if not degree.isdigit() or int(degree) < 1:
        raise ValidationError(
            prop,
            degree,
            "the tensor-parallel degree is a positive whole number",
            "pass e.g. '4'",
        )
    devices = instance_type.accelerator_count
    ranks = (devices or 0) * instance_type.tensor_parallel_ranks_per_device
    if devices and int(degree) > ranks:
        unit = "NeuronCores" if instance_type.is_neuron else "GPUs"
        raise ValidationError(
            prop,
            int(degree),
            f"{instance_type.name} has {ranks} {unit}, and the job loads the model at this "
            "degree on it",
            f"set it to at most {ranks}, or use a larger instance type",
        )


def _check_on_hardware(
    technique: OptimizationTechnique, instance_type: InstanceType, neuron: bool
) -> None:
    """What each technique produces must run on the deployment type's accelerators."""
    target = technique.compilation_target
    if target is CompilationTarget.NEURON and not neuron:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "Neuron compilation targets AWS Inferentia2 / Trainium",
            "use an ml.inf2.* or ml.trn1.* instance type, or compile with "
            "CompilationTarget.TENSORRT_LLM for GPUs",
        )
    if target is CompilationTarget.TENSORRT_LLM and neuron:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "TensorRT-LLM compilation targets NVIDIA GPUs",
            "use a GPU instance type, or compile with CompilationTarget.NEURON",
        )
    if technique.kind is TechniqueKind.QUANTIZATION and neuron:
        method = technique.quantization.name if technique.quantization else "quantization"
        raise ValidationError(
            "instance_type",
            instance_type.name,
            f"{method} quantization produces GPU weights, which Inferentia/Trainium cannot serve",
            "use a GPU instance type (ml.g5, ml.g6, ml.g6e, ml.p4d, ml.p5), or Neuron "
            "compilation for Inferentia/Trainium",
        )
    if technique.kind is TechniqueKind.SPECULATIVE_DECODING and neuron:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "EAGLE speculative decoding runs on NVIDIA GPUs",
            "use a GPU instance type",
        )
    if technique.kind is TechniqueKind.SHARDING and neuron:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "sharding writes GPU tensor-parallel shards; on Inferentia/Trainium an "
            "optimization job compiles only (the SageMaker Python SDK's Neuron rules)",
            "compile with CompilationTarget.NEURON, whose compilation shards over the "
            "NeuronCores, or shard for a GPU instance type",
        )
    if technique.quantization is QuantizationMethod.FP8 and not _runs_fp8(instance_type):
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "FP8 weights need an NVIDIA GPU of compute capability 8.0 or later (FP8 "
            "weight-only kernels on Ampere, native FP8 on Ada and Hopper); this type's "
            "GPUs are older",
            "quantize with QuantizationMethod.AWQ, or deploy on ml.g5, ml.g6, ml.g6e, "
            "ml.p4d or ml.p5",
        )


def _runs_fp8(instance_type: InstanceType) -> bool:
    """Compute capability 8.0 or later, which is when NVIDIA GPUs gained BF16
    (``Accelerator.bf16``): vLLM's FP8 weight-only (Marlin) kernels need it."""
    accelerator = instance_type.accelerator
    return accelerator is None or accelerator.bf16


def _check_combination(techniques: Sequence[OptimizationTechnique]) -> None:
    """1 to ``MAX_CONFIGS`` techniques, each kind once, sharding alone, and never compilation
    with speculative decoding, which SageMaker refuses (the SageMaker Python SDK's
    ``_validate_optimization_configuration``: "Compilation and Speculative Decoding
    together")."""
    if not 1 <= len(techniques) <= MAX_CONFIGS:
        raise ValidationError(
            "techniques",
            len(techniques),
            f"an optimization job applies 1 to {MAX_CONFIGS} techniques",
            "pass at least one OptimizationTechnique",
        )
    kinds = [t.kind for t in techniques]
    for kind in set(kinds):
        if kinds.count(kind) > 1:
            raise ValidationError(
                "techniques",
                [k.name for k in kinds],
                f"{kind.name} is given {kinds.count(kind)} times",
                "give each kind of technique once",
            )
    if TechniqueKind.SHARDING in kinds and len(kinds) > 1:
        raise ValidationError(
            "techniques",
            [k.name for k in kinds],
            "sharding cannot be combined with other techniques",
            "run sharding in a job of its own",
        )
    compiled = any(t.compilation_target is not None for t in techniques)
    if compiled and TechniqueKind.SPECULATIVE_DECODING in kinds:
        raise ValidationError(
            "techniques",
            [k.name for k in kinds],
            "SageMaker does not apply compilation and speculative decoding in one job",
            "run them as two jobs, or drop one of them",
        )


def _check_tensor_parallel(
    prop: str, technique: OptimizationTechnique, instance_type: InstanceType
) -> None:
    degree = technique.environment.get(TENSOR_PARALLEL_VARIABLE)
    if degree is None:
        raise ValidationError(
            f"{prop}.environment",
            technique.environment,
            f"sharding needs a tensor-parallel degree ({TENSOR_PARALLEL_VARIABLE})",
            "pass OptimizationTechnique.sharding(tensor_parallel_degree=N)",
        )
    if is_unresolved(degree):
        return
    if not degree.isdigit() or int(degree) < 1:
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            degree,
            "the tensor-parallel degree is a positive whole number",
            "pass e.g. tensor_parallel_degree=4",
        )
    gpus = instance_type.accelerator_count
    if instance_type.is_gpu and gpus is not None and int(degree) > gpus:
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            int(degree),
            f"{instance_type.name} has {gpus} GPUs to shard over",
            f"shard over at most {gpus} GPUs, or use a larger instance type",
        )
    if instance_type.is_gpu and gpus is not None and gpus % int(degree):
        # A copy sharded over a degree that does not divide the GPUs leaves GPUs no copy can
        # use; the serving containers take degrees that divide the instance's GPUs.
        divisors = [d for d in range(1, gpus + 1) if gpus % d == 0]
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            int(degree),
            f"{degree} does not divide the {gpus} GPUs of {instance_type.name}",
            f"shard over one of {divisors}",
        )


def check_sharding_heads(
    techniques: Sequence[OptimizationTechnique], spec: ModelSpec | None
) -> None:
    """A sharding degree must split the model's attention heads (and its KV heads, or
    replicate them) evenly over the GPUs (``planning.placement.head_divisibility_problem``,
    vLLM's rule); unknown architectures pass."""
    for index, technique in enumerate(techniques):
        degree = technique.environment.get(TENSOR_PARALLEL_VARIABLE)
        if technique.kind is not TechniqueKind.SHARDING or spec is None or degree is None:
            continue
        if is_unresolved(degree) or not degree.isdigit() or int(degree) < 1:
            continue
        problem = head_divisibility_problem(spec, int(degree))
        if problem is not None:
            fitting = [d for d in (1, 2, 4, 8, 16) if head_divisibility_problem(spec, d) is None]
            raise ValidationError(
                f"techniques[{index}].{TENSOR_PARALLEL_VARIABLE}",
                int(degree),
                f"{spec.name}: {problem}",
                f"shard over a degree that divides the heads, e.g. one of {fitting}",
            )


MAX_VARIABLE_LENGTH = 256
"""Of an optimization job variable's name and of its value: botocore's service model,
``OptimizationJobEnvironmentVariables`` (key and value at most 256 characters, a key not
blank). The hosting API allows 1024; a longer value fails only when SageMaker refuses the job."""


def check_environment(prop: str, environment: Mapping[str, str] | None) -> None:
    if environment and len(environment) > MAX_ENVIRONMENT:
        raise ValidationError(
            prop,
            len(environment),
            f"the API takes at most {MAX_ENVIRONMENT} variables",
            "drop variables the optimization container does not need",
        )
    for name, value in (environment or {}).items():
        if is_unresolved(name):
            continue
        if not name.strip() or len(name) > MAX_VARIABLE_LENGTH:
            raise ValidationError(
                f"{prop} (name)",
                name,
                f"a variable's name is 1 to {MAX_VARIABLE_LENGTH} characters, not blank",
                "name the variable the optimization container reads",
            )
        if not is_unresolved(value) and len(str(value)) > MAX_VARIABLE_LENGTH:
            raise ValidationError(
                f"{prop}[{name!r}] (length)",
                len(str(value)),
                f"an optimization job takes values of at most {MAX_VARIABLE_LENGTH} characters",
                "shorten the value, or pass it in the served model's environment instead",
            )

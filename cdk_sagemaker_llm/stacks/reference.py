"""Reference deployment: a Llama-3-8B-class model on LMI, served as inference components."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Size, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..constructs.autoscaling import ComponentScaling
from ..constructs.component_options import ComponentModel, CopyResources
from ..constructs.deployment import RollingDeployment
from ..constructs.endpoint import InferenceComponentEndpoint
from ..constructs.images import ContainerImage
from ..constructs.inference_component import InferenceComponent
from ..constructs.llm_service import ExpectedTraffic, LlmService
from ..constructs.llm_service_options import ComponentSettings, ServiceBenchmark, ServiceModel
from ..constructs.model import Model
from ..constructs.model_source import ModelSource
from ..constructs.nag import acknowledge
from ..constructs.optimization_job import OptimizationJob
from ..constructs.optimization_options import OptimizationOutput, OptimizationRun
from ..constructs.optimization_techniques import OptimizationTechnique, QuantizationMethod
from ..constructs.serving_options import DataType, LmiBackend, LmiOptions
from ..constructs.variant_options import ContainerStartup, ManagedInstanceScaling
from ..planning.objectives import Slo
from ..planning.service_options import Risk, SearchSpace, Sizing
from ..planning.workload import Workload

LLAMA_3_8B_INSTRUCT = "meta-llama/Meta-Llama-3-8B-Instruct"
HUGGING_FACE_TOKEN_SECRET_NAME = "cdk-sagemaker-llm/hugging-face-token"
MODEL_BUCKET_NAME = "cdk-sagemaker-llm-models"
"""An existing bucket holding the uncompressed Llama 3 8B weights (and the optimized ones)."""


class LlamaInferenceComponentStack(Stack):
    """Llama 3 8B Instruct on LMI 0.38.0 (vLLM V1: the newest LMI release whose engine profile is
    fitted to measurements), laid out by ``LlmService`` from its SLO and traffic.

    The service states what it must deliver (512-token prompts, 256-token answers, at most
    50 ms/token and 2 s to the first token, up to 16 requests/s, at least 1) and which
    instance types it may use; the performance model picks the cheapest layout at synth time,
    and a deploy-time benchmark measures the knee that copy autoscaling then holds. An
    AWQ-quantized copy of the model, made by an optimization job at deploy time, is a second
    service. A third endpoint, built by hand from ``Model`` + ``InferenceComponent``, serves
    sporadic traffic and scales to zero when idle.
    """

    service: LlmService
    """The chat service (``LlmService``)."""
    awq_job: OptimizationJob
    """The deploy-time AWQ quantization of the weights."""
    awq_service: LlmService
    """The service of the quantized weights."""
    model: Model
    """The model of the scale-to-zero endpoint."""
    sporadic_endpoint: InferenceComponentEndpoint
    """The endpoint that keeps no instance while idle."""
    sporadic_component: InferenceComponent
    """Its one component."""
    sporadic_scaling: ComponentScaling
    """The component's copy autoscaling, down to zero copies."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        token = secretsmanager.Secret.from_secret_name_v2(
            self, "HuggingFaceToken", HUGGING_FACE_TOKEN_SECRET_NAME
        )
        source = ModelSource.from_hugging_face(LLAMA_3_8B_INSTRUCT, token_secret=token)
        # The newest LMI release whose engine profile (lmi-vllm-v1) is fitted to measurements:
        # the decision rests on the best-measured engine (planning/engine_profiles/).
        image = ContainerImage.lmi("0.38.0")
        self._serve_chat(source, image, errors_alarm_name=f"{id}-llama3-5xx")
        self._serve_quantized()
        self._serve_sporadic(source, image)

    def _serve_chat(
        self, source: ModelSource, image: ContainerImage, *, errors_alarm_name: str
    ) -> None:
        """The chat service, laid out by ``LlmService`` from its SLO and traffic, rolled out
        one instance at a time behind an alarm on its 5XX errors."""
        # The SLO and the traffic decide the instance type, tensor-parallel degree, copies per
        # instance, batch size, instance and copy bounds and the scaling target: run
        # `cdk-sagemaker-llm plan` to see the decision, its reasoning and predicted figures.
        self.service = LlmService(
            self,
            "Llama3",
            model=ServiceModel.from_source(source, image=image),
            workload=Workload(input_tokens=512, output_tokens=256),
            slo=Slo(max_ms_per_token=50, max_ttft_ms=2000),
            traffic=ExpectedTraffic.requests_per_second(16, minimum=1),
            search=SearchSpace(
                instance_types=[
                    InstanceType.G5_2XLARGE,
                    InstanceType.G5_12XLARGE,
                    InstanceType.G6_12XLARGE,
                    InstanceType.G6E_2XLARGE,
                ],
                max_instance_count=2,
            ),
            # Sized at the median of the engine profile's band: on these candidates and two
            # instances the pessimistic default (no validation measurement under-provisioned)
            # meets no 50 ms/token; it needs 3 x ml.g5.12xlarge at TP4. The deploy-time
            # benchmark below measures the real figures, and gates on the SLO.
            sizing=Sizing(risk=Risk.MEDIAN),
            component=ComponentSettings(
                deployment=RollingDeployment(
                    batch_size=1,
                    wait_interval=Duration.minutes(2),
                    rollback_alarms=[
                        cloudwatch.Alarm.from_alarm_name(self, "ErrorsAlarmRef", errors_alarm_name)
                    ],
                )
            ),
            # Measure the deployed copies (a knee search at the same payload, streaming): the
            # deployment fails if one request alone is slower than the SLO, and copies scale
            # on the measured knee instead of the predicted one.
            benchmark=ServiceBenchmark.knee_search(),
        )
        cloudwatch.Alarm(
            self,
            "ErrorsAlarm",
            alarm_name=errors_alarm_name,
            alarm_description="Llama 3 component answers with 5XX errors: roll back a deployment.",
            metric=self.service.component.metric_invocation_errors(),
            threshold=5,
            evaluation_periods=2,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _serve_quantized(self) -> None:
        """An AWQ-quantized copy of the weights, made by an optimization job at deploy time,
        served as a second ``LlmService``."""
        # AWQ quantization at deploy time: the stack waits for the optimization job (up to
        # its 4-hour max runtime) and serves its INT4 output, about 4x smaller than fp16, in
        # the image SageMaker recommends for it, laid out for longer (8,192-token) requests.
        models = s3.Bucket.from_bucket_name(self, "ModelBucket", MODEL_BUCKET_NAME)
        self.awq_job = OptimizationJob(
            self,
            "Llama3AwqJob",
            source=ModelSource.from_s3(models, f"{LLAMA_3_8B_INSTRUCT}/"),
            instance_type=InstanceType.G5_2XLARGE,
            techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
            output=OptimizationOutput.in_bucket(models, prefix="optimized/"),
            run=OptimizationRun(max_runtime=Duration.hours(4), job_name_prefix="llama3-8b-awq"),
        )
        self.awq_service = LlmService(
            self,
            "Llama3Awq",
            # The spec cannot be read from an S3 source: state it.
            model=ServiceModel.from_optimization_job(self.awq_job, spec=ModelSpec.LLAMA_3_8B),
            workload=Workload(input_tokens=6144, output_tokens=2048),
            slo=Slo(max_ms_per_token=60),
            traffic=ExpectedTraffic.concurrency(8, minimum=1),
            search=SearchSpace(max_instance_count=2),
            # At the median: the pessimistic default takes one copy per 6,144 + 2,048-token
            # request here (8 instances for 8 in flight).
            sizing=Sizing(risk=Risk.MEDIAN),
        )

    def _serve_sporadic(self, source: ModelSource, image: ContainerImage) -> None:
        """A hand-built ``Model`` + ``InferenceComponent`` endpoint for sporadic traffic that
        scales to zero when idle."""
        # Scale to zero, built by hand: a second endpoint for sporadic traffic, which keeps no
        # instance while idle. The first request after idling fails
        # (NoCapacityInvocationFailures) and brings a copy, and managed instance scaling an
        # instance, back. On one A10G (22,888 MiB) vLLM takes 90% (gpu_memory_utilization
        # 0.9), of which fp16 weights and ~2 GB of overhead leave ~3.5 GB for the KV cache: 128
        # KiB per token (GQA, 8 KV heads) holds 6 sequences of 4,096 tokens.
        self.model = Model(
            self,
            "Llama3Model",
            image=image,
            source=source,
            serving=LmiOptions(
                backend=LmiBackend.VLLM,
                tensor_parallel_degree=1,
                max_rolling_batch_size=6,
                max_model_len=4096,
                dtype=DataType.FP16,
                model_loading_timeout=Duration.minutes(15),
            ),
        )
        self.sporadic_endpoint = InferenceComponentEndpoint(
            self,
            "SporadicEndpoint",
            instance_type=InstanceType.G5_2XLARGE,
            instance_scaling=ManagedInstanceScaling(
                initial_instance_count=1, min_instance_count=0, max_instance_count=2
            ),
        )
        acknowledge(
            self.sporadic_endpoint,
            "Annotation::cdk-sagemaker-llm:min-instance-count-zero",
            "The reference region (us-west-2) accepts scale to zero; check yours before "
            "deploying elsewhere.",
        )
        self.sporadic_component = InferenceComponent(
            self,
            "Llama3SporadicComponent",
            endpoint=self.sporadic_endpoint,
            serves=ComponentModel.of(self.model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(24), cpu_cores=4),
            copy_count=1,
            startup=ContainerStartup(health_check_timeout=Duration.minutes(15)),
        )
        self.sporadic_scaling = self.sporadic_component.auto_scale_copies(
            min_copies=0, max_copies=2
        )
        self.sporadic_scaling.scale_on_invocations(
            target=60, scale_in_cooldown=Duration.minutes(15)
        )

"""One model, one answer: ``size``, the constructs' fit check and ``predict``'s default degree
rank layouts with the serving engine's profile, as ``predict`` and ``recommend`` do."""

from __future__ import annotations

import json

import pytest
from conftest import new_stack
from hub import hub_token

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.constructs.endpoint import Endpoint, ProductionVariant
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.serving_options import TgiOptions
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.engine_profiles import (
    engine_profile,
    profile_origin,
    resolve_profile,
)
from cdk_sagemaker_llm.planning.layout_capacity import max_throughput_within
from cdk_sagemaker_llm.planning.performance import Layout
from cdk_sagemaker_llm.planning.sizing import (
    SIZING_SLO_MS_PER_TOKEN,
    default_max_total_tokens,
    recommended_tensor_parallel_degree,
    size,
    sizing_workload,
)
from cdk_sagemaker_llm.review.serving import Container, sizing_verdict
from cdk_sagemaker_llm.template_metadata import IMAGE

LLAMA_3_8B, LLAMA_3_70B = ModelSpec.preset("llama-3-8b"), ModelSpec.preset("llama-3-70b")
P4D = InstanceType.P4D_24XLARGE


def _fastest_degree(spec: ModelSpec, instance_type: InstanceType, engine: str | None) -> int:
    """The degree whose layout ``predict``'s model (the engine profile) serves most within the
    sizing limit: what ``size`` must recommend."""
    workload = sizing_workload(default_max_total_tokens(spec))
    served = {}
    for degree in (1, 2, 4, 8):
        layout = Layout(instance_type, degree, instance_type.accelerator_devices // degree)
        capacity = max_throughput_within(
            spec,
            layout,
            workload,
            SIZING_SLO_MS_PER_TOKEN,
            engine=resolve_profile(engine),
            max_batch_size=None,  # the profile's batch limit, as predict
        )
        served[degree] = capacity.level.tokens_per_s if capacity else 0.0
    return max(served, key=lambda degree: served[degree])


@pytest.mark.parametrize("engine", [None, "tgi-1", "lmi-trtllm"])
def test_size_recommends_the_degree_the_engine_profile_serves_most_with(
    engine: str | None,
) -> None:
    # Llama 3 8B on ml.p4d.24xlarge: the generic profile ranked TP1 first, lmi-vllm-v1 TP2.
    report = size(LLAMA_3_8B, P4D, engine=engine)
    assert report.recommended_tensor_parallel_degree == _fastest_degree(LLAMA_3_8B, P4D, engine)
    name = resolve_profile(engine).name
    assert report.engine == name and report.to_dict()["engine"] == name
    assert any(f"by the {name} engine profile" in line for line in report.reasoning)
    assert any(
        line.startswith(f"latency and tokens/s: the {name} engine profile")
        for line in report.reasoning
    )


def test_size_defaults_to_predicts_profile_and_names_it() -> None:
    report = size(LLAMA_3_8B, P4D)
    assert report.engine == "lmi-vllm-v1"
    assert report.recommended_tensor_parallel_degree == 2  # generic: 1
    (note,) = [r for r in report.reasoning if r.startswith("latency and tokens/s:")]
    assert "the default of `predict` and `recommend`" in note and "generic" not in note
    assert profile_origin(engine_profile("lmi-vllm-v1")) in note  # fitted or a prior, as it is


def test_cli_size_takes_engine_and_matches_predicts_default_degree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["size", "--model", "llama-3-8b", "--instance-type", "ml.p4d.24xlarge"]
    assert main([*base, "--format", "json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["engine"] == "lmi-vllm-v1"
    assert main([*base, "--format", "json", "--engine", "tgi:1.4.5"]) == 0
    tgi = json.loads(capsys.readouterr().out)
    assert tgi["engine"] == "tgi-1"
    assert tgi["recommended_tensor_parallel_degree"] == _fastest_degree(LLAMA_3_8B, P4D, "tgi-1")
    assert main([*base, "--engine", "no-such-engine"]) == 2
    assert "--engine" in capsys.readouterr().err


def test_cli_predict_default_degree_uses_its_engine_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """predict's default degree came from the generic profile's ranking (512 + 256 tokens)."""

    def degree(model: str, *engine: str) -> str:
        args = ["predict", "--model", model, "--instance-type", "ml.g5.12xlarge", *engine]
        args += ["--input-tokens", "512", "--output-tokens", "256", "--concurrency", "1"]
        assert main([*args, "--format", "json"]) == 0
        return str(json.loads(capsys.readouterr().out)["assumptions"][0])

    g5_12 = InstanceType.G5_12XLARGE
    default = recommended_tensor_parallel_degree(LLAMA_3_8B, g5_12, max_total_tokens=768)
    assert f"TP{default} x {4 // default} cop" in degree("llama-3-8b")  # lmi-vllm-v1's ranking
    assert "TP2 x 2 copies" in degree("llama-2-13b", "--engine", "tgi-1")  # generic: TP4


def test_the_models_fit_check_ranks_with_its_images_profile() -> None:
    """A model that does not fit suggests the degree its own engine serves most with."""
    p4de = InstanceType.of("ml.p4de.24xlarge")
    assert size(LLAMA_3_70B, p4de, engine="tgi-1").recommended_tensor_parallel_degree == 4
    assert size(LLAMA_3_70B, p4de, engine="generic").recommended_tensor_parallel_degree == 8
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.tgi("1.4.5"),  # profile tgi-1
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-70B-Instruct", token_secret=hub_token()
        ),
        serving=TgiOptions(num_gpus=1, max_total_tokens=4096),
    )
    with pytest.raises(ValidationError, match=r"tensor-parallel degree 4 fits on ml.p4de.24xlarge"):
        Endpoint(stack, "Endpoint", variants=[ProductionVariant(model=model, instance_type=p4de)])


def test_plan_sizes_with_the_images_profile() -> None:
    """``plan`` re-sizes each placement from the template: with its image's profile too."""

    def verdict(metadata: dict[str, object]) -> dict[str, object]:
        container = Container(
            image_value="image-uri",
            environment={"HF_MODEL_ID": "meta-llama/Meta-Llama-3-8B", "SM_NUM_GPUS": "1"},
            metadata=metadata,
        )
        report = sizing_verdict(container, InstanceType.G5_12XLARGE, 1).report
        assert report is not None
        return report

    tgi = verdict({IMAGE: {"family": "tgi", "release": "1.4.5"}})
    assert tgi["engine"] == "tgi-1"
    assert tgi["recommended_tensor_parallel_degree"] == (
        size(
            LLAMA_3_8B, InstanceType.G5_12XLARGE, engine="tgi-1"
        ).recommended_tensor_parallel_degree
    )
    assert verdict({})["engine"] == "lmi-vllm-v1"  # an unrecognized image: predict's default


def test_plan_reads_the_engines_memory_share_from_the_template() -> None:
    """A template whose LMI (vLLM) container holds Falcon 40B over four A10Gs at 2,048 tokens:
    ``plan`` said it fits (the whole memory); vLLM takes 90% and refuses to start. Raised to
    0.97 by the container's own variable, it fits."""

    def verdict(environment: dict[str, str]) -> tuple[bool | None, str]:
        container = Container(
            image_value="image-uri",
            environment={
                "HF_MODEL_ID": "tiiuae/falcon-40b",
                "OPTION_TENSOR_PARALLEL_DEGREE": "4",
                "OPTION_MAX_MODEL_LEN": "2048",
                **environment,
            },
            metadata={IMAGE: {"family": "lmi", "release": "0.33.0"}},
        )
        found = sizing_verdict(container, InstanceType.G5_12XLARGE, 4)
        return found.fits, found.summary

    fits, summary = verdict({})
    assert fits is False and summary.startswith("does not start: falcon-40b fp16 fits on 4 x")
    assert "not in the 90% of the accelerators' memory its engine (lmi-vllm-v1)" in summary
    assert summary.endswith("it needs at least 97%")
    assert verdict({"OPTION_GPU_MEMORY_UTILIZATION": "0.97"})[0] is True
    fits, summary = verdict({"OPTION_GPU_MEMORY_UTILIZATION": "97"})  # a percentage: refused
    assert fits is False and "environment['OPTION_GPU_MEMORY_UTILIZATION']='97'" in summary


def test_plan_counts_a_neuron_degree_in_neuron_cores_as_the_fit_check_does() -> None:
    """On Inferentia2 the container's degree counts NeuronCores, two per chip: the synth-time
    fit check sizes ``OPTION_TENSOR_PARALLEL_DEGREE=4`` on the 2 chips that hold it, while
    ``plan`` sized the same template on 4 chips (twice the memory). Both now size one copy
    through ``planning.sizing.size_as_configured``."""
    container = Container(
        image_value="image-uri",
        environment={
            "HF_MODEL_ID": "meta-llama/Meta-Llama-3-8B",
            "OPTION_TENSOR_PARALLEL_DEGREE": "4",
            "OPTION_MAX_MODEL_LEN": "4096",
        },
        metadata={IMAGE: {"family": "lmi-neuronx", "release": "0.33.0"}},
    )
    report = sizing_verdict(container, InstanceType.INF2_48XLARGE, None).report
    assert report is not None
    assert report["tensor_parallel_degree"] == 2  # chips: 4 NeuronCores

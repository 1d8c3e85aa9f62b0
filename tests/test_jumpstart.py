"""SageMaker JumpStart models by id: image, environment and weights per region, the licence as a
typed choice, the model role's read grant, ``plan``'s view, and the generated catalog
(regenerated offline from the pinned npm tarball)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aws_cdk import Size
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_statements
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    Endpoint,
    InferenceComponentEndpoint,
    InstanceType,
    Model,
    ModelSource,
    ProductionVariant,
    ValidationError,
)
from cdk_sagemaker_llm.catalog.jumpstart import (
    JUMPSTART_MODELS,
    JUMPSTART_SOURCE,
    merge_serving_environment,
)
from cdk_sagemaker_llm.constructs.llm_service import ExpectedTraffic, LlmService
from cdk_sagemaker_llm.constructs.llm_service_options import ServiceModel
from cdk_sagemaker_llm.planning.performance import Workload
from cdk_sagemaker_llm.planning.recommend import Slo
from cdk_sagemaker_llm.planning.service_options import SearchSpace
from cdk_sagemaker_llm.review.endpoints import plan_template

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_jumpstart_catalog.py"
LLAMA = "meta-textgeneration-llama-3-1-8b-instruct"
"""Gated (Llama 3.1 licence), weights in JumpStart's private bucket, LMI 0.29.0 image."""
MISTRAL = "huggingface-llm-mistral-7b-instruct"
"""Not gated, weights in JumpStart's public bucket."""


def _model(stack: Any, model_id: str = LLAMA, **kwargs: Any) -> Model:
    kwargs.setdefault("accept_eula", JUMPSTART_MODELS[model_id].eula is not None)
    return Model(stack, "Model", source=ModelSource.from_jumpstart(model_id, **kwargs))


def _container(template: dict[str, Any]) -> dict[str, Any]:
    (model,) = resources_of_type(template, "AWS::SageMaker::Model")
    container: dict[str, Any] = model["PrimaryContainer"]
    return container


@pytest.mark.parametrize(
    ("region", "account", "partition"),
    [("us-east-1", "763104351884", "aws"), ("af-south-1", "626614931356", "aws")],
)
def test_jumpstart_model_on_an_instance_endpoint_gets_the_regions_image_and_weights(
    region: str, account: str, partition: str
) -> None:
    stack = new_stack(region=region)
    model = _model(stack)
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.of("ml.g5.4xlarge"))],
    )
    template = assert_cfn_lint_clean(stack)
    container = _container(template)
    assert container["Image"] == (
        f"{account}.dkr.ecr.{region}.amazonaws.com/djl-inference:0.29.0-lmi11.0.0-cu124"
    )
    key = f"meta-textgeneration/{LLAMA}/artifacts/inference-prepack/v2.0.0/"
    assert container["ModelDataSource"] == {
        "S3DataSource": {
            "S3Uri": f"s3://jumpstart-private-cache-prod-{region}/{key}",
            "S3DataType": "S3Prefix",
            "CompressionType": "None",
            "ModelAccessConfig": {"AcceptEula": True},
        }
    }
    assert container["Environment"]["HF_MODEL_ID"] == "/opt/ml/model"
    assert container["Environment"]["OPTION_ENABLE_CHUNKED_PREFILL"] == "true"
    assert model.image is not None and model.image.family.value == "lmi"
    assert model.image.engine_profile.name == "lmi-vllm-v0"  # LMI 0.29 runs vLLM V0
    assert model.spec is not None and model.spec.name == "llama-3.1-8b"

    # The role reads exactly the model's prefix in JumpStart's bucket, and pulls its image.
    s3 = [s for s in role_statements(template) if any("s3:" in a for a in _actions(s))]
    assert sorted((tuple(_actions(s)), json.dumps(s["Resource"])) for s in s3) == [
        (
            ("s3:GetObject",),
            json.dumps(f"arn:{partition}:s3:::jumpstart-private-cache-prod-{region}/{key}*"),
        ),
        (
            ("s3:ListBucket",),
            json.dumps(f"arn:{partition}:s3:::jumpstart-private-cache-prod-{region}"),
        ),
    ]
    (listing,) = [s for s in s3 if _actions(s) == ["s3:ListBucket"]]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [key + "*"]}}


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


@pytest.mark.parametrize("region", ["us-west-2", "eu-central-1"])
def test_jumpstart_model_as_an_inference_component_in_two_regions(region: str) -> None:
    stack = new_stack(region=region)
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    model = _model(stack, MISTRAL)
    endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(model),
        resources=CopyResources(min_memory=Size.gibibytes(32), accelerators=1),
    )
    template = assert_cfn_lint_clean(stack)
    container = _container(template)
    assert container["Image"] == (
        f"763104351884.dkr.ecr.{region}.amazonaws.com/djl-inference:0.28.0-lmi10.0.0-cu124"
    )
    source = container["ModelDataSource"]["S3DataSource"]
    assert source["S3Uri"].startswith(f"s3://jumpstart-cache-prod-{region}/huggingface-llm/")
    assert "ModelAccessConfig" not in source  # no licence to accept

    (planned,) = plan_template("Stack", template, region=region).endpoints
    (component,) = planned.components
    assert component.model == (
        f"JumpStart {MISTRAL} {JUMPSTART_MODELS[MISTRAL].version}, no licence accepted (mistral-7b)"
    )
    assert component.image is not None and component.image.family == "lmi"


def test_plan_shows_the_jumpstart_id_version_and_accepted_licence() -> None:
    stack = new_stack()
    model = _model(stack)
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.of("ml.g5.4xlarge"))],
    )
    template = assert_cfn_lint_clean(stack)
    (planned,) = plan_template("Stack", template, region="us-west-2").endpoints
    (variant,) = planned.variants
    version = JUMPSTART_MODELS[LLAMA].version
    assert variant.model == f"JumpStart {LLAMA} {version}, licence accepted (llama-3.1-8b)"


def test_a_gated_model_without_the_licence_names_it() -> None:
    with pytest.raises(ValidationError, match=r"accept_eula\)=False.*llama3_1Eula\.txt"):
        ModelSource.from_jumpstart(LLAMA)
    with pytest.raises(ValidationError, match="accept_eula"):
        ModelSource.from_jumpstart(LLAMA, accept_eula="yes")  # type: ignore[arg-type]
    assert ModelSource.from_jumpstart(LLAMA, accept_eula=True).accept_eula


def test_an_unknown_id_suggests_the_closest_ids() -> None:
    with pytest.raises(ValidationError, match=f"did you mean {LLAMA}") as raised:
        ModelSource.from_jumpstart("meta-textgeneration-llama-3-1-8b-instruc")
    assert JUMPSTART_SOURCE in str(raised.value)


def test_a_region_where_the_model_is_not_offered_lists_where_it_is() -> None:
    stack = new_stack(region="eu-central-2")
    with pytest.raises(ValidationError, match=r"not offer .* in eu-central-2.*af-south-1"):
        _model(stack)


def test_another_version_or_instance_type_is_refused_with_what_the_catalog_holds() -> None:
    held = JUMPSTART_MODELS[LLAMA].version
    with pytest.raises(ValidationError, match=f"version={held!r}"):
        ModelSource.from_jumpstart(LLAMA, version="1.0.0", accept_eula=True)
    with pytest.raises(ValidationError, match=r"ml\.g5\.12xlarge"):
        ModelSource.from_jumpstart(LLAMA, accept_eula=True, instance_type="ml.c5.xlarge")


def test_a_jumpstart_model_is_placed_only_where_its_image_and_environment_hold() -> None:
    mistrallite = "huggingface-llm-amazon-mistrallite"  # SM_NUM_GPUS=4 on ml.g5.12xlarge only
    model = JUMPSTART_MODELS[mistrallite]
    assert model.environment_for("ml.g5.12xlarge")["SM_NUM_GPUS"] == "4"
    stack = new_stack()
    default = Model(stack, "Default", source=ModelSource.from_jumpstart(mistrallite))
    with pytest.raises(ValidationError, match=r"instance_type='ml\.g5\.12xlarge'"):
        Endpoint(
            stack,
            "Wrong",
            variants=[ProductionVariant(model=default, instance_type=InstanceType.G5_12XLARGE)],
        )
    with pytest.raises(ValidationError, match="does not host"):
        Endpoint(
            stack,
            "Cpu",
            variants=[
                ProductionVariant(model=default, instance_type=InstanceType.of("ml.c5.xlarge"))
            ],
        )
    chosen = ModelSource.from_jumpstart(mistrallite, instance_type="ml.g5.12xlarge")
    sharded = Model(stack, "Sharded", source=chosen)
    Endpoint(
        stack,
        "Right",
        variants=[ProductionVariant(model=sharded, instance_type=InstanceType.G5_12XLARGE)],
    )
    assert sharded.environment["SM_NUM_GPUS"] == "4"


def test_a_jumpstart_model_takes_no_other_image_and_others_need_one() -> None:
    stack = new_stack()
    source = ModelSource.from_jumpstart(MISTRAL)
    with pytest.raises(ValidationError, match="brings its own serving image"):
        Model(stack, "A", image=ContainerImage.lmi("0.31.0"), source=source)
    with pytest.raises(ValidationError, match="needs a serving image"):
        Model(
            stack,
            "B",
            source=ModelSource.from_hugging_face(
                "mistralai/Mistral-7B-v0.1", token_secret=hub_token()
            ),
        )


def test_a_region_agnostic_stack_is_asked_for_a_region() -> None:
    stack = new_stack(region=None, account=None)
    with pytest.raises(ValidationError, match="explicit region"):
        _model(stack, MISTRAL)


# ----- the generated catalog ---------------------------------------------------------------


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_jumpstart_catalog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


generator = _generator()
TARBALL = generator.default_cache() / generator.TARBALL
needs_tarball = pytest.mark.skipif(
    not TARBALL.is_file(),
    reason=f"the pinned {generator.TARBALL} is not cached at {TARBALL}: run scripts/setup.sh "
    "or python scripts/generate_jumpstart_catalog.py --download",
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


@needs_tarball
def test_regenerating_from_the_pinned_tarball_reproduces_the_checked_in_catalog() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stderr
    assert "matches cdklabs-generative-ai-cdk-constructs-0.1.318.tgz" in result.stdout


@needs_tarball
def test_check_fails_on_a_hand_edited_catalog(tmp_path: Path) -> None:
    stale = tmp_path / "jumpstart_catalog.json"
    document = json.loads(generator.OUTPUT.read_text())
    document["models"][LLAMA]["eula"] = None
    stale.write_text(generator.render(document))
    result = _run("--check", "--output", str(stale))
    assert result.returncode == 1
    assert "is stale" in result.stderr


def test_the_catalog_states_its_source_and_holds_text_generation_models_only() -> None:
    document = json.loads(generator.OUTPUT.read_text())
    assert document["source"]["package"] == "@cdklabs/generative-ai-cdk-constructs"
    assert document["source"]["published"] == generator.PUBLISHED
    assert document["source"]["sha256"] == generator.TARBALL_SHA256
    assert all(generator.TEXT_GENERATION.search(model_id) for model_id in JUMPSTART_MODELS)
    assert LLAMA in JUMPSTART_MODELS and MISTRAL in JUMPSTART_MODELS


def test_a_tarball_with_other_bytes_is_refused(tmp_path: Path) -> None:
    (tmp_path / generator.TARBALL).write_bytes(b"not the pinned tarball")
    with pytest.raises(ValueError, match="expected"):
        generator.pinned_tarball(tmp_path)


# ----- the commands -----------------------------------------------------------------------


def test_predict_reads_a_jumpstart_ids_architecture_and_serving_image(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cdk_sagemaker_llm.cli import main

    argv = ["predict", "--model", LLAMA, "--instance-type", "ml.g5.12xlarge"]
    workload = ["--input-tokens", "1000", "--output-tokens", "200", "--concurrency", "8"]
    assert main([*argv, *workload, "--format", "json"]) == 0
    prediction = json.loads(capsys.readouterr().out)
    # JumpStart serves it on LMI 0.29.0 (vLLM < 0.8): predict takes that engine by default.
    assert prediction["engine"] == "lmi-vllm-v0"
    assert main([*argv, *workload, "--engine", "lmi:0.38.0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["engine"] == "lmi-vllm-v1"


@pytest.mark.parametrize("command", ["predict", "size", "recommend"])
def test_a_jumpstart_image_the_container_catalog_does_not_list_is_still_its_engine(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """JumpStart serves this Mistral on TGI 2.0.3, a release the DLC catalog does not list:
    the image is JumpStart's, so it is the engine; only a typed ``--engine`` must be listed."""
    from cdk_sagemaker_llm.cli import main

    model = "huggingface-llm-mistral-7b-instruct-v3"
    image = JUMPSTART_MODELS[model].image_uri("us-east-1", "ml.g5.12xlarge")
    assert image.endswith(":2.3.0-tgi2.0.3-gpu-py310-cu121-ubuntu22.04")
    argv = {
        "predict": ["predict", "--instance-type", "ml.g5.12xlarge", "--concurrency", "8"],
        "size": ["size", "--instance-type", "ml.g5.12xlarge"],
        "recommend": ["recommend", "--max-ms-per-token", "100", "--concurrency", "4"],
    }[command]
    workload = [] if command == "size" else ["--input-tokens", "1000", "--output-tokens", "200"]
    assert main([*argv, *workload, "--model", model]) == 0
    assert "tgi-2-3" in capsys.readouterr().out
    assert main([*argv, *workload, "--model", model, "--engine", "tgi:2.0.3"]) == 2
    assert "tgi 2.0.3 is not a release the container catalog lists" in capsys.readouterr().err


def test_size_and_recommend_take_a_jumpstart_id(capsys: pytest.CaptureFixture[str]) -> None:
    from cdk_sagemaker_llm.cli import main

    assert main(["size", "--model", MISTRAL, "--instance-type", "ml.g5.12xlarge"]) == 0
    assert "mistral-7b" in capsys.readouterr().out
    recommend = ["recommend", "--model", LLAMA, "--input-tokens", "1000", "--output-tokens"]
    slo = ["200", "--max-ms-per-token", "100", "--concurrency", "4"]
    assert main([*recommend, *slo, "--instance-types", "ml.g5.12xlarge,ml.g6e.2xlarge"]) == 0
    assert "llama-3.1-8b" in capsys.readouterr().out


def test_the_commands_suggest_close_jumpstart_ids_and_ask_for_a_spec_without_a_preset(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cdk_sagemaker_llm.cli import main

    assert main(["size", "--model", LLAMA[:-1], "--instance-type", "ml.g5.12xlarge"]) == 2
    assert f"did you mean the JumpStart id {LLAMA}" in capsys.readouterr().err
    no_preset = "huggingface-llm-qwen2-5-7b-instruct"
    assert JUMPSTART_MODELS[no_preset].spec is None
    assert main(["size", "--model", no_preset, "--instance-type", "ml.g5.12xlarge"]) == 2
    assert "--parameters" in capsys.readouterr().err


TGI_MODEL = "huggingface-llm-llama-3-8b-instruct-gradient"
"""Not gated, TGI 2.4.0 image; JumpStart sets SM_NUM_GPUS, MAX_INPUT_LENGTH, MAX_TOTAL_TOKENS
and MAX_BATCH_PREFILL_TOKENS."""


def _service(stack: Any, model: ServiceModel, **kwargs: Any) -> LlmService:
    return LlmService(
        stack,
        "Service",
        model=model,
        workload=Workload(input_tokens=512, output_tokens=256),
        slo=Slo(max_ms_per_token=60),
        traffic=ExpectedTraffic.concurrency(8, minimum=1),
        **kwargs,
    )


@pytest.mark.parametrize(
    ("region", "account"), [("us-east-1", "763104351884"), ("eu-west-1", "763104351884")]
)
def test_a_service_from_a_jumpstart_id_renders_the_regions_image_weights_and_merged_environment(
    region: str, account: str
) -> None:
    stack = new_stack(region=region)
    built = _service(stack, ServiceModel.from_jumpstart(TGI_MODEL))
    jumpstart = JUMPSTART_MODELS[TGI_MODEL]
    chosen = built.decision.layout.instance_type.name
    template = assert_cfn_lint_clean(stack)

    container = _container(template)
    assert container["Image"] == jumpstart.image_uri(region, chosen)
    assert container["Image"].startswith(f"{account}.dkr.ecr.{region}.amazonaws.com/")
    source = container["ModelDataSource"]["S3DataSource"]
    assert source["S3Uri"] == f"s3://{jumpstart.bucket(region)}/{jumpstart.artifact_key}"
    assert "ModelAccessConfig" not in source  # not gated

    environment = container["Environment"]
    decided = built.model.serving.environment() if built.model.serving else {}
    for name, value in decided.items():  # the decision's layout variables win ...
        assert environment[name] == value
    assert environment["SM_NUM_GPUS"] == str(built.decision.layout.tensor_parallel_degree)
    assert environment["MAX_TOTAL_TOKENS"] == "768"  # 512 in + 256 out, not JumpStart's 4096
    assert "MAX_INPUT_LENGTH" not in environment  # ... and replace JumpStart's alias of theirs
    assert environment["MAX_INPUT_TOKENS"] == "512"
    for name, value in jumpstart.environment_for(chosen).items():  # JumpStart's stay for the rest
        if name not in decided and name != "MAX_INPUT_LENGTH":
            assert environment[name] == value
    infos = [
        e.data for e in built.model.node.metadata if e.type == "aws:cdk:info"
    ]  # each replaced JumpStart variable is reported, none silently
    assert any("MAX_INPUT_LENGTH='3072'" in str(info) for info in infos)

    statements = role_statements(template)
    reads = [s for s in statements if "s3:GetObject" in _actions(s)]
    assert [s["Resource"] for s in reads] == [
        f"arn:aws:s3:::{jumpstart.bucket(region)}/{jumpstart.artifact_key}*"
    ]


def test_a_gated_jumpstart_service_needs_the_licence_and_then_accepts_it() -> None:
    with pytest.raises(ValidationError, match="accept_eula"):
        ServiceModel.from_jumpstart(LLAMA)
    stack = new_stack(region="us-east-1")
    _service(stack, ServiceModel.from_jumpstart(LLAMA, accept_eula=True))
    template = assert_cfn_lint_clean(stack)
    source = _container(template)["ModelDataSource"]["S3DataSource"]
    assert source["ModelAccessConfig"] == {"AcceptEula": True}
    (planned,) = plan_template("Stack", template, region="us-east-1").endpoints
    (component,) = planned.components
    version = JUMPSTART_MODELS[LLAMA].version
    assert component.model.startswith(f"JumpStart {LLAMA} {version}, licence accepted")


def test_the_search_is_limited_to_the_instance_types_jumpstart_hosts_the_model_on() -> None:
    jumpstart = JUMPSTART_MODELS[TGI_MODEL]
    built = _service(new_stack(region="us-east-1"), ServiceModel.from_jumpstart(TGI_MODEL))
    considered = {o.layout.instance_type.name for o in built.recommendation.options}
    considered |= {r.instance_type for r in built.recommendation.rejected}
    assert considered and considered <= set(jumpstart.instance_types)
    with pytest.raises(ValidationError, match=r"ml\.g4dn\.xlarge"):
        _service(
            new_stack(region="us-east-1"),
            ServiceModel.from_jumpstart(TGI_MODEL),
            search=SearchSpace(instance_types=[InstanceType.G4DN_XLARGE, InstanceType.G5_2XLARGE]),
        )


def test_a_quantization_jumpstart_sets_that_the_decision_does_not_is_refused() -> None:
    merged, replaced = merge_serving_environment({"NUM_SHARD": "4", "A": "1"}, {"SM_NUM_GPUS": "2"})
    assert merged == {"A": "1", "SM_NUM_GPUS": "2"} and replaced == {"NUM_SHARD": "4"}
    with pytest.raises(ValidationError, match="HF_MODEL_QUANTIZE"):
        merge_serving_environment({"HF_MODEL_QUANTIZE": "awq"}, {"DTYPE": "float16"})


def test_a_jumpstart_model_served_by_an_image_the_service_cannot_configure_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"djl-inference:0\.27\.0-deepspeed"):
        ServiceModel.from_jumpstart("huggingface-llm-yi-1-5-34b")


def test_a_variable_set_again_in_the_service_environment_is_refused() -> None:
    model = ServiceModel.from_jumpstart(TGI_MODEL, environment={"SAGEMAKER_ENV": "0"})
    with pytest.raises(ValidationError, match="SAGEMAKER_ENV"):
        _service(new_stack(region="us-east-1"), model)


def test_the_instance_type_may_be_given_as_the_catalogs_value_or_its_name() -> None:
    """``instance_type=InstanceType.G5_12XLARGE``, as every other prop takes it, was refused
    with a 1,000-character repr and the fix "build one with str.maketrans(...)"."""
    from cdk_sagemaker_llm import InstanceType

    typed = ModelSource.from_jumpstart(
        LLAMA, accept_eula=True, instance_type=InstanceType.G5_12XLARGE
    )
    named = ModelSource.from_jumpstart(LLAMA, accept_eula=True, instance_type="ml.g5.12xlarge")
    assert typed.instance_type == named.instance_type == "ml.g5.12xlarge"
    with pytest.raises(ValidationError) as raised:
        ModelSource.from_jumpstart(LLAMA, accept_eula=True, instance_type=12)  # type: ignore[arg-type]
    assert "maketrans" not in raised.value.fix and len(str(raised.value)) < 400

"""ContainerImage: URIs per region, catalog versions, caching eligibility, pull grants."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match, Template
from conftest import new_stack, role_statements

from cdk_sagemaker_llm import ContainerFamily, ContainerImage, ValidationError
from cdk_sagemaker_llm.catalog.containers import CATALOG_SOURCE


def uri_in(region: str | None, image: ContainerImage) -> str:
    stack = new_stack(region)
    return stack.resolve(image.bind(stack, None))


def image_stack(region: str | None, image: ContainerImage) -> tuple[cdk.Stack, str]:
    """A stack that uses ``image`` in an output (templates need a resource, hence the anchor)."""
    stack = new_stack(region)
    uri = image.bind(stack, None)
    cdk.CfnWaitConditionHandle(stack, "Anchor")
    cdk.CfnOutput(stack, "ImageUri", value=uri)
    return stack, stack.resolve(uri)


LMI = ContainerImage.lmi("0.31.0")
TGI = ContainerImage.tgi("2.4.0")
PYTORCH_GPU = ContainerImage.pytorch_gpu("2.5.1")
PYTORCH_CPU = ContainerImage.pytorch_cpu("2.5.1")
TRITON = ContainerImage.triton("24.09")


@pytest.mark.parametrize(
    ("image", "region", "expected"),
    [
        (
            LMI,
            "us-west-2",
            "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124",
        ),
        (
            LMI,
            "af-south-1",
            "626614931356.dkr.ecr.af-south-1.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124",
        ),
        (
            LMI,
            "cn-north-1",
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/djl-inference:0.31.0-lmi13.0.0-cu124",
        ),
        (
            TGI,
            "us-west-2",
            "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-tgi-inference:"
            "2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.2",
        ),
        (
            TGI,
            "ap-east-1",
            "871362719292.dkr.ecr.ap-east-1.amazonaws.com/huggingface-pytorch-tgi-inference:"
            "2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.2",
        ),
        (
            TGI,
            "cn-north-1",
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/huggingface-pytorch-tgi-inference:"
            "2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.2",
        ),
        (
            PYTORCH_GPU,
            "us-west-2",
            "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-inference:2.5.1-gpu-py311",
        ),
        (
            PYTORCH_CPU,
            "eu-south-1",
            "692866216735.dkr.ecr.eu-south-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311",
        ),
        (
            PYTORCH_GPU,
            "cn-north-1",
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/pytorch-inference:2.5.1-gpu-py311",
        ),
        (
            TRITON,
            "us-west-2",
            "763104351884.dkr.ecr.us-west-2.amazonaws.com/sagemaker-tritonserver:24.09-py3",
        ),
        (
            TRITON,
            "me-south-1",
            "217643126080.dkr.ecr.me-south-1.amazonaws.com/sagemaker-tritonserver:24.09-py3",
        ),
        (
            TRITON,
            "cn-north-1",
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/sagemaker-tritonserver:24.09-py3",
        ),
        (
            ContainerImage.lmi_neuronx("0.29.0"),
            "ca-west-1",
            "204538143572.dkr.ecr.ca-west-1.amazonaws.com/djl-inference:0.29.0-neuronx-sdk2.19.1",
        ),
        (
            ContainerImage.lmi_tensorrt_llm("0.29.0"),
            "us-gov-west-1",
            "442386744353.dkr.ecr.us-gov-west-1.amazonaws.com/djl-inference:0.29.0-tensorrtllm0.11.0-cu124",
        ),
    ],
)
def test_uri_literal_per_region(image: ContainerImage, region: str, expected: str) -> None:
    assert uri_in(region, image) == expected


def test_region_agnostic_stack_uses_mapping_keyed_on_region() -> None:
    stack, uri = image_stack(None, LMI)
    template = Template.from_stack(stack).to_json()
    mapping = template["Mappings"]["DlcRegistryLmiV0310"]
    assert mapping["cn-north-1"] == {"account": "727897471807"}
    assert mapping["us-west-2"] == {"account": "763104351884"}
    assert mapping["af-south-1"] == {"account": "626614931356"}
    rendered = json.dumps(uri)
    assert '"Fn::FindInMap": ["DlcRegistryLmiV0310", {"Ref": "AWS::Region"}, "account"]' in rendered
    assert '{"Ref": "AWS::URLSuffix"}' in rendered
    assert "/djl-inference:0.31.0-lmi13.0.0-cu124" in rendered


def test_region_agnostic_mapping_lists_only_published_regions() -> None:
    stack, _ = image_stack(None, ContainerImage.lmi_neuronx("0.29.0"))
    mapping = Template.from_stack(stack).to_json()["Mappings"]["DlcRegistryLmiNeuronxV0290"]
    assert "us-west-2" in mapping
    assert "af-south-1" not in mapping


def test_unknown_short_version_lists_known_ones() -> None:
    with pytest.raises(ValidationError) as error:
        ContainerImage.lmi("0.99.0")
    message = str(error.value)
    assert "ContainerImage.lmi(version)='0.99.0'" in message
    assert "0.31.0" in message and "0.29.0" in message
    assert "full image tag" in message


def test_full_tag_accepted_with_warning_when_not_in_catalog() -> None:
    image = ContainerImage.lmi("0.39.0-lmi30.0.0-cu130")
    stack, uri = image_stack("us-west-2", image)
    assert (
        uri == "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.39.0-lmi30.0.0-cu130"
    )
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert any("not in the library's catalog" in str(w.entry.data) for w in warnings)
    assert image.container_caching_eligible


def test_known_full_tag_gives_no_warning() -> None:
    stack, _ = image_stack("us-west-2", ContainerImage.lmi("0.31.0-lmi13.0.0-cu124"))
    assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []


@pytest.mark.parametrize(
    ("image", "region"),
    [
        (ContainerImage.lmi_neuronx("0.29.0"), "af-south-1"),
        (TRITON, "us-gov-west-1"),
    ],
)
def test_region_without_the_image_is_a_synth_error(image: ContainerImage, region: str) -> None:
    with pytest.raises(ValidationError) as error:
        uri_in(region, image)
    message = str(error.value)
    assert region in message and "does not publish" in message
    assert "from_ecr_repository" in message


def test_a_mistyped_region_is_named_as_a_typo() -> None:
    """``us-esat-1`` was told the image is not published there, listing 38 regions."""
    with pytest.raises(ValidationError, match=r"not an AWS region .*did you mean .*'us-east-1'"):
        uri_in("us-esat-1", LMI)
    with pytest.raises(ValidationError, match="not an AWS region"):
        uri_in("xx-nowhere-1", LMI)


@pytest.mark.parametrize(
    ("image", "eligible"),
    [
        # The 2026 rule (catalog/container_caching.py): any image in Amazon ECR, old DLC
        # releases included; images from other registries are not cached.
        (ContainerImage.lmi("0.28.0"), True),
        (ContainerImage.lmi("0.38.0"), True),
        (ContainerImage.tgi("2.3.1"), True),
        (ContainerImage.tgi_neuronx("0.0.25"), True),
        (ContainerImage.pytorch_cpu("2.5.1"), True),
        (ContainerImage.triton("24.05"), True),
        (ContainerImage.from_uri("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/llm:1"), True),
        (ContainerImage.from_uri("ghcr.io/huggingface/text-generation-inference:3.3.6"), False),
        (ContainerImage.from_uri("docker.io/vllm/vllm-openai:latest"), False),
    ],
)
def test_container_caching_eligibility(image: ContainerImage, eligible: bool) -> None:
    assert image.container_caching_eligible is eligible
    assert image.hosted_in_ecr is eligible


def test_from_uri_recognizes_deep_learning_containers() -> None:
    image = ContainerImage.from_uri(
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.29.0-tensorrtllm0.11.0-cu124"
    )
    assert image.family is ContainerFamily.LMI_TENSORRT_LLM
    assert image.container_caching_eligible
    own = ContainerImage.from_uri(
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124"
    )
    assert own.family is ContainerFamily.CUSTOM
    assert own.container_caching_eligible  # any ECR image is cached since 2026


def test_from_uri_grants_pull_on_exactly_that_repository() -> None:
    stack = new_stack()
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    image = ContainerImage.from_uri("111122223333.dkr.ecr.us-west-2.amazonaws.com/team/llm:1.2")
    assert image.bind(stack, role) == "111122223333.dkr.ecr.us-west-2.amazonaws.com/team/llm:1.2"
    statements = _statements(stack)
    assert {
        "Action": [
            "ecr:BatchCheckLayerAvailability",
            "ecr:BatchGetImage",
            "ecr:GetDownloadUrlForLayer",
        ],
        "Effect": "Allow",
        "Resource": "arn:aws:ecr:us-west-2:111122223333:repository/team/llm",
    } in statements


def test_from_uri_rejects_garbage() -> None:
    with pytest.raises(ValidationError, match=r"from_uri\(uri\)='not an image'"):
        ContainerImage.from_uri("not an image")


def test_from_ecr_repository_grants_pull_to_the_role() -> None:
    stack = new_stack()
    repository = ecr.Repository(stack, "Repo", repository_name="my-llm")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    image = ContainerImage.from_ecr_repository(repository, "v3")
    uri = stack.resolve(image.bind(stack, role))
    assert "my-llm" in json.dumps(uri) or "Repo" in json.dumps(uri)
    actions = {a for s in _statements(stack) for a in _as_list(s["Action"])}
    assert {"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"} <= actions
    assert image.container_caching_eligible


def test_dlc_pull_grant_is_scoped_to_the_dlc_repository() -> None:
    stack = new_stack("cn-north-1")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    LMI.bind(stack, role)
    resources = [s["Resource"] for s in _statements(stack)]
    assert "arn:aws-cn:ecr:cn-north-1:727897471807:repository/djl-inference" in resources


def test_known_versions_are_sorted() -> None:
    versions = ContainerImage.known_versions(ContainerFamily.TRITON)
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    assert "24.09" in versions


@pytest.mark.parametrize(
    ("family", "newest", "tag"),
    [
        (ContainerFamily.LMI, "0.38.0", "0.38.0-lmi29.0.0-cu130"),
        (ContainerFamily.LMI_TENSORRT_LLM, "0.33.0", "0.33.0-tensorrtllm0.21.0-cu128"),
        (ContainerFamily.LMI_NEURONX, "0.29.0", "0.29.0-neuronx-sdk2.19.1"),
        (ContainerFamily.TGI, "3.3.6", "2.7.0-tgi3.3.6-gpu-py311-cu124-ubuntu22.04"),
        (ContainerFamily.TGI_NEURONX, "0.3.0", "2.7.0-optimum3.3.6-neuronx-py310-ubuntu22.04"),
        (ContainerFamily.PYTORCH_GPU, "2.6.0", "2.6.0-gpu-py312"),
        (ContainerFamily.PYTORCH_CPU, "2.6.0", "2.6.0-cpu-py312"),
        (ContainerFamily.TRITON, "26.05", "26.05-py3"),
    ],
)
def test_newest_release_of_each_line_from_the_pinned_sdk(
    family: ContainerFamily, newest: str, tag: str
) -> None:
    assert ContainerImage.known_versions(family)[-1] == newest
    factory = getattr(ContainerImage, family.name.lower())
    assert uri_in("us-east-1", factory(newest)).endswith(f":{tag}")


def test_catalog_names_its_source() -> None:
    assert CATALOG_SOURCE == "sagemaker-core 2.27.0"


def test_regions_are_per_release() -> None:
    """Triton 26.05 is published in mx-central-1, 24.09 is not (the SDK's map)."""
    assert uri_in("mx-central-1", ContainerImage.triton("26.05")).startswith("637423239942.")
    assert not ContainerImage.triton("24.09").available_in("mx-central-1")
    with pytest.raises(ValidationError, match="does not publish"):
        uri_in("mx-central-1", ContainerImage.triton("24.09"))


def test_region_agnostic_stack_maps_each_release_separately() -> None:
    stack = new_stack(None)
    ContainerImage.triton("24.09").bind(stack, None)
    ContainerImage.triton("26.05").bind(stack, None)
    cdk.CfnWaitConditionHandle(stack, "Anchor")
    mappings = Template.from_stack(stack).to_json()["Mappings"]
    assert "mx-central-1" in mappings["DlcRegistryTritonV2605"]
    assert "mx-central-1" not in mappings["DlcRegistryTritonV2409"]


def _statements(stack: cdk.Stack) -> list[dict]:
    return role_statements(Template.from_stack(stack).to_json())


def _as_list(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def test_known_versions_accept_the_family_value() -> None:
    assert ContainerImage.known_versions("lmi") == ContainerImage.known_versions(
        ContainerFamily.LMI
    )
    assert ContainerImage.known_versions("lmi")
    assert ContainerImage.known_versions("TGI_NEURONX") == ContainerImage.known_versions(
        ContainerFamily.TGI_NEURONX
    )


def test_known_versions_of_an_unknown_family_is_our_error() -> None:
    with pytest.raises(ValidationError, match=r"family='sglang'.*ContainerFamily.LMI"):
        ContainerImage.known_versions("sglang")


@pytest.mark.parametrize(
    ("family", "named"),
    [
        (ContainerFamily.LMI, ContainerImage.lmi),
        (ContainerFamily.TGI_NEURONX, ContainerImage.tgi_neuronx),
        (ContainerFamily.VLLM, ContainerImage.vllm),
    ],
)
def test_any_catalog_line_is_served_by_family_as_its_named_factory_serves_it(
    family: ContainerFamily, named: object
) -> None:
    newest = ContainerImage.known_versions(family)[-1]
    by_family = ContainerImage.of(family, newest)
    assert callable(named)
    assert uri_in("us-west-2", by_family) == uri_in("us-west-2", named(newest))
    assert by_family.family is family


def test_a_family_without_a_catalog_line_is_refused_naming_the_lines_and_from_uri() -> None:
    with pytest.raises(ValidationError) as raised:
        ContainerImage.of(ContainerFamily.CUSTOM, "1.0.0")
    assert raised.value.prop == "ContainerImage.of(family)"
    assert raised.value.value == "custom"
    assert "ContainerFamily.LMI" in raised.value.fix and "from_uri" in raised.value.fix


def test_every_family_has_one_row_of_facts_and_every_request_format_is_a_payload_format() -> None:
    from cdk_sagemaker_llm.benchmarking.payload import PayloadFormat
    from cdk_sagemaker_llm.catalog.containers import DLC_LINES, FAMILY_FACTS

    assert set(FAMILY_FACTS) == set(ContainerFamily)
    for family, facts in FAMILY_FACTS.items():
        assert (family in DLC_LINES) == (facts.tag_pattern is not None), family
        if facts.request_format is not None:
            assert PayloadFormat(facts.request_format).value == facts.request_format


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ("0.38.0 ", "pass the short version '0.38.0'"),
        ("v0.38.0", "pass the short version '0.38.0'"),
        ("0.38.0-lmi29.0.0-cu130:extra", "pass a short version such as"),
        ("0.29.0-neuronx-sdk2.19.1", "use ContainerImage.lmi_neuronx('0.29.0-neuronx-sdk2.19.1')"),
    ],
)
def test_a_malformed_or_misplaced_tag_is_refused_with_what_was_meant(given: str, fix: str) -> None:
    """Anything that was not a short version became the tag with only a warning: a trailing
    space, a 'v', a second ':' (an image that cannot exist), another line's tag."""
    with pytest.raises(ValidationError) as raised:
        ContainerImage.lmi(given)
    assert fix in raised.value.fix


def test_an_ecr_image_of_another_region_is_refused() -> None:
    """SageMaker pulls a model's image only from its own region; a us-east-1 URI in an
    eu-west-1 stack was accepted (and recognized as LMI) and failed at deploy."""
    uri = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124"
    with pytest.raises(
        ValidationError, match=r"in us-east-1, .* only from its own region"
    ) as raised:
        uri_in("eu-west-1", ContainerImage.from_uri(uri))
    assert "replicate the image to eu-west-1" in raised.value.fix
    assert uri_in("us-east-1", ContainerImage.from_uri(uri)) == uri


def test_an_ecr_repository_of_another_region_is_refused() -> None:
    """A repository imported from another region's ARN has a URI with the URL-suffix token,
    so the URI check skipped it; its ``env.region`` says where it is."""
    stack = new_stack(region="us-east-1")
    foreign = ecr.Repository.from_repository_arn(
        stack, "R", "arn:aws:ecr:eu-west-1:123456789012:repository/my-llm"
    )
    with pytest.raises(ValidationError, match=r"in eu-west-1, .* only from its own region"):
        ContainerImage.from_ecr_repository(foreign, "1.0").bind(stack, None)
    local = ecr.Repository.from_repository_arn(
        stack, "L", "arn:aws:ecr:us-east-1:123456789012:repository/my-llm"
    )
    ContainerImage.from_ecr_repository(local, "1.0").bind(stack, None)
    ContainerImage.from_ecr_repository(ecr.Repository(stack, "Own"), "1.0").bind(stack, None)


@pytest.mark.parametrize(
    ("factory", "tag", "meant"),
    [
        # newer than the catalog: a CUDA LMI tag to the NeuronX factory, and back
        ("lmi_neuronx", "0.39.0-lmi30.0.0-cu130", "lmi"),
        ("lmi", "0.30.0-neuronx-sdk2.20.1", "lmi_neuronx"),
        ("lmi", "0.34.0-tensorrtllm0.22.0-cu128", "lmi_tensorrt_llm"),
        ("tgi", "2.7.0-optimum3.3.7-neuronx-py310-ubuntu22.04", "tgi_neuronx"),
        ("tgi_neuronx", "2.7.0-tgi3.3.7-gpu-py311-cu124-ubuntu22.04", "tgi"),
        ("pytorch_cpu", "2.7.1-gpu-py312-cu128-ubuntu22.04-sagemaker", "pytorch_gpu"),
    ],
)
def test_a_new_tag_of_another_line_is_refused_naming_its_factory(
    factory: str, tag: str, meant: str
) -> None:
    """A tag the catalog does not list yet was taken for the factory's family whatever it
    said: a CUDA image given to lmi_neuronx passed as a Neuron image (and was placed on
    ml.inf2, where it cannot run), a NeuronX image given to lmi as a GPU one."""
    with pytest.raises(ValidationError) as raised:
        getattr(ContainerImage, factory)(tag)
    assert raised.value.fix == f"use ContainerImage.{meant}({tag!r})"
    assert tag in str(raised.value)


def test_a_new_tag_no_line_recognizes_is_still_used_as_given() -> None:
    """An older tag scheme (LMI's DeepSpeed images) is none of the lines': kept, with the
    unknown-tag warning at bind."""
    image = ContainerImage.lmi("0.26.0-deepspeed0.12.6-cu121")
    assert image.family is ContainerFamily.LMI and image.tag == "0.26.0-deepspeed0.12.6-cu121"


@pytest.mark.parametrize(
    ("image", "region"),
    [
        # the SDK builds Triton's CPU tag as "<version>-py3-cpu"; 24.09 is not in mx-central-1
        (ContainerImage.triton("24.09-py3-cpu"), "mx-central-1"),
        (ContainerImage.triton("24.09-py3-cpu"), "ap-south-2"),
        # the long form of a listed PyTorch release; 2.5.1 is not in me-west-1 (2.6.0 is)
        (ContainerImage.pytorch_gpu("2.5.1-gpu-py311-cu124-ubuntu22.04-sagemaker"), "me-west-1"),
    ],
)
def test_another_tag_of_a_listed_release_is_published_where_that_release_is(
    image: ContainerImage, region: str
) -> None:
    """A tag the catalog does not list but whose release it does was resolved with the newest
    release's registries: the URI of an image that does not exist in the region, with only
    the unknown-tag warning."""
    assert not image.available_in(region)
    with pytest.raises(ValidationError, match="does not publish"):
        uri_in(region, image)


def test_another_tag_of_a_listed_release_maps_that_releases_regions() -> None:
    stack = new_stack(None)
    ContainerImage.triton("24.09-py3-cpu").bind(stack, None)
    cdk.CfnWaitConditionHandle(stack, "Anchor")
    mappings = Template.from_stack(stack).to_json()["Mappings"]
    assert list(mappings) == ["DlcRegistryTritonV2409"]
    assert "mx-central-1" not in mappings["DlcRegistryTritonV2409"]
    assert uri_in("us-east-1", ContainerImage.triton("24.09-py3-cpu")) == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tritonserver:24.09-py3-cpu"
    )

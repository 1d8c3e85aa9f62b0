"""Deploy-time tokens: every number or string prop accepts a CDK token where
CloudFormation would. A check that cannot run on a token is skipped and synth says so in an
info message; no check ever compares a token's encoded value (``-1.888e+289``). A synth-time
decision that needs a concrete number says so."""

from __future__ import annotations

import types
import typing
from typing import Any

import aws_cdk as cdk
import pytest
from conftest import new_stack
from test_hostile_props import PUBLIC_CLASSES, _baselines, _props

import cdk_sagemaker_llm
from cdk_sagemaker_llm import ComponentModel, CopyResources, ManagedInstanceScaling, ValidationError
from cdk_sagemaker_llm.prop_types import _resolve


def _scalars(annotation: Any) -> set[type]:
    """The scalar types (int, float, str) an annotation accepts."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return {t for option in typing.get_args(annotation) for t in _scalars(option)}
    return {annotation} & {int, float, str}


def _token_props() -> list[tuple[str, str, type]]:
    found = []
    for name in PUBLIC_CLASSES:
        init = getattr(cdk_sagemaker_llm, name).__init__
        hints = _resolve(getattr(init, "__wrapped__", init))
        for prop, annotation in hints.items():
            if prop in ("scope", "id"):
                continue
            scalars = _scalars(annotation)
            if scalars:
                found.append((name, prop, float if scalars & {int, float} else str))
    return found


TOKEN_PROPS = _token_props()


@pytest.fixture(scope="module")
def baselines() -> dict[str, Any]:
    return _baselines(new_stack())


def _token(kind: type) -> Any:
    stack = cdk.Stack()
    parameter = cdk.CfnParameter(stack, "P", type="Number" if kind is float else "String")
    return parameter.value_as_number if kind is float else parameter.value_as_string


@pytest.mark.parametrize(("name", "prop", "kind"), TOKEN_PROPS, ids=lambda v: str(v))
def test_a_token_is_accepted_or_needs_a_concrete_value(
    baselines: dict[str, Any], name: str, prop: str, kind: type
) -> None:
    if name in ONE_PER_TARGET:
        baselines = _baselines(new_stack())
    call, props = baselines[name]()
    token = _token(kind)
    try:
        call(**{**props, prop: token})
    except ValidationError as error:
        message = str(error)
        assert "e+289" not in message and "Token[" not in message, message
        assert "concrete" in message or (name, prop) in REFUSED_WHATEVER_THE_VALUE, message


ONE_PER_TARGET = {"ComponentScaling", "VariantScaling", "AsyncScaling", "ServerlessScaling"}
"""Scaling constructs: one per scalable target, so each case builds its own baselines."""

REFUSED_WHATEVER_THE_VALUE = {
    ("InferenceComponent", "lora_rank"): "the baseline component has no base_component",
    ("Arrival", "kind"): "names the process (Arrival.poisson() or Arrival.constant())",
    ("EngineRelease", "family"): "a calibration's engine, compared with the known families",
    ("EngineRelease", "version"): "a calibration's engine release, compared at synth",
}
"""Props the baseline refuses for a reason other than the value (the token is not shown)."""


def test_a_number_token_on_max_instance_count_synthesizes_with_an_info_message() -> None:
    from aws_cdk.assertions import Annotations, Match, Template

    from cdk_sagemaker_llm import InferenceComponentEndpoint, InstanceType

    stack = new_stack()
    most = cdk.CfnParameter(stack, "MostInstances", type="Number", default=2)
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=most.value_as_number),
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        Match.object_like(
            {
                "ProductionVariants": [
                    Match.object_like(
                        {
                            "ManagedInstanceScaling": Match.object_like(
                                {"MaxInstanceCount": {"Ref": "MostInstances"}}
                            )
                        }
                    )
                ]
            }
        ),
    )
    infos = Annotations.from_stack(stack).find_info(
        f"/{endpoint.node.path}",
        Match.string_like_regexp("max_instance_count is a deploy-time token"),
    )
    assert infos, "no info message says which check was skipped"


@pytest.mark.parametrize(
    ("call", "prop"),
    [
        (lambda t: cdk_sagemaker_llm.Slo(max_ms_per_token=t), "max_ms_per_token"),
        (
            lambda t: cdk_sagemaker_llm.ExpectedTraffic.requests_per_second(t),
            "ExpectedTraffic.requests_per_second(peak)",
        ),
        (
            lambda t: cdk_sagemaker_llm.ExpectedTraffic.concurrency(t),
            "ExpectedTraffic.concurrency(peak)",
        ),
    ],
)
def test_a_planning_number_as_a_token_says_a_concrete_number_is_needed(
    call: Any, prop: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        call(_token(float))
    assert raised.value.prop == prop
    assert "needs a concrete number" in str(raised.value), str(raised.value)
    assert "e+289" not in str(raised.value)


def test_an_error_never_shows_a_tokens_encoded_value() -> None:
    error = ValidationError("counts", (1, _token(float)), "must be ordered", "fix them")
    assert str(error) == "counts=(1, <deploy-time token>): must be ordered. Fix: fix them"
    assert "Token[" not in str(ValidationError("name", _token(str), "bad", "fix"))


def test_the_capacity_check_is_skipped_on_a_token_max_instance_count() -> None:
    from aws_cdk import Size
    from aws_cdk.assertions import Annotations, Match

    from cdk_sagemaker_llm import ContainerImage, InferenceComponentEndpoint, InstanceType

    stack = new_stack()
    most = cdk.CfnParameter(stack, "MostInstances", type="Number", default=2)
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=most.value_as_number),
    )
    component = endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.from_image(ContainerImage.lmi("0.31.0")),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(8)),
        copy_count=6,
    )
    infos = Annotations.from_stack(stack).find_info(
        f"/{component.node.path}", Match.string_like_regexp("whether the instances hold every copy")
    )
    assert infos


WRONG_PLACE_PROPS = [
    (name, prop) for name in PUBLIC_CLASSES for prop in _props(name) if name not in ONE_PER_TARGET
]


@pytest.mark.parametrize(("name", "prop"), WRONG_PLACE_PROPS, ids=lambda v: str(v))
def test_a_token_of_any_kind_in_any_prop_is_accepted_or_our_error_without_its_value(
    baselines: dict[str, Any], name: str, prop: str
) -> None:
    """A number or string token given to any prop (a collection, a Duration, a bucket ...)
    synthesizes or is our ValidationError, and neither the message nor the fix shows the
    token's encoded value. Before, a token where a list or mapping goes passed the type check
    and failed inside the construct ("'float' object is not iterable"), and fixes read
    ``Size.mebibytes(-1.888e+289)``."""
    call, props = baselines[name]()
    for kind in (float, str):
        try:
            call(**{**props, prop: _token(kind)})
        except ValidationError as error:
            message = str(error)
            assert "e+289" not in message and "Token[" not in message, message


def test_scale_to_zero_on_a_token_min_instance_count_is_not_compared() -> None:
    """The endpoint's min_instance_count as a CfnParameter (0 at deploy): scale to zero was
    refused at synth because the token's encoded value is not 0; now the check is skipped
    with an info message on the scaling."""
    from aws_cdk import Size
    from aws_cdk.assertions import Annotations, Match

    from cdk_sagemaker_llm import (
        ComponentScaling,
        ContainerImage,
        InferenceComponentEndpoint,
        InstanceType,
    )

    stack = new_stack()
    least = cdk.CfnParameter(stack, "LeastInstances", type="Number", default=0)
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(
            min_instance_count=least.value_as_number, max_instance_count=2
        ),
    )
    component = endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.from_image(ContainerImage.lmi("0.31.0")),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(8)),
    )
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_concurrent_requests(target=4)
    infos = Annotations.from_stack(stack).find_info(
        f"/{scaling.node.path}", Match.string_like_regexp("min_instance_count is a deploy-time")
    )
    assert infos, "no info message says the scale-to-zero check was skipped"

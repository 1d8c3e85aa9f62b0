"""Every public class and function the package exports checks its arguments' types at call
time: constructors, props classes, static factories, class methods and public methods. A wrong
type is a ValidationError naming the argument, never a raw ``AttributeError`` or jsii
``TypeError`` from deep inside a construct."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

from hub import hub_token

import cdk_sagemaker_llm
from cdk_sagemaker_llm.prop_types import is_typed, unresolved_arguments

PACKAGE = "cdk_sagemaker_llm"

NOT_CALLED_BY_USERS: dict[str, str] = {
    "ValidationError": "the library's error: the library raises it, users catch it",
    "IEndpoint": "an interface (typing.Protocol): nothing to call",
    "IInferenceComponent": "an interface (typing.Protocol): nothing to call",
    "DEFAULT_PRICE_LIST": "a value (the library's price list), not a callable",
}
"""Exports that are not called with arguments, and why."""


def _ours(function: Any) -> bool:
    return getattr(function, "__module__", "").startswith(PACKAGE)


def _class_callables(name: str, cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    init = cls.__init__
    if _ours(init) and not issubclass(cls, Enum):
        yield f"{name}()", init
    seen: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith(PACKAGE):
            continue
        for member_name, member in vars(base).items():
            if member_name.startswith("_") or member_name in seen:
                continue
            function = getattr(member, "__func__", member)
            if inspect.isfunction(function) and _ours(function):
                seen.add(member_name)
                yield f"{name}.{member_name}", function


def public_callables() -> dict[str, Callable[..., Any]]:
    """Every public constructor, factory, method and function reachable from the package's
    exports, by the name a user writes."""
    found: dict[str, Callable[..., Any]] = {}
    for name in cdk_sagemaker_llm.__all__:
        if name in NOT_CALLED_BY_USERS:
            continue
        value = getattr(cdk_sagemaker_llm, name)
        if inspect.ismodule(value):
            for function_name, function in vars(value).items():
                if function_name.startswith("_") or getattr(function, "__module__", None) != (
                    value.__name__
                ):
                    continue  # private, or imported from elsewhere
                if inspect.isfunction(function):
                    found[f"{name}.{function_name}"] = function
                elif isinstance(function, type) and function_name not in cdk_sagemaker_llm.__all__:
                    found.update(_class_callables(f"{name}.{function_name}", function))
        elif isinstance(value, type):
            found.update(_class_callables(name, value))
        else:
            raise AssertionError(f"{name}: neither a class nor a module; list it as exempt")
    return found


def test_every_public_callable_checks_its_argument_types() -> None:
    callables = public_callables()
    unchecked = sorted(name for name, function in callables.items() if not is_typed(function))
    assert unchecked == [], f"{len(unchecked)} of {len(callables)} unchecked: {unchecked}"


def test_every_annotation_of_a_checked_callable_resolves() -> None:
    """An annotation naming a type its module imports only for type checkers is left
    unchecked; there must be none."""
    unresolved = {
        name: unresolved_arguments(function)
        for name, function in public_callables().items()
        if unresolved_arguments(function)
    }
    assert unresolved == {}


def test_the_count_of_public_callables() -> None:
    """The coverage test sees the whole surface (printed with -s)."""
    callables = public_callables()
    print(f"\n{len(callables)} public callables checked")
    assert len(callables) > 150


def _once_raw_examples() -> list[tuple[str, Callable[[], Any], str]]:
    """Wrong types that once raised a raw ``AttributeError`` or ``TypeError``:
    (what, the call, the prop the error must name)."""
    from aws_cdk import Size
    from conftest import new_stack

    from cdk_sagemaker_llm import (
        AsyncInference,
        ComponentScheduling,
        ComponentSpecification,
        ContainerImage,
        ContainerMetrics,
        ExpectedTraffic,
        InstancePool,
        InstanceType,
        LayoutOverrides,
        LlmService,
        ModelSource,
        PrefixAwareRouting,
        ScaleInPolicy,
        SearchSpace,
        ServerlessConfig,
        ServiceModel,
        Slo,
        Workload,
    )

    def service(**changed: Any) -> None:
        props: dict[str, Any] = dict(
            model=ServiceModel.from_source(
                ModelSource.from_hugging_face(
                    "meta-llama/Llama-3.1-8B-Instruct", token_secret=hub_token()
                ),
                image=ContainerImage.lmi("0.31.0"),
            ),
            slo=Slo(max_ms_per_token=60),
            traffic=ExpectedTraffic.concurrency(8),
            workload=Workload(input_tokens=512, output_tokens=128),
        )
        LlmService(new_stack(), "Service", **{**props, **changed})

    return [
        ("LlmService slo as a number", lambda: service(slo=50), "slo"),
        ("LlmService traffic as a number", lambda: service(traffic=4), "traffic"),
        ("LlmService workload as a number", lambda: service(workload=512), "workload"),
        ("Workload input_tokens as text", lambda: Workload("512", 128), "input_tokens"),
        (
            "SearchSpace instance types as names",
            lambda: SearchSpace(instance_types=["ml.g5.2xlarge"]),
            "instance_types[0]",
        ),
        (
            "LayoutOverrides degree as text",
            lambda: LayoutOverrides(tensor_parallel_degree="2"),
            "tensor_parallel_degree",
        ),
        ("Slo as text", lambda: Slo(max_ms_per_token="50"), "max_ms_per_token"),
        (
            "ExpectedTraffic peak as text",
            lambda: ExpectedTraffic.requests_per_second("4"),
            "ExpectedTraffic.requests_per_second(peak)",
        ),
        ("AsyncInference bucket name", lambda: AsyncInference(bucket="results"), "bucket"),
        (
            "ServerlessConfig memory as a number",
            lambda: ServerlessConfig(memory_size=4096, max_concurrency=2),
            "memory_size",
        ),
        (
            "InstancePool type as text",
            lambda: InstancePool(instance_type="ml.g5.2xlarge", priority=1),
            "instance_type",
        ),
        (
            "ScaleInPolicy strategy as text",
            lambda: ScaleInPolicy(strategy="IDLE_RELEASE"),
            "strategy",
        ),
        (
            "ComponentSpecification memory as a number",
            lambda: ComponentSpecification(
                instance_type=InstanceType.G5_2XLARGE,
                min_memory=8192,
            ),
            "min_memory",
        ),
        (
            "PrefixAwareRouting length as text",
            lambda: PrefixAwareRouting(prefix_length="2048", concurrency_threshold=8),
            "prefix_length",
        ),
        (
            "ComponentScheduling placement as text",
            lambda: ComponentScheduling(placement="SPREAD"),
            "placement",
        ),
        (
            "ContainerMetrics frequency as a number",
            lambda: ContainerMetrics(publish_frequency=60),
            "publish_frequency",
        ),
        (
            "ModelSource.from_s3 given a bucket name",
            lambda: ModelSource.from_s3("my-models", "llama/"),
            "ModelSource.from_s3(bucket)",
        ),
        (
            "ServerlessConfig memory_size in GiB",
            lambda: ServerlessConfig(memory_size=Size, max_concurrency=1),
            "memory_size",
        ),
    ]


def test_the_once_raw_examples_are_our_error_naming_the_prop() -> None:
    from cdk_sagemaker_llm import ValidationError

    for what, call, prop in _once_raw_examples():
        try:
            call()
        except ValidationError as error:
            assert error.prop == prop, (what, error.prop)
            assert error.fix and f"{prop}=" in str(error), what
        else:
            raise AssertionError(f"{what}: accepted")


def test_a_bucket_name_for_a_bucket_says_how_to_pass_the_bucket() -> None:
    from cdk_sagemaker_llm import ModelSource, ValidationError

    try:
        ModelSource.from_s3("s3://my-models/llama/", "weights/")
    except ValidationError as error:
        assert "s3.Bucket.from_bucket_name(self, 'Weights', 'my-models')" in error.fix
    else:
        raise AssertionError("accepted")

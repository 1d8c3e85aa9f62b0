"""Hostile input: random construct props either synthesize a cfn-lint-clean template or raise
the library's own ValidationError with a fix; never a raw jsii or CloudFormation error.

Run more cases with ``HYPOTHESIS_MAX_EXAMPLES=500 pytest tests/test_hostile_props.py -s``; the
summary line counts accepted and rejected combinations.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Size
from aws_cdk.assertions import Template
from conftest import cfn_lint_findings, new_stack
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cdk_sagemaker_llm import (
    ContainerImage,
    DataType,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstanceType,
    LmiOptions,
    Model,
    TgiOptions,
    ValidationError,
)
from cdk_sagemaker_llm.catalog.instance_types import CATALOG

MAX_EXAMPLES = int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "60"))
OUTCOMES: Counter[str] = Counter()


def mostly(
    usual: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Usual values nine times in ten, so that with a dozen props drawn, valid combinations
    stay common enough to synthesize and lint."""
    # (one_of would merge identical branches; a middle value avoids the bias to boundaries)
    return st.integers(min_value=0, max_value=9).flatmap(lambda n: hostile if n == 5 else usual)


names = mostly(st.none(), st.text(alphabet="abcXYZ019-_ .", min_size=0, max_size=70))
small_ints = mostly(st.sampled_from([1, 2, 4]), st.integers(min_value=-2, max_value=20))
optional_ints = mostly(
    st.one_of(st.none(), st.integers(min_value=1024, max_value=8192)),
    st.integers(min_value=-1, max_value=70_000),
)
# Strategies draw plain data (names, numbers, dicts); build() makes the objects, so a failing
# example prints as readable data.
instance_types = st.sampled_from([*CATALOG, "ml.c7i.4xlarge"])
IMAGES = {
    "lmi": lambda: ContainerImage.lmi("0.31.0"),
    "lmi-neuronx": lambda: ContainerImage.lmi_neuronx("0.29.0"),
    "tgi": lambda: ContainerImage.tgi("2.4.0"),
    "pytorch-cpu": lambda: ContainerImage.pytorch_cpu("2.5.1"),
    "own": lambda: ContainerImage.from_uri("111122223333.dkr.ecr.us-west-2.amazonaws.com/own:1"),
}
images = st.sampled_from(sorted(IMAGES))
dtypes = st.one_of(st.none(), st.sampled_from([d.name for d in DataType]))
lmi_options = st.fixed_dictionaries(
    {"kind": st.just("lmi")},
    optional=dict(
        tensor_parallel_degree=st.one_of(st.none(), small_ints),
        max_rolling_batch_size=optional_ints,
        max_rolling_batch_prefill_tokens=optional_ints,
        max_model_len=optional_ints,
        continuous_batching=st.booleans(),
        dtype=dtypes,
    ),
)
tgi_options = st.fixed_dictionaries(
    {"kind": st.just("tgi")},
    optional=dict(
        num_gpus=st.one_of(st.none(), small_ints),
        max_input_tokens=optional_ints,
        max_total_tokens=optional_ints,
        max_batch_total_tokens=optional_ints,
        max_concurrent_requests=optional_ints,
        dtype=dtypes,
    ),
)
seconds = st.one_of(st.none(), st.integers(min_value=0, max_value=5000))


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "region": draw(
            mostly(
                st.sampled_from(["us-west-2", "eu-central-1"]),
                st.sampled_from(["cn-north-1", "af-south-1"]),
            )
        ),
        "endpoint": {
            "instance_type": draw(instance_types),
            "initial_instance_count": draw(
                mostly(st.just(1), st.integers(min_value=-1, max_value=4))
            ),
            "min_instance_count": draw(mostly(st.just(1), st.integers(min_value=-1, max_value=3))),
            "max_instance_count": draw(
                mostly(st.sampled_from([None, 2]), st.integers(min_value=0, max_value=5))
            ),
            "endpoint_name": draw(names),
            "volume_size": draw(mostly(st.none(), st.integers(min_value=0, max_value=600))),
            "startup": draw(mostly(st.none(), seconds)),
        },
        "model": {
            "image": draw(images),
            "serving": draw(mostly(st.none(), st.one_of(lmi_options, tgi_options))),
            "model_name": draw(names),
        },
        "component": {
            "accelerators": draw(mostly(st.none(), small_ints)),
            "min_memory_mib": draw(
                mostly(
                    st.integers(min_value=1024, max_value=16_384),
                    st.one_of(st.none(), st.integers(min_value=0, max_value=300_000)),
                )
            ),
            "max_memory_mib": draw(mostly(st.none(), st.integers(min_value=0, max_value=300_000))),
            "cpu_cores": draw(
                mostly(
                    st.sampled_from([None, 1, 2.5]),
                    st.floats(min_value=0, max_value=100, allow_nan=False),
                )
            ),
            "copy_count": draw(
                mostly(st.sampled_from([1, 2]), st.integers(min_value=-1, max_value=5))
            ),
            "inference_component_name": draw(names),
            "download": draw(mostly(st.none(), seconds)),
        },
    }


def serving_options(drawn: dict[str, Any] | None) -> LmiOptions | TgiOptions | None:
    if drawn is None:
        return None
    options = dict(drawn)
    kind = options.pop("kind")
    if options.get("dtype") is not None:
        options["dtype"] = DataType[options["dtype"]]
    return LmiOptions(**options) if kind == "lmi" else TgiOptions(**options)


def build(props: dict[str, Any]) -> cdk.Stack:
    stack = new_stack(props["region"])
    endpoint_props = dict(props["endpoint"])
    endpoint_props["instance_type"] = InstanceType.of(endpoint_props["instance_type"])
    volume, startup = endpoint_props.pop("volume_size"), endpoint_props.pop("startup")
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        volume_size=Size.gibibytes(volume) if volume is not None else None,
        container_startup_health_check_timeout=Duration.seconds(startup)
        if startup is not None
        else None,
        **endpoint_props,
    )
    model_props = dict(props["model"])
    model = Model(
        stack,
        "Model",
        image=IMAGES[model_props.pop("image")](),
        serving=serving_options(model_props.pop("serving")),
        **model_props,
    )
    component = dict(props["component"])
    minimum, maximum = component.pop("min_memory_mib"), component.pop("max_memory_mib")
    download = component.pop("download")
    InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        model=model,
        min_memory=Size.mebibytes(minimum) if minimum is not None else None,
        max_memory=Size.mebibytes(maximum) if maximum is not None else None,
        model_data_download_timeout=Duration.seconds(download) if download is not None else None,
        **component,
    )
    return stack


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    # Every example synthesizes a stack in the one jsii kernel of the session, which keeps
    # them all: shrinking a failure through thousands of stacks would exhaust memory. The
    # failing example is printed whole instead.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(deployments())
def test_props_synthesize_cleanly_or_fail_with_our_error(props: dict[str, Any]) -> None:
    try:
        stack = build(props)
    except ValidationError as error:
        message = str(error)
        assert error.prop in message and "Fix: " in message and error.fix
        OUTCOMES[f"rejected: {error.prop}"] += 1
        return
    template = Template.from_stack(stack).to_json()
    findings = cfn_lint_findings(template, props["region"])
    assert findings == [], "\n".join(findings)
    OUTCOMES["synthesized, cfn-lint clean"] += 1


def test_outcome_summary() -> None:
    """Prints what the property test saw (run with -s); runs after it in file order."""
    total = sum(OUTCOMES.values())
    rejected = total - OUTCOMES["synthesized, cfn-lint clean"]
    print(f"\nhostile props: {total} combinations, {rejected} rejected with our errors")
    for outcome, count in OUTCOMES.most_common():
        print(f"  {count:4d}  {outcome}")

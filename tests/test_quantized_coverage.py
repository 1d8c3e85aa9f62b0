"""int4 weights are offered only on an accelerator and tensor-parallel degree where a public
measurement shows them faster than FP16 (``planning.quantized_coverage``); elsewhere the
layout is rejected with a typed kind and the reason."""

from __future__ import annotations

from cdk_sagemaker_llm.catalog.instance_types import CATALOG, InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.quantized_coverage import (
    MEASUREMENTS,
    int4_problem,
    measurement_for,
)
from cdk_sagemaker_llm.planning.ranking import RejectionKind
from cdk_sagemaker_llm.planning.recommend import Recommendation, Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import Risk, SearchSpace, Sizing
from cdk_sagemaker_llm.planning.workload import Workload

P5 = InstanceType.of("ml.p5.48xlarge")


def int4_search(*types: InstanceType) -> Recommendation:
    return recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(input_tokens=512, output_tokens=256),
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=2),
        search=SearchSpace(instance_types=list(types), precision=Precision.INT4_AWQ),
        sizing=Sizing(risk=Risk.MEDIAN),
        top=1000,
    )


def test_int4_is_offered_only_at_a_measured_degree_and_refused_with_the_reason_elsewhere() -> None:
    found = int4_search(P5, InstanceType.G5_12XLARGE)
    assert found.options
    assert {o.layout.tensor_parallel_degree for o in found.options} == {1}
    refused = {
        (r.instance_type, r.tensor_parallel_degree): r
        for r in found.rejected
        if r.kind is RejectionKind.PRECISION
    }
    tp8 = refused[("ml.p5.48xlarge", 8)]
    assert "int4 measured no faster than FP16 under load" in tp8.reason
    assert "NVIDIA H100 at TP8" in tp8.reason and "issue 1722" in tp8.reason
    tp4 = refused[("ml.g5.12xlarge", 4)]
    assert "no public measurement of int4 against FP16 on NVIDIA A10G at TP4" in tp4.reason
    assert "serve FP16/BF16" in tp4.reason


def test_fp16_layouts_are_not_filtered_and_every_measurement_names_a_catalog_accelerator() -> None:
    assert int4_problem(P5, 8, Precision.FP16) is None
    assert int4_problem(P5, 1, Precision.INT4_AWQ) is None
    names = {t.accelerator.name for t in CATALOG.values() if t.accelerator is not None}
    assert all(m.accelerator in names for m in MEASUREMENTS)
    assert all(m.source for m in MEASUREMENTS)
    # One measurement per accelerator and degree: the lookup is unambiguous.
    keys = [(m.accelerator, m.tensor_parallel_degree) for m in MEASUREMENTS]
    assert len(keys) == len(set(keys))
    assert measurement_for("NVIDIA H100", 2) is None

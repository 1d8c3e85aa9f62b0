"""recommend(): rejection reasons, sizing by traffic (Little's law), ranking, prices, and
rank_layouts (the layout serving the most on one instance)."""

from __future__ import annotations

import functools
import math

import pytest

from cdk_sagemaker_llm.catalog.instance_types import CATALOG, InstanceType
from cdk_sagemaker_llm.catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST, UNPRICED, PriceList
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import EngineRelease
from cdk_sagemaker_llm.planning.engine_profiles import engine_argument, engine_profile
from cdk_sagemaker_llm.planning.performance import (
    Layout,
    Workload,
    prediction_band,
    profile_limits,
    profile_model,
)
from cdk_sagemaker_llm.planning.recommend import (
    PriceBasis,
    Recommendation,
    RejectionKind,
    Risk,
    Slo,
    Traffic,
    rank_layouts,
    recommend,
)
from cdk_sagemaker_llm.planning.recommend import recommend as recommend_
from cdk_sagemaker_llm.planning.service_options import Pricing, SearchSpace, Sizing
from cdk_sagemaker_llm.planning.sizing import recommended_tensor_parallel_degree

P4D, G5_12, G5_48 = InstanceType.P4D_24XLARGE, InstanceType.G5_12XLARGE, InstanceType.G5_48XLARGE
SHORT = Workload(256, 128)  # the benchmark's default payload


def _reasons(result: object, instance: InstanceType) -> dict[int | None, str]:
    return {
        r.tensor_parallel_degree: r.reason
        for r in result.rejected  # type: ignore[attr-defined]
        if r.instance_type == instance.name
    }


def test_a_7b_model_on_p4d_serves_most_as_8_single_gpu_copies_and_says_why() -> None:
    """Published example: one replica per GPU beats sharding a 7B model over the p4d's GPUs."""
    # The plain first-principles model: the generic profile with 64 requests per copy.
    ranked = rank_layouts(ModelSpec.LLAMA_2_7B, P4D, SHORT, engine="generic", max_batch_size=64)
    assert [(r.layout.tensor_parallel_degree, r.layout.copies_per_instance) for r in ranked] == [
        (1, 8),
        (2, 4),
        (4, 2),
        (8, 1),
    ]
    assert ranked[0].tokens_per_s > 1.2 * ranked[1].tokens_per_s
    assert ranked[0].tokens_per_s > 3 * ranked[-1].tokens_per_s
    why = ranked[0].reason
    assert "TP8 x 1 serves" in why
    assert "wider sharding splits the weight reads but not the per-step overhead" in why
    assert "all-reduces" in why
    # recommend() for the most traffic one p4d carries picks the same layout; the others need
    # more instances.
    # (compare with the same profile and batch limit, at the median.)
    result = recommend(
        ModelSpec.LLAMA_2_7B,
        SHORT,
        Slo(100),
        Traffic(concurrency=512),
        search=SearchSpace(instance_types=[P4D], max_instance_count=1, max_batch_size=64),
        sizing=Sizing(engine="generic", risk=Risk.MEDIAN),
    )
    best = result.options[0]
    assert (best.layout.tensor_parallel_degree, best.layout.copies_per_instance) == (1, 8)
    # At the median the figures are the model's divided by the median residual's slowdown.
    assert best.band is not None
    assert best.max_tokens_per_s_within_slo == pytest.approx(
        ranked[0].tokens_per_s / Risk.MEDIAN.slowdown(best.band)
    )
    assert [r.reason.split(":")[0] for r in result.rejected] == ["instance count"] * 3


def test_llama_2_13b_on_p4d_is_not_tp1_the_smallest_degree_that_fits() -> None:
    """Published: TP2 x 4 copies serves more than TP1 x 8 for Llama 2 13B on ml.p4d.24xlarge
    (TP1 leaves ~13 GB of KV cache per copy)."""
    ranked = {
        r.layout.tensor_parallel_degree: r
        for r in rank_layouts(ModelSpec.LLAMA_2_13B, P4D, Workload(512, 256))
    }
    assert ranked[2].tokens_per_s > 1.3 * ranked[1].tokens_per_s
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_2_13B, P4D) != 1
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_2_13B, P4D, max_total_tokens=768) == 2


def test_each_rejection_reason() -> None:
    # memory: < 1 GB of KV headroom (Falcon 40B TP2 on p4d) and weights that do not fit.
    falcon = recommend(
        ModelSpec.FALCON_40B,
        SHORT,
        Slo(200),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[P4D]),
    )
    reasons = _reasons(falcon, P4D)
    assert reasons[1].startswith("memory:") and reasons[2].startswith("memory:")
    assert "< 1 GB headroom" in reasons[2]
    assert {o.layout.tensor_parallel_degree for o in falcon.options} == {4, 8}
    # memory: Mixtral TP4 on ml.g5.12xlarge.
    mixtral = recommend(
        ModelSpec.MIXTRAL_8X7B,
        SHORT,
        Slo(200),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[G5_12]),
    )
    assert _reasons(mixtral, G5_12)[4].startswith("memory:")
    assert not mixtral.options
    # head divisibility: Falcon 7B (71 heads) serves only at TP1; attention and KV heads.
    falcon7 = recommend(
        ModelSpec.FALCON_7B,
        SHORT,
        Slo(100),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[G5_12]),
        sizing=Sizing(risk=Risk.MEDIAN),
    )
    reasons = _reasons(falcon7, G5_12)
    assert reasons[2] == "head divisibility: 71 attention heads do not divide over 2 accelerators"
    assert [o.layout.tensor_parallel_degree for o in falcon7.options] == [1]
    odd = ModelSpec.custom(
        "odd-gqa", parameters=7e9, layers=32, attention_heads=48, kv_heads=6, head_dim=128,
        max_context=4096,
    )  # fmt: skip
    assert (
        "6 KV heads"
        in _reasons(
            recommend(
                odd,
                SHORT,
                Slo(100),
                Traffic(concurrency=1),
                search=SearchSpace(instance_types=[G5_12]),
            ),
            G5_12,
        )[4]
    )
    # slo: per-token latency and TTFT.
    slow = recommend(
        ModelSpec.LLAMA_2_13B,
        SHORT,
        Slo(20),
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[G5_12]),
    )
    assert _reasons(slow, G5_12)[2].startswith("slo: one request alone takes")
    ttft = recommend(
        ModelSpec.LLAMA_2_7B,
        Workload(4000, 64),
        Slo(400, max_ttft_ms=100),  # a per-token SLO clear of the pessimistic edge
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE]),
    )
    assert "to first token > 100" in _reasons(ttft, InstanceType.G5_XLARGE)[1]
    # instance count: more traffic than max_instance_count instances carry.
    busy = recommend(
        ModelSpec.LLAMA_2_7B,
        SHORT,
        Slo(100),
        Traffic(requests_per_second=500),
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE], max_instance_count=4),
    )
    assert _reasons(busy, InstanceType.G5_XLARGE)[1].startswith("instance count: needs")
    # timeout: one answer longer than 60 s.
    long = recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(2048, 6144),
        Slo(1000),
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[G5_12]),
    )
    assert _reasons(long, G5_12)[2].startswith("timeout:")
    # memory: the Neuron runtime stages the weights in host memory (ml.inf2.xlarge: 16 GiB).
    inf2 = InstanceType.INF2_XLARGE
    neuron = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        Slo(100),
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[inf2]),
    )
    assert "host memory" in _reasons(neuron, inf2)[1]
    small = recommend(  # an SLO clear of the unfitted lmi-neuronx profile's pessimistic edge
        ModelSpec.LLAMA_2_7B,
        SHORT,
        Slo(200),
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[inf2]),
    )
    assert any("Neuron: modeled at chip level" in line for line in small.options[0].reasoning)
    # The JSON states the degree LMI NeuronX's option counts: NeuronCores, two per chip (a
    # script reading tensor_parallel_degree, in chips, configured half the cores).
    data = small.options[0].to_dict()
    assert data["serving_tensor_parallel_degree"] == 2 * data["tensor_parallel_degree"]
    # not an accelerated type.
    cpu = recommend(
        ModelSpec.LLAMA_2_7B,
        SHORT,
        Slo(100),
        Traffic(concurrency=1),
        search=SearchSpace(instance_types=[InstanceType.of("ml.c7i.4xlarge")]),
    )
    assert cpu.rejected[0].reason == "not an accelerated instance type the catalog knows"


def test_options_are_sized_by_littles_law_and_ranked_cheapest_first() -> None:
    rate = 8.0
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        Slo(60),
        Traffic(requests_per_second=rate),
        search=SearchSpace(
            instance_types=[InstanceType.G5_XLARGE, InstanceType.G6_XLARGE, G5_12, P4D]
        ),
        sizing=Sizing(risk=Risk.MEDIAN),
        top=10,
    )
    assert result.options
    prices = [o.price_per_hour for o in result.options]
    assert prices == sorted(prices)  # type: ignore[type-var]
    for option in result.options:
        level = option.predicted
        # The fewest instances that carry the rate, each within the SLO.
        assert level.requests_per_s >= rate
        assert level.ms_per_token <= 60
        # Little's law: in flight = rate x end-to-end latency (the mean, rounded to a whole
        # request).
        assert level.concurrency == pytest.approx(
            max(1.0, level.requests_per_s * level.e2e_ms / 1000), abs=0.5
        )
        unit = DEFAULT_PRICE_LIST.price_per_hour(option.layout.instance_type)
        assert unit is not None
        assert option.price_per_hour == pytest.approx(unit * option.layout.instance_count)
        assert option.cost_per_million_tokens == pytest.approx(
            option.price_per_hour / (level.tokens_per_s * 3600 / 1e6)
        )
        # The busiest copy holds at most the scaling target (a fraction where the SLO falls
        # between two predicted levels: a copy then sometimes holds one more than the most
        # whole requests within it, and on average what the SLO allows).
        most = max(option.max_concurrency_per_copy, math.ceil(option.scaling_target))
        assert option.concurrency_per_copy <= most
        assert 1 <= option.knee_concurrency_per_copy <= option.max_batch_size
        data = option.to_dict()
        assert set(data) >= {
            "instance_type", "tensor_parallel_degree", "copies_per_instance", "instance_count",
            "concurrency_per_copy", "predicted", "price_per_hour", "cost_per_million_tokens",
            "reasoning",
        }  # fmt: skip
        assert data["serving_tensor_parallel_degree"] == data["tensor_parallel_degree"]  # GPUs
        assert set(data["predicted"]) == {"ms_per_token", "ttft_ms", "tokens_per_s"}
    # Fewer instances of a smaller type beat a p4d for this traffic.
    assert result.options[0].layout.instance_type.name != P4D.name
    # A concurrency traffic: every copy serves its share.
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        Slo(60),
        Traffic(concurrency=100),
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE]),
        sizing=Sizing(risk=Risk.MEDIAN),
    )
    option = result.options[0]
    assert option.layout.copies * option.concurrency_per_copy >= 100
    assert option.predicted.concurrency == 100


def test_price_basis_and_region() -> None:
    args = (ModelSpec.LLAMA_3_8B, SHORT, Slo(60), Traffic(concurrency=10))
    # prices, not risk, here
    recommend = functools.partial(recommend_, sizing=Sizing(risk=Risk.MEDIAN))
    on_demand = recommend(
        *args, search=SearchSpace(instance_types=[InstanceType.G5_XLARGE])
    ).options[0]
    saving = recommend(
        *args,
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE]),
        pricing=Pricing(basis=PriceBasis.SAVINGS_PLAN_1Y),
    ).options[0]
    assert saving.price_per_hour == pytest.approx(on_demand.price_per_hour * 0.75)  # type: ignore[operator]
    abroad = recommend(
        *args,
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE]),
        pricing=Pricing(region="eu-west-1"),
    )
    assert abroad.options[0].price_region == "us-east-1"
    assert any("no eu-west-1 prices" in line for line in abroad.options[0].reasoning)
    assert any("no eu-west-1 prices" in line for line in abroad.assumptions)
    no_prices = PriceList(as_of="2025-01-01", source="test", region="us-east-1", prices={})
    unpriced = recommend(
        *args,
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE]),
        pricing=Pricing(prices=no_prices),
    )
    assert unpriced.options[0].price_per_hour is None
    assert unpriced.options[0].to_dict()["price_region"] is None


def test_bad_input_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        Traffic()
    with pytest.raises(ValidationError, match="exactly one"):
        Traffic(requests_per_second=1, concurrency=1)
    with pytest.raises(ValidationError, match="max_ms_per_token"):
        Slo(0)
    with pytest.raises(ValidationError, match="max_instance_count"):
        recommend(
            ModelSpec.LLAMA_3_8B,
            SHORT,
            Slo(60),
            Traffic(concurrency=1),
            search=SearchSpace(max_instance_count=0),
        )


def test_the_blackwell_families_take_part_where_their_figures_are_known() -> None:
    """Over the whole catalog: p6-b300 and p6e-gb200 (published bandwidth and FLOPS, no default
    price) are options ranked after every priced one and flagged; g7 and g7e (FLOPS not
    published) are rejected with the reason, not predicted from a guess."""
    result = recommend(
        ModelSpec.LLAMA_2_7B, SHORT, Slo(100), Traffic(requests_per_second=5), top=1_000
    )
    names = [option.layout.instance_type.name for option in result.options]
    for name in ("ml.p6-b300.48xlarge", "ml.p6e-gb200.36xlarge"):
        option = result.options[names.index(name)]
        assert option.price_per_hour is None and option.cost_per_million_tokens is None
        assert f"no on-demand price for {name} in the list" in option.reasoning
    unpriced = [option.price_per_hour is None for option in result.options]
    assert unpriced == sorted(unpriced)  # every priced option first
    for instance in (InstanceType.G7_2XLARGE, InstanceType.G7E_48XLARGE):
        (reason,) = _reasons(result, instance).values()
        assert reason.startswith("performance unknown: its ")
        assert "not published" in reason
    assert not any(name.startswith(("ml.g7.", "ml.g7e.")) for name in names)


@pytest.mark.parametrize("limit", [0, -5, float("nan")])
def test_rank_layouts_refuses_a_limit_that_is_not_positive(limit: float) -> None:
    """As ``Slo`` does (the ranking moved to ``planning.ranking``; it must not answer with a
    rejection reason per layout instead)."""
    with pytest.raises(ValidationError, match="max_ms_per_token"):
        rank_layouts(ModelSpec.LLAMA_2_7B, P4D, Workload(512, 256), max_ms_per_token=limit)


def test_the_engine_filters_the_hardware_it_runs_on() -> None:
    """vLLM (LMI 0.38.0) runs on GPUs: the default candidates keep no Inferentia/Trainium type
    and a listed one is rejected as the engine's, not predicted as a GPU; NeuronX the other
    way round."""
    vllm = engine_argument("lmi:0.38.0")
    slo, traffic = Slo(max_ms_per_token=60), Traffic(requests_per_second=1)
    default = recommend(ModelSpec.LLAMA_3_8B, SHORT, slo, traffic, sizing=Sizing(engine=vllm))
    assert default.options
    shown = [o.layout.instance_type for o in default.options] + [
        InstanceType.of(r.instance_type) for r in default.rejected
    ]
    assert not any(t.is_neuron for t in shown)
    listed = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        slo,
        traffic,
        search=SearchSpace(instance_types=[InstanceType.INF2_8XLARGE, InstanceType.G6E_XLARGE]),
        sizing=Sizing(engine=vllm),
    )
    assert {o.layout.instance_type.name for o in listed.options} == {"ml.g6e.xlarge"}
    (inf2,) = [r for r in listed.rejected if r.instance_type == "ml.inf2.8xlarge"]
    assert inf2.kind is RejectionKind.ENGINE and "runs on gpu accelerators" in inf2.reason
    neuron = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        slo,
        traffic,
        search=SearchSpace(instance_types=[InstanceType.INF2_8XLARGE, InstanceType.G6E_XLARGE]),
        sizing=Sizing(engine="lmi-neuronx"),
    )
    assert all(o.layout.instance_type.is_neuron for o in neuron.options)
    assert [r.kind for r in neuron.rejected if r.instance_type == "ml.g6e.xlarge"] == [
        RejectionKind.ENGINE
    ]


def test_an_unpriced_first_option_on_unseen_hardware_is_neither_cheapest_nor_a_decision() -> None:
    """Only p6-b200 (no price in the default list, B200 in no profile's fit) is offered: the
    answer says its price is unknown and never calls it the cheapest, and says its figures are
    an extrapolation to benchmark, not a decision."""
    found = recommend(
        ModelSpec.LLAMA_3_70B,
        Workload(2000, 500),
        Slo(max_ms_per_token=40),
        Traffic(requests_per_second=2),
        search=SearchSpace(instance_types=[InstanceType.P6_B200_48XLARGE]),
    )
    assert found.options and found.options[0].price_per_hour is None
    text = " ".join(found.assumptions + found.options[0].reasoning)
    assert "cheapest" not in text.replace("none of them is called the cheapest", "")
    assert "price unknown: the first option (ml.p6-b200.48xlarge) has no price" in text
    assert "extrapolation, not a decision: the first option runs on NVIDIA B200" in text
    priced = recommend(
        ModelSpec.LLAMA_3_8B, SHORT, Slo(max_ms_per_token=60), Traffic(requests_per_second=1),
        search=SearchSpace(instance_types=[InstanceType.G6_XLARGE]),
    )  # fmt: skip
    assert not any(a.startswith(("price unknown", "extrapolation")) for a in priced.assumptions)


def test_every_catalog_type_is_priced_or_flagged_unpriced() -> None:
    """A type added to the catalog gets a dated price or an entry in ``UNPRICED`` saying why
    not; never both."""
    priced = set(DEFAULT_PRICE_LIST.prices)
    assert priced.isdisjoint(UNPRICED)
    assert set(CATALOG) == priced | set(UNPRICED)
    assert all(UNPRICED.values())


L40S_VLLM = EngineRelease("lmi", "0.31.0")
"""An engine whose profile band on the L40S is wide (an unfitted prior, pooled residuals)."""


def _l40s(ms_per_token: float, risk: Risk) -> Recommendation:
    return recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=ms_per_token),
        Traffic(requests_per_second=4),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE]),
        sizing=Sizing(engine=L40S_VLLM, risk=risk),
    )


def test_the_default_risk_offers_a_median_that_meets_the_slo_with_the_band_in_the_ceiling() -> None:
    """The engine profile's pessimistic edge breaks 28 ms/token at one request on the L40S
    (45.6 ms/token), so the worst case offers nothing; the default risk offers the layout, with the
    peak's instances at the median and a ceiling at the conformal band's edge above them."""
    worst = _l40s(28, Risk.WORST_CASE)
    assert not worst.options
    assert "one request alone takes" in worst.rejected[0].reason
    (option, *_) = _l40s(28, Risk.PESSIMISTIC).options
    (median, *_) = _l40s(28, Risk.MEDIAN).options
    assert option.risk is Risk.PESSIMISTIC and option.predicted.ms_per_token <= 28
    assert option.max_instance_count is not None
    assert option.max_instance_count > option.layout.instance_count >= median.layout.instance_count
    assert option.to_dict()["max_instance_count"] == option.max_instance_count
    line = next(r for r in option.reasoning if r.startswith("the band in the ceiling"))
    assert "the conformal band's p90" in line


def test_an_edge_that_breaks_the_slo_sizes_the_ceiling_by_its_throughput_and_says_so() -> None:
    (option, *_) = _l40s(28, Risk.PESSIMISTIC).options
    missed = next(r for r in option.reasoning if r.startswith("at the pessimistic edge"))
    assert "even one request per copy breaks <= 28 ms/token" in missed
    assert "the SLO may be missed if the pessimistic edge holds" in missed
    assert "the deploy-time benchmark's gates tell" in missed
    factor = float(missed.split("the median's capacity / ")[1].split(":")[0])
    assert factor > 1
    assert option.ceiling >= math.ceil(option.layout.instance_count * factor) - 1


def test_the_worst_case_still_sizes_every_instance_at_the_profile_s_pessimistic_edge() -> None:
    """``Risk.WORST_CASE`` keeps the engine profile's slowest residual for every instance
    (the setting for teams that cannot autoscale): its ceiling is its instance count, and it
    needs at least the default's ceiling."""
    (worst, *_) = _l40s(60, Risk.WORST_CASE).options
    (default, *_) = _l40s(60, Risk.PESSIMISTIC).options
    assert worst.risk is Risk.WORST_CASE and worst.band is not None
    assert worst.ceiling == worst.layout.instance_count >= default.ceiling
    line = next(r for r in worst.reasoning if r.startswith("sized on the pessimistic side"))
    assert f"x{worst.band.pessimistic_slowdown:.2f}" in line


def test_a_rate_is_sized_at_the_predicted_capacity_within_the_slo_interpolated_between_levels() -> (
    None
):
    """A rate's mean in flight per copy is not a whole number: where the SLO falls between the
    predicted levels at 1 and 2 in flight, a copy serves the rate at the concurrency where the
    predicted ms/token reaches the SLO (the rule a measured curve is read by,
    ``MeasuredCurve.capacity_within``), not the rate of 1 in flight. Read at whole requests, a
    5 % error at 2 in flight doubled the instances (``benchmarks/sizing_replay.py``)."""
    spec, workload, layout = ModelSpec.LLAMA_2_70B, Workload(304, 102), Layout(G5_48, 8, 1)
    profile = engine_profile("tgi-1")
    band = prediction_band(profile, spec, layout, workload, Precision.FP16)
    model = profile_model(
        spec, layout, Precision.FP16, workload, profile, None, band.median_slowdown
    )
    limits, _ = profile_limits(model, profile, None)
    one, two = model.level(1, limits.capacity), model.level(2, limits.capacity)
    slo = (one.ms_per_token + two.ms_per_token) / 2  # reached at 1.5 in flight per copy
    per_copy_rate = 1.5 * 1000 / (slo * workload.output_tokens)
    answer = recommend(
        spec,
        workload,
        Slo(max_ms_per_token=slo),
        Traffic(requests_per_second=3.9 * per_copy_rate),
        search=SearchSpace(instance_types=[G5_48], tensor_parallel_degrees=[8]),
        sizing=Sizing(engine="tgi-1", risk=Risk.MEDIAN),
        top=1,
    )
    (option,) = answer.options
    assert option.max_concurrency_per_copy == 1
    assert option.scaling_target == pytest.approx(1.5, abs=0.02)  # down to a hundredth
    assert option.layout.instance_count == 4  # 3.9 copies' worth; at 1 in flight: 6
    assert option.predicted.ms_per_token <= slo
    assert any("interpolated, as a measured curve is read" in r for r in option.reasoning)
    # The capacity the option is sized on: Little's law at the SLO, the interpolated target.
    assert option.requests_per_s_per_copy == pytest.approx(per_copy_rate, rel=0.02)


@pytest.mark.parametrize("risk", [Risk.MEDIAN, Risk.PESSIMISTIC], ids=["median", "default"])
def test_an_option_states_the_rate_one_copy_serves_and_its_instances_carry_the_rate_by_it(
    risk: Risk,
) -> None:
    """``Option.requests_per_s_per_copy`` is the capacity the instance count is sized on: the
    copies are the fewest whose rates carry the traffic, and it is the model's rate at the
    option's own scaling target (the default risk's lower target serves less per copy)."""
    spec, workload = ModelSpec.LLAMA_2_13B, Workload(216, 50)
    rate = 7.0
    answer = recommend(
        spec,
        workload,
        Slo(max_ms_per_token=50),
        Traffic(requests_per_second=rate),
        search=SearchSpace(instance_types=[G5_12], tensor_parallel_degrees=[4]),
        sizing=Sizing(engine="tgi-1", risk=risk),
        top=1,
    )
    (option,) = answer.options
    per_copy = option.requests_per_s_per_copy
    assert per_copy is not None and per_copy > 0
    copies = option.layout.copies
    assert copies * per_copy >= rate > (copies - 1) * per_copy
    if risk is Risk.PESSIMISTIC:
        median = recommend(
            spec,
            workload,
            Slo(max_ms_per_token=50),
            Traffic(requests_per_second=rate),
            search=SearchSpace(instance_types=[G5_12], tensor_parallel_degrees=[4]),
            sizing=Sizing(engine="tgi-1", risk=Risk.MEDIAN),
            top=1,
        ).options[0]
        assert option.scaling_target <= median.scaling_target
        assert median.requests_per_s_per_copy is not None
        assert per_copy <= median.requests_per_s_per_copy


KV_BOUND = Workload(4000, 500)
"""Long prompts: the KV cache, not the batch cap, sets the sequences one copy holds."""


@pytest.mark.parametrize(
    "instance_type",
    [InstanceType.P5_48XLARGE, InstanceType.G6_XLARGE, InstanceType.G6E_XLARGE],
    ids=["H100", "L4", "L40S"],
)
def test_an_fp8_kv_cache_holds_more_sequences_per_copy_and_needs_no_more_instances(
    instance_type: InstanceType,
) -> None:
    """Every candidate is predicted and placed with the KV cache asked: FP8 (one byte per
    element) holds about twice the sequences of the fp16 cache, so a KV-bound workload needs no
    more instances, and the option and its reasoning say which KV cache it was sized with."""

    def best(kv_cache: KvCachePrecision) -> object:
        result = recommend(
            ModelSpec.LLAMA_3_8B,
            KV_BOUND,
            Slo(max_ms_per_token=100),
            Traffic(concurrency=64),
            search=SearchSpace(
                instance_types=[instance_type],
                tensor_parallel_degrees=[1],
                kv_cache_precision=kv_cache,
            ),
            top=1,
        )
        return result.options[0]

    auto, fp8 = best(KvCachePrecision.AUTO), best(KvCachePrecision.FP8)
    assert auto.kv_cache_precision is KvCachePrecision.AUTO  # type: ignore[attr-defined]
    assert fp8.kv_cache_precision is KvCachePrecision.FP8  # type: ignore[attr-defined]
    assert fp8.max_batch_size >= 2 * auto.max_batch_size - 1  # type: ignore[attr-defined]
    assert fp8.layout.instance_count <= auto.layout.instance_count  # type: ignore[attr-defined]
    assert fp8.ceiling <= auto.ceiling  # type: ignore[attr-defined]
    assert "fp8 (1 byte per element)" in fp8.reasoning[0]  # type: ignore[attr-defined]
    assert fp8.to_dict()["kv_cache_precision"] == "fp8"  # type: ignore[attr-defined]
    if instance_type is InstanceType.G6_XLARGE:  # 24 GB: the KV cache decides the count
        assert fp8.layout.instance_count < auto.layout.instance_count  # type: ignore[attr-defined]


def test_an_fp8_kv_cache_is_not_offered_on_accelerators_without_fp8() -> None:
    """A10G (g5) and A100 (p4d) have no FP8: each of their layouts is rejected with the typed
    kind saying so (not memory, not precision), the FP8 types are still offered, and the
    assumptions state the KV cache every candidate was sized with."""
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        KV_BOUND,
        Slo(max_ms_per_token=100),
        Traffic(concurrency=64),
        search=SearchSpace(
            instance_types=[InstanceType.G5_2XLARGE, P4D, InstanceType.G6E_XLARGE],
            kv_cache_precision=KvCachePrecision.FP8,
        ),
    )
    assert {o.layout.instance_type.name for o in result.options} == {"ml.g6e.xlarge"}
    refused = {
        (r.instance_type, r.tensor_parallel_degree)
        for r in result.rejected
        if r.kind is RejectionKind.KV_CACHE_PRECISION
    }
    assert refused == {("ml.g5.2xlarge", 1)} | {(P4D.name, d) for d in (1, 2, 4, 8)}
    g5 = next(r for r in result.rejected if r.instance_type == "ml.g5.2xlarge")
    assert "A10G has no FP8 support" in g5.reason
    assert g5.to_dict()["kind"] == "kv cache precision"
    assert any(line.startswith("KV cache fp8 (1 byte per element)") for line in result.assumptions)


def _g5_rate(risk: Risk) -> Recommendation:
    return recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=50),
        Traffic(requests_per_second=2),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE]),
        sizing=Sizing(risk=risk),
    )


def test_the_pessimistic_scaling_target_is_a_fraction_of_a_request_as_the_median_s_is() -> None:
    """A rate's mean in flight is not a whole number: the default risk's target on the
    pessimistic side of the knee is read off the median's predicted curve to a hundredth, as
    the median's own target is (it was rounded down to whole requests, and where that equalled
    the median's whole knee the median's own fraction was taken: no discount at all)."""
    (option, *_) = _g5_rate(Risk.PESSIMISTIC).options
    (median, *_) = _g5_rate(Risk.MEDIAN).options
    target = option.scaling_target
    assert target != math.floor(target) and round(target, 2) == target
    assert option.knee_concurrency_per_copy == math.floor(target)
    assert 1 <= target < median.scaling_target
    assert option.requests_per_s_per_copy is not None and median.requests_per_s_per_copy
    assert option.requests_per_s_per_copy < median.requests_per_s_per_copy
    assert option.requests_per_s_per_copy * option.layout.copies >= 2
    line = next(r for r in option.reasoning if r.startswith("the band in the ceiling"))
    assert f"scaling target {target:g} per copy" in line


def test_an_edge_short_of_the_target_still_gets_the_ceiling_it_needs_within_the_slo() -> None:
    """Where the pessimistic edge serves fewer in flight within the SLO than the target, the
    ceiling is the instances that edge needs within the SLO (its own sizing), not only what
    its throughput at the target needs (fewer, with every copy past the SLO): the benchmark
    that replaces the target with the measured knee then finds the instances it needs."""
    (option, *_) = _g5_rate(Risk.PESSIMISTIC).options
    missed = next(r for r in option.reasoning if r.startswith("at the pessimistic edge"))
    served = float(missed.split("(it serves ")[1].split(" ")[0])
    assert served < option.scaling_target
    at_target = int(missed.split("the median's capacity / ")[1].split(": ")[1].split(" ")[0])
    within = int(missed.split(", or ")[1].split(" at its own")[0])
    assert f"at its own {served:g} per copy within the SLO, the more" in missed
    assert within > at_target
    assert option.ceiling == within > option.layout.instance_count


def test_a_light_rate_is_priced_per_token_on_what_the_peak_produces() -> None:
    """At 0.2 requests/s of 128 tokens the peak produces 25.6 tokens/s, whatever the fewest
    whole requests in flight could serve: the option's tokens/s and cost per 1M tokens read
    the rate's tokens (one option showed 26 tokens/s, another 61, for the same traffic). The
    one-request decode step is stated at the factor the option is sized at."""
    answer = recommend(
        ModelSpec.MISTRAL_7B,
        Workload(512, 128),
        Slo(max_ms_per_token=200),
        Traffic(requests_per_second=0.2),
        search=SearchSpace(instance_types=[InstanceType.G5_XLARGE, G5_12]),
    )
    assert answer.options
    for option in answer.options:
        assert option.predicted.tokens_per_s == pytest.approx(0.2 * 128)
        assert option.predicted.requests_per_s == pytest.approx(0.2)
        assert option.cost_per_million_tokens == pytest.approx(
            option.price_per_hour / (0.2 * 128 * 3600 / 1e6)
        )
    step = next(line for line in answer.options[0].reasoning if "one request decodes at" in line)
    assert "the factor sizing applies" in step


def test_the_default_risk_says_what_its_ceiling_may_cost_beside_the_peak() -> None:
    """At the default risk the peak runs the median's instances (+$0.00 at the peak) and the
    ceiling more: the cost line says both, and the sizing line says which side sizes what
    (it read "sized at the median ..., for the autoscaling ceiling only", the reverse)."""
    option = recommend(
        ModelSpec.LLAMA_3_1_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=50),
        Traffic(requests_per_second=16),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE]),
    ).options[0]
    assert option.ceiling_price_per_hour is not None and option.price_per_hour is not None
    assert option.ceiling_price_per_hour > option.price_per_hour
    sized = next(line for line in option.reasoning if line.startswith("sized at the median"))
    assert "run at the peak" in sized
    assert sized.endswith(f"the pessimistic edge sizes only the autoscaling ceiling "
                          f"({option.ceiling} instance(s))")  # fmt: skip
    cost = option.reasoning[-1]
    assert "+$0.00/hour at the peak" in cost
    assert f"its autoscaling ceiling up to ${option.ceiling_price_per_hour:,.2f}/hour" in cost


@pytest.mark.parametrize(
    "traffic", [Traffic(concurrency=200), Traffic(requests_per_second=16)], ids=["closed", "rate"]
)
def test_the_ceiling_is_held_at_max_instance_count_where_the_edge_needs_more(
    traffic: Traffic,
) -> None:
    """Where the pessimistic edge's own sizing needs more instances than max_instance_count,
    the ceiling is the cap, never the fewer instances the edge's throughput alone would say:
    raising max_instance_count never lowers it (13 at caps 14-15 and 16 at a rate before)."""
    ceilings = []
    for cap in (12, 13, 14, 15, 16, 20, 40):
        (option, *_) = recommend(
            ModelSpec.LLAMA_3_8B,
            Workload(512, 256),
            Slo(max_ms_per_token=60),
            traffic,
            search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE], max_instance_count=cap),
        ).options
        assert option.max_instance_count is not None
        ceilings.append(option.max_instance_count)
    assert ceilings == sorted(ceilings)
    uncapped = ceilings[-1]
    assert uncapped > 15
    for cap, ceiling in zip((12, 13, 14, 15), ceilings, strict=False):
        assert ceiling == min(cap, uncapped)


def test_every_rejection_in_the_json_has_every_documented_key() -> None:
    """capacity-planning.md documents ``rejected`` entries as instance_type, kind, reason and
    tensor_parallel_degree: a rejection of a whole type (an unpublished accelerator) carries
    a null degree rather than no key."""
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        SHORT,
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=1),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE, InstanceType.G7_2XLARGE]),
    )
    rejected = result.to_dict()["rejected"]
    assert any(r["instance_type"] == "ml.g7.2xlarge" for r in rejected)
    for entry in rejected:
        assert set(entry) == {"instance_type", "kind", "reason", "tensor_parallel_degree"}


def test_an_fp8_kv_cache_is_not_offered_on_a_container_that_cannot_be_told_to_keep_one() -> None:
    """recommend answers what LlmService would deploy: TGI before 2.4.0 documents no KV-cache
    dtype setting, so an FP8 KV cache there is a rejection of kind engine, not an option
    LlmService then refuses. A release that documents it is offered."""

    def ask(release: str) -> Recommendation:
        return recommend(
            ModelSpec.LLAMA_3_8B,
            Workload(512, 256),
            Slo(max_ms_per_token=60),
            Traffic(requests_per_second=4),
            search=SearchSpace(
                instance_types=[InstanceType.G6E_2XLARGE], kv_cache_precision=KvCachePrecision.FP8
            ),
            sizing=Sizing(engine=EngineRelease("tgi", release)),
        )

    old = ask("2.0.2")
    assert not old.options
    assert {r.kind for r in old.rejected} == {RejectionKind.ENGINE}
    assert "KV_CACHE_DTYPE from release 2.4.0" in old.rejected[0].reason
    assert ask("3.3.6").options


def test_a_wanted_degree_that_splits_no_instance_is_named_with_its_reason() -> None:
    """SearchSpace(tensor_parallel_degrees=[3]) on a 4-GPU type: the rejection names the
    setting, the accelerators and the degrees that split them (and the heads, where 32 do not
    divide over 3), not a generic "no layout fits" whose fix is to add instance types."""
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=4),
        search=SearchSpace(instance_types=[G5_12], tensor_parallel_degrees=[3, 8]),
    )
    assert not result.options
    by_degree = {r.tensor_parallel_degree: r for r in result.rejected}
    assert set(by_degree) == {3, 8}
    assert by_degree[3].kind is RejectionKind.HEAD_DIVISIBILITY
    assert "32 attention heads do not divide over 3" in by_degree[3].reason
    assert by_degree[8].reason.startswith("search.tensor_parallel_degrees: 8 does not split")
    assert "(it takes 1, 2, 4)" in by_degree[8].reason

"""The scheduler simulation (``planning.scheduling``): each engine's policy reproduces its
documented scheduling behaviour on a constructed case, and the simulation agrees with the closed
form where the closed form holds (light load) and with Little's law everywhere."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.engine_profiles import PROFILE_NAMES, engine_profile
from cdk_sagemaker_llm.planning.performance import (
    Layout,
    predict,
    profile_limits,
    profile_model,
)
from cdk_sagemaker_llm.planning.placement import copy_memory
from cdk_sagemaker_llm.planning.scheduling.capacity import CopySimulation
from cdk_sagemaker_llm.planning.scheduling.copy import copy_policy, simulate_copy
from cdk_sagemaker_llm.planning.scheduling.costs import StepCosts
from cdk_sagemaker_llm.planning.scheduling.limits import BatchSettings
from cdk_sagemaker_llm.planning.scheduling.load import Burst, ClosedLoop, PoissonArrivals
from cdk_sagemaker_llm.planning.scheduling.loop import RequestOutcome, SimulationResult, simulate
from cdk_sagemaker_llm.planning.scheduling.neuronx import StaticBatchSlots, context_bucket
from cdk_sagemaker_llm.planning.scheduling.policy import SchedulingPolicy
from cdk_sagemaker_llm.planning.scheduling.prediction import with_simulated_levels
from cdk_sagemaker_llm.planning.scheduling.selection import policy_for
from cdk_sagemaker_llm.planning.scheduling.state import SchedulerState, Sequence, SimRequest, Step
from cdk_sagemaker_llm.planning.scheduling.tgi import TgiChunked, TgiPrefillFirst
from cdk_sagemaker_llm.planning.scheduling.trtllm import InflightBatching
from cdk_sagemaker_llm.planning.scheduling.vllm import VllmChunked, VllmPrefillFirst
from cdk_sagemaker_llm.planning.workload import TraceRecord, Workload

SPEC = ModelSpec.LLAMA_3_8B
G5 = InstanceType.of("ml.g5.2xlarge")
LOAD = Workload(input_tokens=512, output_tokens=128)


def _costs(workload: Workload = LOAD, profile: str = "lmi-vllm-v1") -> StepCosts:
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, workload, engine_profile(profile))
    return StepCosts(model)


def _decoding(count: int, context: int = 600) -> list[Sequence]:
    sequences = []
    for index in range(count):
        sequence = Sequence(SimRequest(index, 0.0, 512, 256), 512)
        sequence.advance(512, 0.0)
        sequence.decoded = context - 512
        sequences.append(sequence)
    return sequences


def _state(running: int, waiting_prompts: list[int], kv_tokens: int = 100_000) -> SchedulerState:
    state = SchedulerState(kv_tokens=kv_tokens)
    state.running.extend(_decoding(running))
    for offset, prompt in enumerate(waiting_prompts):
        state.waiting.append(Sequence(SimRequest(100 + offset, 0.0, prompt, 64), prompt))
    return state


# ----- one constructed case per engine -----------------------------------------------------------


def test_tgi_1_stalls_every_running_decode_while_a_long_prompt_prefills() -> None:
    policy = TgiPrefillFirst(kv_tokens=100_000, max_batch_prefill_tokens=4096)
    policy._waiting_tokens = policy.max_waiting_tokens  # past the waiting_served_ratio wait
    step = policy.plan(_state(running=8, waiting_prompts=[3800]))
    assert [tokens for _, tokens in step.prefills] == [3800]
    assert step.decodes == ()  # the running batch waits for the whole prefill
    assert policy.plan(_state(running=8, waiting_prompts=[])).decodes


def test_vllm_v1_keeps_decoding_while_a_long_prompt_is_chunked_into_the_pass() -> None:
    policy = VllmChunked(kv_tokens=100_000, max_num_seqs=256, max_num_batched_tokens=2048)
    state = _state(running=8, waiting_prompts=[3800])
    step = policy.plan(state)
    assert len(step.decodes) == 8
    assert [tokens for _, tokens in step.prefills] == [2048 - 8]  # the budget less the decodes
    for sequence, tokens in step.prefills:
        sequence.advance(tokens, 1.0)
    second = policy.plan(state)
    assert len(second.decodes) == 8 and [t for _, t in second.prefills] == [3800 - 2040]


def test_a_long_prompt_stalls_short_requests_under_tgi_1_but_not_under_vllm_v1() -> None:
    short = [TraceRecord(0.0, 128, 128) for _ in range(7)]
    workload = Workload.trace([*short, TraceRecord(0.0, 3800, 16)])
    gaps = {}
    for profile, policy in (
        ("tgi-1", TgiPrefillFirst(kv_tokens=60_000, max_batch_prefill_tokens=4096)),
        ("lmi-vllm-v1", VllmChunked(60_000, 256, 512)),
    ):
        costs = _costs(workload, profile)
        result = simulate(policy, costs, workload, ClosedLoop(8, rounds=4))
        short_gaps = [o.longest_gap_s for o in result.outcomes if o.output_tokens == 128]
        gaps[profile] = (max(short_gaps), costs.prefill_s(3800))
    tgi_gap, tgi_prefill = gaps["tgi-1"]
    vllm_gap, vllm_prefill = gaps["lmi-vllm-v1"]
    assert tgi_gap >= tgi_prefill  # a decode waited for the whole 3,800-token prefill
    assert vllm_gap < vllm_prefill / 3  # chunks of 512 tokens: a pass, not a prefill


def test_tgi_waits_for_waiting_served_ratio_times_the_batch_before_prefilling() -> None:
    policy = TgiPrefillFirst(kv_tokens=100_000, max_batch_prefill_tokens=4096)
    state = _state(running=10, waiting_prompts=[100] * 5)  # 5 < floor(10 x 1.2) = 12
    decodes = 0
    while not policy.plan(state).prefills:
        decodes += 1
    # TGI prefills the 5 anyway once max_waiting_tokens (20) decode steps have passed
    assert decodes == policy.max_waiting_tokens
    state = _state(running=10, waiting_prompts=[100] * 12)
    assert len(TgiPrefillFirst(100_000, 4096).plan(state).prefills) == 12


def test_tgi_refuses_requests_beyond_max_concurrent_requests() -> None:
    policy = TgiPrefillFirst(kv_tokens=100_000, max_concurrent_requests=8)
    result = simulate(policy, _costs(), LOAD, ClosedLoop(12))
    assert result.rejected == 4  # four clients got 429 on their first request
    burst = simulate(
        TgiChunked(kv_tokens=100_000, max_concurrent_requests=8),
        _costs(),
        LOAD,
        PoissonArrivals(rate_per_s=50.0, requests=200),
    )
    assert burst.rejected > 100
    assert burst.rejected + len(burst.outcomes) < 200  # the rest served, warm-up left out


def test_tgi_3_prefills_a_chunk_and_decodes_the_batch_in_one_pass() -> None:
    policy = TgiChunked(kv_tokens=100_000, max_batch_prefill_tokens=1024)
    step = policy.plan(_state(running=8, waiting_prompts=[3000]))
    assert len(step.decodes) == 8
    assert [tokens for _, tokens in step.prefills] == [1024 - 8]


class _Widest(VllmChunked):
    """VllmChunked recording the widest pass it planned."""

    widest = 0

    def plan(self, state: SchedulerState) -> Step:
        step = super().plan(state)
        self.widest = max(self.widest, len(step.decodes) + len(step.prefills))
        return step


def test_max_num_seqs_caps_the_batch_and_the_rest_queue() -> None:
    policy = _Widest(kv_tokens=100_000, max_num_seqs=4, max_num_batched_tokens=2048)
    result = simulate(policy, _costs(), LOAD, ClosedLoop(16))
    assert policy.widest == 4
    alone = simulate(VllmChunked(100_000, 4, 2048), _costs(), LOAD, ClosedLoop(4))
    # 16 clients on 4 slots: the same throughput, four times the latency (they queue)
    assert result.tokens_per_s == pytest.approx(alone.tokens_per_s, rel=0.05)
    assert result.mean("e2e_s") == pytest.approx(4 * alone.mean("e2e_s"), rel=0.1)


def test_vllm_preempts_by_recompute_when_the_kv_cache_runs_out() -> None:
    kv = 8 * 640  # room for 8 sequences of 640 tokens: 16 clients outgrow it as they decode
    workload = Workload(input_tokens=512, output_tokens=256)
    for policy in (VllmChunked(kv, 256, 2048), VllmPrefillFirst(kv, 256, 4096)):
        result = simulate(policy, _costs(workload), workload, ClosedLoop(16))
        assert result.preemptions > 0
        assert result.unserved == 0


def test_trtllm_guarantees_no_eviction_and_mixes_prompts_into_generation_passes() -> None:
    kv = 8 * 640
    workload = Workload(input_tokens=512, output_tokens=256)
    result = simulate(InflightBatching(kv, 256, 8192), _costs(workload), workload, ClosedLoop(16))
    assert result.preemptions == 0
    policy = InflightBatching(kv_tokens=100_000, max_batch_size=256, max_num_tokens=8192)
    step = policy.plan(_state(running=8, waiting_prompts=[3000, 3000, 3000]))
    assert len(step.decodes) == 8
    assert [t for _, t in step.prefills] == [3000, 3000]  # the third does not fit whole


def test_neuronx_pads_decode_to_the_compiled_batch_and_prompts_to_their_bucket() -> None:
    costs = _costs(profile="lmi-neuronx")
    policy = StaticBatchSlots(kv_tokens=100_000, batch_size=16)
    one = _decoding(1)
    assert policy.forward_s(costs, Step(decodes=tuple(one))) == pytest.approx(
        costs.decode_s(16, 16 * 600)
    )
    prompt = Sequence(SimRequest(0, 0.0, 300, 16), 300)
    assert context_bucket(300) == 512 and context_bucket(100) == 128
    assert policy.forward_s(costs, Step(prefills=((prompt, 300),))) == pytest.approx(
        costs.prefill_s(512)
    )
    assert policy.forward_s(costs, Step(prefills=((prompt, 300),))) > costs.prefill_s(300)


# ----- the simulation as a whole -----------------------------------------------------------------


def test_each_shipped_profile_names_its_engine_policy() -> None:
    expected = {
        "tgi-1": TgiPrefillFirst,
        "tgi-2-3": TgiChunked,
        "lmi-vllm-v0": VllmPrefillFirst,
        "lmi-vllm-v1": VllmChunked,
        "lmi-trtllm": InflightBatching,
        "lmi-neuronx": StaticBatchSlots,
        "generic": VllmPrefillFirst,
    }
    assert set(expected) == set(PROFILE_NAMES)
    for name, kind in expected.items():
        policy = policy_for(engine_profile(name), 50_000, LOAD)
        assert type(policy) is kind, name
        assert isinstance(policy, SchedulingPolicy) and policy.describe()


@pytest.mark.parametrize(
    "profile", ["tgi-1", "tgi-2-3", "lmi-vllm-v0", "lmi-vllm-v1", "lmi-trtllm"]
)
def test_at_light_load_the_simulation_agrees_with_the_closed_form(profile: str) -> None:
    workload = Workload(input_tokens=512, output_tokens=256)
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, workload, engine_profile(profile))
    limits, _ = profile_limits(model, engine_profile(profile))
    result = simulate_copy(model, engine_profile(profile), ClosedLoop(1))
    alone = model.level(1, limits.capacity)
    # One request alone: the closed form times every token at the mean context and counts one
    # decode step more than the prefill leaves to do (within 1 / 256 + the context's spread).
    assert result.mean("ms_per_token") == pytest.approx(alone.ms_per_token, rel=0.03)
    assert result.tokens_per_s == pytest.approx(alone.tokens_per_s, rel=0.03)


@pytest.mark.parametrize("clients", [4, 32, 96])
def test_littles_law_holds_for_closed_loop_clients(clients: int) -> None:
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, LOAD, engine_profile("tgi-1"))
    result = simulate_copy(model, engine_profile("tgi-1"), ClosedLoop(clients))
    assert result.rejected == 0
    # clients in flight = requests/s x mean time in the system (queueing included)
    assert result.requests_per_s * result.mean("e2e_s") == pytest.approx(clients, rel=0.05)


def test_prefix_caching_skips_the_shared_prefix_of_later_requests() -> None:
    workload = Workload.shared_prefix(
        prefixes=2, prefix_tokens=2000, requests_per_prefix=64, suffix_tokens=32, output_tokens=64
    )
    costs = _costs(workload)
    cached = simulate(VllmChunked(200_000, 256, 2048), costs, workload, ClosedLoop(4))
    plain = simulate(
        VllmChunked(200_000, 256, 2048, prefix_caching=False), costs, workload, ClosedLoop(4)
    )
    assert cached.mean("ttft_s") < plain.mean("ttft_s") / 3


def test_poisson_runs_are_deterministic_per_seed() -> None:
    def run(seed: int) -> tuple[float, float]:
        load = PoissonArrivals(rate_per_s=2.0, requests=120, seed=seed)
        result = simulate(VllmChunked(100_000, 256, 2048), _costs(), LOAD, load)
        return result.tokens_per_s, result.percentile("ttft_s", 0.9)

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_a_load_that_is_not_positive_is_refused_with_the_property_named() -> None:
    with pytest.raises(ValidationError, match="ClosedLoop"):
        ClosedLoop(0)
    with pytest.raises(ValidationError, match="rate_per_s"):
        PoissonArrivals(rate_per_s=0.0)
    with pytest.raises(ValidationError, match="Burst"):
        Burst(0)


def test_a_burst_is_timed_from_the_send_to_the_last_answer_over_every_request() -> None:
    """An offline benchmark sends every request at once and reports the whole run: all of its
    requests count, and its tokens/s is their tokens over the time to the last answer."""
    result = simulate(VllmChunked(100_000, 256, 2048), _costs(), LOAD, Burst(300))
    assert len(result.outcomes) == 300
    assert {outcome.arrival_s for outcome in result.outcomes} == {0.0}
    last = max(outcome.e2e_s for outcome in result.outcomes)
    assert result.window_s == (0.0, last)
    assert result.tokens_per_s == pytest.approx(300 * LOAD.output_tokens / last)


def test_a_bursts_inter_token_latency_counts_the_prefill_chunks_that_share_its_steps() -> None:
    """vLLM V1 chunks the burst's prompts into the passes that decode the requests already
    admitted, so a request's mean time between tokens in a burst exceeds a pure decode step of
    the whole batch; with short prompts (nothing left to prefill after the first pass) it does
    not."""
    policy = VllmChunked(400_000, 256, 2048)
    long_prompts = Workload(input_tokens=2000, output_tokens=32)
    costs = _costs(long_prompts)
    long = simulate(policy, costs, long_prompts, Burst(128)).mean("inter_token_ms")
    assert long > 2 * costs.decode_s(128, 128 * 2016) * 1000
    short_prompts = Workload(input_tokens=8, output_tokens=32)
    costs = _costs(short_prompts)
    short = simulate(VllmChunked(400_000, 256, 2048), costs, short_prompts, Burst(128))
    assert short.mean("inter_token_ms") == pytest.approx(
        costs.decode_s(128, 128 * 24) * 1000, rel=0.15
    )


# ----- capacity over the simulation --------------------------------------------------------------


def _simulation(profile: str = "tgi-1") -> tuple[CopySimulation, int]:
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, LOAD, engine_profile(profile))
    limits, _ = profile_limits(model, engine_profile(profile))
    return CopySimulation(model, engine_profile(profile)), limits.max_concurrency


def test_capacity_is_the_most_clients_whose_simulated_ms_per_token_meets_the_limit() -> None:
    simulation, most = _simulation()
    found = simulation.capacity_within(60.0, most)
    assert found is not None
    assert found.ms_per_token <= 60.0
    assert simulation.level(found.clients + 1).ms_per_token > 60.0
    assert simulation.capacity_within(1.0, most) is None  # one request alone misses it


def test_the_simulated_knee_is_where_doubling_buys_under_ten_percent() -> None:
    simulation, most = _simulation()
    knee = simulation.knee(most)
    assert 1 <= knee.clients <= most
    if knee.clients * 2 <= most:
        assert simulation.level(knee.clients * 2).tokens_per_s < 1.1 * knee.tokens_per_s
    if knee.clients > 1:
        half = simulation.level(knee.clients // 2)
        assert knee.tokens_per_s >= 1.1 * half.tokens_per_s


def test_a_closed_loop_stops_once_its_steady_mean_is_known_within_the_stated_error() -> None:
    costs = _costs()
    policy = policy_for(engine_profile("lmi-vllm-v1"), 100_000, LOAD)
    full = simulate(policy, costs, LOAD, ClosedLoop(16))
    policy = policy_for(engine_profile("lmi-vllm-v1"), 100_000, LOAD)
    early = simulate(policy, costs, LOAD, ClosedLoop(16, steady_error=0.01))
    assert early.passes < 0.8 * full.passes  # it stopped sending rounds early
    assert len(early.outcomes) >= 16  # at least one whole steady round is measured
    mean = early.mean("ms_per_token")
    assert mean == pytest.approx(full.mean("ms_per_token"), rel=0.03)
    assert early.tokens_per_s == pytest.approx(full.tokens_per_s, rel=0.03)


def test_a_steady_error_outside_zero_to_one_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="steady_error"):
        ClosedLoop(8, steady_error=0.0)


def test_capacity_with_a_steady_error_finds_the_clients_that_every_round_finds() -> None:
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, LOAD, engine_profile("tgi-1"))
    limits, _ = profile_limits(model, engine_profile("tgi-1"))
    every = CopySimulation(model, engine_profile("tgi-1"))
    early = CopySimulation(model, engine_profile("tgi-1"), steady_error=0.01)
    found = every.capacity_within(60.0, limits.max_concurrency)
    quick = early.capacity_within(60.0, limits.max_concurrency)
    assert found is not None and quick is not None
    assert quick.clients == found.clients
    assert early.knee(limits.max_concurrency).clients == every.knee(limits.max_concurrency).clients


# ----- predictions from the simulation ------------------------------------------------------------


def test_a_simulated_prediction_keeps_the_closed_form_at_light_load_and_its_band() -> None:
    closed = predict(SPEC, Layout(G5, 1, 1), LOAD, [1, 8, 64], engine="tgi-1")
    simulated = with_simulated_levels(closed, SPEC)
    assert [level.concurrency for level in simulated.levels] == [1, 8, 64]
    light, cf_light = simulated.levels[0], closed.levels[0]
    assert light.ms_per_token == pytest.approx(cf_light.ms_per_token, rel=0.03)
    assert light.ms_per_token_band is not None and simulated.band == closed.band
    assert any("simulated" in note for note in simulated.assumptions)
    assert simulated.knee.concurrency >= 1


def test_the_simulated_knee_states_its_rule_the_level_that_tripped_and_why() -> None:
    """The simulated knee is a ``Knee`` like the closed form's: the rule in words, the level
    that tripped it, the reason and the detail (it printed "Knee: 16 (None)")."""
    closed = predict(SPEC, Layout(G5, 1, 1), LOAD, [1, 8, 64], engine="tgi-1")
    knee = with_simulated_levels(closed, SPEC).knee
    assert knee.rule == closed.knee.rule
    assert knee.detail is not None and knee.detail.startswith("per copy: ")
    assert knee.concurrency is not None and knee.concurrency >= 1
    if knee.tripped_at is not None:
        assert knee.tripped_at > knee.concurrency
        assert knee.reason in {"throughput", "errors"}
        assert str(knee.concurrency) in knee.detail


def test_the_simulated_prediction_sees_tgi_1_refusing_beyond_its_request_cap() -> None:
    workload = Workload(input_tokens=64, output_tokens=64)
    closed = predict(SPEC, Layout(G5, 1, 1), workload, [160], engine="tgi-1")
    simulated = with_simulated_levels(closed, SPEC)
    assert any("refuses 32 (429)" in note for note in simulated.assumptions)


def test_predict_simulate_scheduler_prints_the_simulated_levels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "512", "--output-tokens", "128", "--concurrency", "1,16",
        "--engine", "tgi-1", "--format", "json", "--simulate-scheduler",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [level["concurrency"] for level in printed["levels"]] == [1, 16]
    assert any("levels and knee simulated" in line for line in printed["assumptions"])
    assert main([*argv, "--optimization", "awq"]) == 2
    assert "--simulate-scheduler" in capsys.readouterr().err


def test_poisson_arrivals_queue_as_the_rate_nears_what_the_copy_serves() -> None:
    costs = _costs()
    saturated = simulate(VllmChunked(100_000, 8, 2048), costs, LOAD, ClosedLoop(8))
    capacity = saturated.requests_per_s  # what 8 slots serve back to back
    ttft = {}
    for share in (0.3, 0.9, 1.5):
        load = PoissonArrivals(rate_per_s=share * capacity, requests=300, seed=3)
        result = simulate(VllmChunked(100_000, 8, 2048), costs, LOAD, load)
        ttft[share] = result.percentile("ttft_s", 0.5)
        if share < 1:  # below capacity the copy keeps up with the arrivals
            assert result.requests_per_s == pytest.approx(share * capacity, rel=0.2)
    assert ttft[0.3] < ttft[0.9] < ttft[1.5]
    assert ttft[1.5] > 10 * ttft[0.3]  # past capacity the queue, and the wait, keep growing


def test_multi_turn_history_is_served_from_the_prefix_cache() -> None:
    workload = Workload.multi_turn(conversations=4, turns=4, turn_tokens=256, output_tokens=64)
    costs = _costs(workload)
    cached = simulate(VllmChunked(200_000, 256, 2048), costs, workload, ClosedLoop(4, rounds=8))
    plain = simulate(
        VllmChunked(200_000, 256, 2048, prefix_caching=False),
        costs,
        workload,
        ClosedLoop(4, rounds=8),
    )
    assert cached.mean("ttft_s") < plain.mean("ttft_s")
    assert cached.tokens_per_s > plain.tokens_per_s


@pytest.mark.parametrize(
    "profile", ["tgi-1", "tgi-2-3", "lmi-vllm-v0", "lmi-vllm-v1", "lmi-trtllm"]
)
def test_the_closed_form_and_the_simulation_apply_one_batch_limit(profile: str) -> None:
    """A deployment's request cap (vLLM ``max_num_seqs``, TensorRT-LLM ``max_batch_size``, TGI
    ``--max-batch-size``) bounds the closed form's copy and the simulated batch alike."""
    engine = engine_profile(profile)
    batch = BatchSettings.of_profile(engine, max_sequences=6, max_tokens_per_pass=8192)
    model = profile_model(SPEC, Layout(G5, 1, 1), Precision.FP16, LOAD, engine)
    limits, _ = profile_limits(model, engine, batch=batch)
    assert limits.batch_limit == 6 and limits.capacity == 6
    policy = policy_for(engine, 100_000, LOAD, batch=batch)
    state = _state(0, [512] * 20)
    largest = 0
    for _ in range(30):
        step = policy.plan(state)
        for sequence, tokens in step.prefills:
            sequence.advance(tokens, 0.0)
        largest = max(largest, len(state.running))
    assert largest == 6
    assert len(state.waiting) == 14


def test_batch_settings_default_to_the_profiles_documented_limits() -> None:
    """Unset, the limits are the container's documented defaults the profile states: vLLM V1's
    ``max_num_seqs`` 256 and ``max_num_batched_tokens`` 2048; TGI's token budgets alone."""
    v1 = BatchSettings.of_profile(engine_profile("lmi-vllm-v1"))
    assert (v1.max_sequences, v1.max_tokens_per_pass) == (256, 2048)
    tgi = BatchSettings.of_profile(engine_profile("tgi-1"))
    assert (tgi.max_sequences, tgi.max_tokens_per_pass) == (None, 4096)
    stated = BatchSettings.of_profile(
        engine_profile("lmi-trtllm"), max_sequences=2048, max_tokens_per_pass=16384
    )
    assert (stated.max_sequences, stated.max_tokens_per_pass) == (2048, 16384)
    policy = policy_for(engine_profile("lmi-trtllm"), 100_000, LOAD, batch=stated)
    assert "max_batch_size 2048" in policy.describe()
    assert "max_num_tokens 16384" in policy.describe()


def test_a_batch_limit_below_one_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as raised:
        BatchSettings.of_profile(engine_profile("lmi-vllm-v1"), max_sequences=0)
    assert "max_batch_size" in str(raised.value) and "0" in str(raised.value)


def test_tensorrt_llm_chunks_a_prompt_longer_than_its_token_budget() -> None:
    """A 20,000-token prompt against ``max_num_tokens`` 8,192: chunked context (the only way
    TensorRT-LLM serves it), so it shares its passes with the running decodes instead of
    waiting for an empty batch."""
    long_prompts = Workload(input_tokens=20_000, output_tokens=200)
    policy = policy_for(engine_profile("lmi-trtllm"), 1_000_000, long_prompts)
    assert isinstance(policy, InflightBatching)
    assert policy.chunked_context and policy.max_num_tokens == 8192
    step = policy.plan(_state(running=4, waiting_prompts=[20_000]))
    assert len(step.decodes) == 4
    assert [tokens for _, tokens in step.prefills] == [8192 - 4]
    short = policy_for(engine_profile("lmi-trtllm"), 1_000_000, LOAD)
    assert isinstance(short, InflightBatching) and not short.chunked_context


# ----- what a burst benchmark reports -------------------------------------------------------------


def _outcome(ttft_s: float, e2e_s: float, output_tokens: int) -> RequestOutcome:
    return RequestOutcome(
        arrival_s=0.0, ttft_s=ttft_s, e2e_s=e2e_s, output_tokens=output_tokens, preemptions=0
    )


def test_the_mean_tpot_averages_each_requests_time_per_token_as_vllm_bench_serve_does() -> None:
    """``vllm bench serve``'s "Mean TPOT": per request (latency - TTFT) / (output tokens - 1),
    then the mean over the requests with more than one output token; not the pooled mean of
    every gap ("Mean ITL"), which weighs long requests more."""
    outcomes = (
        _outcome(0.1, 1.1, 11),  # 10 gaps in 1.0 s: 100 ms
        _outcome(0.1, 0.4, 2),  # 1 gap of 0.3 s: 300 ms
        _outcome(0.2, 0.2, 1),  # no gap: left out
    )
    result = SimulationResult(outcomes, 0, 0, (0.0, 1.1), 14, 3, 0, 0)
    assert result.mean_tpot_ms() == pytest.approx(200.0)
    pooled = (1.0 + 0.3) / (10 + 1) * 1000
    assert result.mean_tpot_ms() != pytest.approx(pooled, rel=0.1)


def test_a_vllm_v1_burst_beyond_its_kv_cache_waits_in_ttft_and_decodes_alone() -> None:
    """A burst whose prompts the KV cache holds one at a time: V1 admits the next prompt's chunk
    only while it fits, preempts it (by recompute) when it no longer does, admits nothing more
    in that pass, and resumes it later from the prefix cache, so each request decodes alone at
    the lone step's pace and the wait for the one before it is in its TTFT, not its TPOT."""
    workload = Workload(input_tokens=4000, output_tokens=64)
    costs = _costs(workload)
    policy = _Widest(kv_tokens=5000, max_num_seqs=256, max_num_batched_tokens=2048)
    result = simulate(policy, costs, workload, Burst(4))
    assert len(result.outcomes) == 4
    assert result.preemptions <= 4  # no request thrashes in and out of the cache
    lone = costs.decode_s(1, 4032) * 1000
    for outcome in result.outcomes:
        assert outcome.inter_token_ms == pytest.approx(lone, rel=0.05)
    ttfts = sorted(outcome.ttft_s for outcome in result.outcomes)
    alone_s = ttfts[0] + 63 * lone / 1000
    for earlier, later in pairwise(ttfts):
        assert later - earlier == pytest.approx(alone_s, rel=0.1)
    assert result.mean_tpot_ms() == pytest.approx(lone, rel=0.05)


def test_vllm_v1_admits_no_waiting_prompt_in_a_pass_that_preempted() -> None:
    """``if not preempted_reqs``: a pass that had to preempt a running sequence schedules no
    waiting one (vLLM ``v1/core/sched/scheduler.py``), even one whose chunk would fit."""
    kv = 3 * 600 + 50
    policy = VllmChunked(kv_tokens=kv, max_num_seqs=256, max_num_batched_tokens=2048)
    state = _state(running=3, waiting_prompts=[16], kv_tokens=kv)
    state.running[-1].decoded += 60  # the last one's next token no longer fits: preempted
    step = policy.plan(state)
    assert state.waiting[0].request.index == 2  # the preempted one, first in the queue
    assert [s.request.index for s in state.waiting] == [2, 100]
    assert not step.prefills


def test_each_engine_allocates_its_kv_cache_from_the_memory_it_is_documented_to_take() -> None:
    """vLLM takes ``gpu_memory_utilization`` (0.9) of each GPU's memory for everything, so its
    KV cache is what the weights leave of that; LMI's TensorRT-LLM container takes 0.95 of the
    memory the weights leave (``option.kv_cache_free_gpu_mem_fraction``), TensorRT-LLM's own
    servers 0.9 (``free_gpu_memory_fraction``, what the published trtllm rows ran); TGI all of it
    (``--cuda-memory-fraction`` 1.0). Each profile's JSON states its share
    (``batching.kv_cache_memory``)."""
    memory = copy_memory(SPEC, InstanceType.of("ml.p4de.24xlarge"), 1, Precision.FP16, 1000)
    free, usable = memory.kv_free_bytes, memory.usable_bytes

    def kv_of(profile: str) -> float:
        return engine_profile(profile).engine_memory(memory).kv_free_bytes

    assert kv_of("lmi-vllm-v1") == pytest.approx(free - 0.1 * usable)
    assert kv_of("lmi-vllm-v0") == pytest.approx(free - 0.1 * usable)
    assert kv_of("lmi-trtllm") == pytest.approx(0.95 * free)
    as_measured = engine_profile("lmi-trtllm").as_measured_by("trtllm")
    assert as_measured.engine_memory(memory).kv_free_bytes == pytest.approx(0.9 * free)
    assert engine_profile("lmi-trtllm").as_measured_by("lmi-trtllm").batching.kv_cache_memory == (
        engine_profile("lmi-trtllm").batching.kv_cache_memory
    )
    assert kv_of("tgi-1") == kv_of("tgi-2-3") == free


@pytest.mark.parametrize("profile", ["lmi-vllm-v1", "lmi-trtllm", "tgi-1"])
def test_the_closed_form_and_the_simulation_give_a_copy_the_same_kv_cache(profile: str) -> None:
    """One memory rule: the sequences the closed form's limits allow (``profile_limits``) are
    what the simulated engine's KV tokens hold. Qwen3-32B-sized weights on one 80 GB GPU leave
    vLLM 9.7 GB, not the 18.3 GB the closed form counted when it gave the engine all the
    memory (167 sequences of 418 tokens against the simulation's 88)."""
    spec = ModelSpec.custom(
        "qwen3-32b-like", parameters=32.8e9, layers=64, attention_heads=64, kv_heads=8,
        head_dim=128, max_context=40960,
    )  # fmt: skip
    workload = Workload(input_tokens=217, output_tokens=201)
    layout = Layout(InstanceType.of("ml.p5.48xlarge"), 1, 1)
    engine = engine_profile(profile)
    model = profile_model(spec, layout, Precision.BF16, workload, engine)
    limits, memory = profile_limits(model, engine)
    policy = copy_policy(model, engine)
    assert limits.kv_sequences == policy.kv_tokens // workload.total_tokens
    assert memory.kv_free_bytes == pytest.approx(engine.engine_memory(
        copy_memory(spec, layout.instance_type, 1, Precision.BF16, workload.total_tokens)
    ).kv_free_bytes)  # fmt: skip

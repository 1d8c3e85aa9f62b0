"""Gamma arrivals (a burstiness factor, 1 = Poisson) and a linear ramp-up, seeded: the achieved
rate and the inter-arrival coefficient of variation match their targets, read from the
schedule (deterministic), not from the wall clock."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking import Arrival, BenchmarkLoad
from cdk_sagemaker_llm.benchmarking.arrivals import achieved_rate, ramp
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError


def cv(offsets: list[float]) -> float:
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    return statistics.pstdev(gaps) / statistics.mean(gaps)


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_gamma_rate_is_exact_and_cv_is_one_over_sqrt_burstiness(burstiness: float) -> None:
    offsets = Arrival.gamma(burstiness, seed=7).schedule(50.0, 20_001)
    assert achieved_rate(offsets) == pytest.approx(50.0, rel=1e-9)  # conditioned on the count
    assert cv(offsets) == pytest.approx(1 / math.sqrt(burstiness), rel=0.05)


def test_burstiness_1_is_poisson_and_seeds_reproduce() -> None:
    gamma = Arrival.gamma(1.0, seed=3).schedule(10.0, 5_001)
    poisson = Arrival.poisson(seed=3).schedule(10.0, 5_001)
    assert cv(gamma) == pytest.approx(1.0, rel=0.05) and cv(poisson) == pytest.approx(1.0, rel=0.05)
    assert gamma == Arrival.gamma(1.0, seed=3).schedule(10.0, 5_001)
    assert gamma != Arrival.gamma(1.0, seed=4).schedule(10.0, 5_001)


@pytest.mark.parametrize(
    "arrival",
    [Arrival.constant(ramp_up_s=20), Arrival.poisson(5, ramp_up_s=20),
     Arrival.gamma(0.5, 5, ramp_up_s=20)],
)  # fmt: skip
def test_a_linear_ramp_then_the_target_rate(arrival: Arrival) -> None:
    rate, requests = 20.0, 4_001
    offsets = arrival.schedule(rate, requests)
    during = [t for t in offsets if t < 20]
    after = [t for t in offsets if t >= 20]
    # Expected count over the ramp: rate x ramp / 2 = 200 (Poisson noise ~ sqrt(200) x CV).
    assert len(during) == pytest.approx(200, abs=4 * math.sqrt(200) * max(1.0, cv(offsets)))
    assert achieved_rate(after) == pytest.approx(rate, rel=0.05)
    # Linear: the first and second halves of the ramp hold 1/4 and 3/4 of its arrivals.
    first = sum(1 for t in during if t < 10)
    assert first / len(during) == pytest.approx(0.25, abs=0.08)
    if arrival.kind == "constant":
        assert len(during) == 200 and ramp([0.0, 2.5, 10.0, 30.0], 20) == [0.0, 10.0, 20.0, 40.0]


def test_worker_shares_of_a_gamma_or_ramped_level_deal_out_its_schedule() -> None:
    for arrival in (Arrival.gamma(0.5, 2), Arrival.poisson(2, ramp_up_s=5)):
        whole = arrival.schedule(30.0, 301)
        parts = [arrival.share(30.0, 301, part, 4) for part in range(4)]
        assert sorted(t for part in parts for t in part) == whole


def test_arrivals_are_checked() -> None:
    with pytest.raises(ValidationError, match="burstiness"):
        Arrival.gamma(0.0)
    with pytest.raises(ValidationError, match="only gamma"):
        Arrival("poisson", burstiness=2.0)
    with pytest.raises(ValidationError, match="ramp_up_s"):
        Arrival.poisson(ramp_up_s=-1)
    assert Arrival.gamma(0.5, 1, ramp_up_s=3).describe() == (
        "gamma, burstiness 0.5 (seed 1), linear ramp-up over 3 s"
    )
    assert BenchmarkLoad.request_rates([1.0], arrival=Arrival.gamma(0.5)).arrival is not None


def test_cli_gamma_with_a_ramp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    out = tmp_path / "gamma.json"
    with Simulator(SimulatorConfig(max_batch=8, step_base_s=0.002)) as sim:
        code = main(
            [
                "benchmark", "--endpoint-name", "ep", "--region", "us-east-1",
                "--endpoint-url", sim.endpoint_url, "--request-rate", "20",
                "--arrival", "gamma", "--burstiness", "0.5", "--seed", "1", "--ramp-up-s", "0.5",
                "--input-tokens", "4", "--output-tokens", "4", "--requests-per-level", "30",
                "--out", str(out),
            ]
        )  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    assert data["open_loop"]["burstiness"] == 0.5 and data["open_loop"]["ramp_up_s"] == 0.5
    assert data["open_loop"]["process"].startswith("gamma, burstiness 0.5")
    (level,) = data["levels"]
    assert level["requests"] == 30 and level["sustainable"] is True  # judged on what was offered
    assert main(["benchmark", "--endpoint-name", "e", "--out", "x", "--region", "us-east-1",
                 "--request-rate", "5", "--burstiness", "2"]) == 2  # fmt: skip

"""What the minimum traffic keeps, priced per option by ``recommend`` (issue 30 item 5: $/h at
the minimum, expected at the peak and at the ceiling), by the same rule ``LlmService`` sets
its fewest copies by."""

from __future__ import annotations

import json
import re

import pytest

from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.planning.service_request import ExpectedTraffic

RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
    "--max-ms-per-token", "60", "--requests-per-second", "20", "--instance-types",
    "ml.g5.2xlarge", "--top", "1",
]  # fmt: skip


def _first_option(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main([*RECOMMEND, *extra, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    return document["options"][0] | {"decision": document["decision"]}


def test_the_fewest_copies_are_counted_as_the_peaks_are() -> None:
    rate = ExpectedTraffic.requests_per_second(10, minimum=2)
    assert rate.fewest_copies(target=5, rate_per_copy=0.4, most=8) == 5
    assert rate.fewest_copies(target=5, rate_per_copy=0.4, most=3) == 3  # at most the peak's
    idle = ExpectedTraffic.requests_per_second(10)
    assert idle.fewest_copies(target=5, rate_per_copy=0.4, most=8) == 1  # one copy kept
    held = ExpectedTraffic.concurrency(40, minimum=9)
    assert held.fewest_copies(target=4, rate_per_copy=99.0, most=10) == 3


def test_recommend_prices_each_option_at_the_minimum_as_llm_service_keeps_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Was: ``recommend`` showed $/hour at the peak and at the ceiling only, and its "As an
    LlmService" section always kept one copy."""
    option = _first_option(capsys, "--minimum", "8")
    choices = option["decision"]["choices"]
    assert 1 < option["min_instance_count"] < option["instance_count"]
    assert option["min_instance_count"] == choices["min_instances"]["value"]
    unit = option["price_per_hour"] / option["instance_count"]
    assert option["min_price_per_hour"] == pytest.approx(unit * option["min_instance_count"])
    assert "minimum 8 requests/s" in option["decision"]["traffic"]
    idle = _first_option(capsys)
    assert idle["min_instance_count"] == 1
    busy = _first_option(capsys, "--minimum", "20")
    assert busy["min_instance_count"] == busy["instance_count"]


def test_the_markdown_shows_the_minimum_beside_the_peak_and_the_ceiling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    option = _first_option(capsys, "--minimum", "8")
    assert main([*RECOMMEND, "--minimum", "8"]) == 0
    out = capsys.readouterr().out
    assert "| minimum (min instances) | $/hour at peak |" in out
    (cell,) = re.findall(r"\| (\d+) \(\$([\d.]+)/hour\) \| \$[\d.]+ \|", out)
    assert int(cell[0]) == option["min_instance_count"]
    assert float(cell[1]) == pytest.approx(option["min_price_per_hour"], abs=0.006)


@pytest.mark.parametrize(
    ("traffic", "minimum", "message"),
    [
        (["--requests-per-second", "4"], "5", "--minimum=5.0: must be between 0 and 4"),
        (["--requests-per-second", "4"], "-1", "--minimum=-1.0: must be between 0 and 4"),
        (["--concurrency", "16"], "2.5", "--minimum=2.5: must be whole with --concurrency"),
    ],
)
def test_a_bad_minimum_is_refused_naming_the_flag(
    traffic: list[str], minimum: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
        "256", "--max-ms-per-token", "60", *traffic, "--minimum", minimum,
    ]  # fmt: skip
    assert main(argv) == 2
    assert message in capsys.readouterr().err

"""``cdk-sagemaker-llm simulate``: the loopback simulator from the command line, as the
benchmarks guide runs it (its documented session runs here, on a free port)."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from conftest import PROJECT_ROOT

from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth

CLI = [sys.executable, "-m", "cdk_sagemaker_llm.cli"]
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
GUIDE = PROJECT_ROOT / "docs" / "guides" / "benchmarks.md"


@contextmanager
def simulate(*args: str) -> Iterator[str]:
    """Run the command until the block ends (SIGTERM, as `kill` sends); yields its URL."""
    server = subprocess.Popen(
        [*CLI, "simulate", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url, server.stderr.read() if server.stderr else ""
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0


def documented_session() -> list[list[str]]:
    """The guide's shell session (simulate, benchmark, report), one argv per command."""
    text = GUIDE.read_text()
    block = re.search(r"\[start:simulate\] -->\n```bash\n(.*?)```", text, re.DOTALL)
    assert block, "the benchmarks guide lost its simulate session"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip()]


def test_serves_on_loopback_with_the_given_options() -> None:
    with simulate(
        "--port", "0", "--container", "tgi", "--max-batch", "2", "--step-base-s", "0.001"
    ) as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        runtime = boto3.session.Session(
            aws_access_key_id="test", aws_secret_access_key="test"
        ).client(
            "sagemaker-runtime", region_name="us-east-1", endpoint_url=url,
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )  # fmt: skip
        body = {"inputs": "one two three", "parameters": {"max_new_tokens": 3, "details": True}}
        answer = runtime.invoke_endpoint(
            EndpointName="ep", Body=json.dumps(body), ContentType="application/json"
        )
        (generated,) = json.loads(answer["Body"].read())  # TGI: a one-element list
        assert generated["details"]["generated_tokens"] == 3
        (truth,) = fetch_truth(url)
        assert (truth.input_tokens, truth.output_tokens, truth.outcome) == (3, 3, "ok")


def test_a_taken_port_is_one_error_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*CLI, "simulate", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in result.stderr


def test_the_documented_session_runs(tmp_path: Path) -> None:
    """The guide's commands as written, but on a free port instead of 8080."""
    start, bench, report, stop = documented_session()
    assert start[:2] == ["cdk-sagemaker-llm", "simulate"] and start[-1] == "&"
    assert stop == ["kill", "%1"]
    with simulate(*start[2:-1], "--port", "0") as url:
        env = dict(arg.split("=", 1) for arg in bench if re.fullmatch(r"[A-Z_]+=.*", arg))
        assert env == CREDENTIALS
        argv = [arg for arg in bench if not re.fullmatch(r"[A-Z_]+=.*", arg)]
        assert argv[:2] == ["cdk-sagemaker-llm", "benchmark"]
        argv[argv.index("--endpoint-url") + 1] = url
        ran = subprocess.run(
            [*CLI, *argv[1:]], capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**_environment(), **env},
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    assert report[:2] == ["cdk-sagemaker-llm", "report"]
    rendered = subprocess.run(
        [*CLI, *report[1:]], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert rendered.returncode == 0, rendered.stderr
    assert "| concurrency |" in rendered.stdout


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_every_option_is_in_the_guide_table() -> None:
    import argparse

    from cdk_sagemaker_llm.benchmarking.simulator_cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    guide = GUIDE.read_text()
    for action in parser._actions:
        if action.dest != "help":
            assert any(f"| `{flag}" in guide for flag in action.option_strings), action.dest


def test_serves_a_model_from_the_engine_simulation_on_its_virtual_clock() -> None:
    from cdk_sagemaker_llm.benchmarking.simulated_engine import EngineSimulation
    from cdk_sagemaker_llm.catalog.instance_types import InstanceType
    from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
    from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
    from cdk_sagemaker_llm.planning.scheduling.capacity import CopySimulation
    from cdk_sagemaker_llm.planning.workload import Workload

    model = "meta-llama/Llama-3.1-8B-Instruct"
    flags = ["--model", model, "--instance-type", "ml.g5.2xlarge", "--engine", "tgi-1"]
    sizes = ["--input-tokens", "64", "--output-tokens", "8", "--time-scale", "0.1"]
    with simulate(*flags, *sizes, "--container", "tgi", "--port", "0") as url:
        runtime = boto3.session.Session(
            aws_access_key_id="test", aws_secret_access_key="test"
        ).client(
            "sagemaker-runtime", region_name="us-east-1", endpoint_url=url,
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )  # fmt: skip
        body = {
            "inputs": " ".join(["word"] * 64),
            "parameters": {"max_new_tokens": 8, "details": True},
        }
        answer = runtime.invoke_endpoint(
            EndpointName="ep", Body=json.dumps(body), ContentType="application/json"
        )
        (generated,) = json.loads(answer["Body"].read())
        assert generated["details"]["generated_tokens"] == 8
        (truth,) = fetch_truth(url)
    spec = ModelSpec.from_hugging_face_id(model)
    assert spec is not None
    engine = EngineSimulation.of(
        spec, InstanceType.of("ml.g5.2xlarge"), engine_profile("tgi-1"), Workload(64, 8)
    )
    alone = CopySimulation(engine.model, engine.profile).level(1)
    assert truth.virtual_end is not None and truth.virtual_arrival is not None
    e2e_ms = (truth.virtual_end - truth.virtual_arrival) * 1000
    assert e2e_ms / 8 == pytest.approx(alone.ms_per_token, rel=0.02)


def test_a_model_without_an_instance_type_is_one_error_line() -> None:
    result = subprocess.run(
        [*CLI, "simulate", "--port", "0", "--model", "meta-llama/Llama-3.1-8B-Instruct"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: --instance-type=None: is required with --model")


def test_serves_a_model_with_an_fp8_kv_cache_holding_more_sequences() -> None:
    from cdk_sagemaker_llm.benchmarking.simulated_engine import EngineSimulation
    from cdk_sagemaker_llm.catalog.instance_types import InstanceType
    from cdk_sagemaker_llm.catalog.model_specs import KvCachePrecision, ModelSpec
    from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
    from cdk_sagemaker_llm.planning.workload import Workload

    spec = ModelSpec.preset("llama-3-8b")
    l4, profile, workload = (
        InstanceType.of("ml.g6.xlarge"),
        engine_profile("lmi-vllm-v1"),
        Workload(4000, 200),
    )
    auto = EngineSimulation.of(spec, l4, profile, workload)
    fp8 = EngineSimulation.of(spec, l4, profile, workload, kv_cache=KvCachePrecision.FP8)
    # one byte per element instead of two: the same memory holds about twice the tokens
    assert fp8.policy().kv_tokens == pytest.approx(2 * auto.policy().kv_tokens, rel=0.01)


def test_an_fp8_kv_cache_on_an_a10g_is_one_error_line_naming_the_flag() -> None:
    flags = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance-type", "ml.g5.2xlarge"]
    result = subprocess.run(
        [*CLI, "simulate", "--port", "0", *flags, "--kv-cache-precision", "fp8"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: --kv-cache-precision='fp8': NVIDIA A10G has no FP8")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--port", "99999"], "--port=99999"),
        (["--instances", "0"], "--instances=0"),
        (["--max-batch", "0"], "--max-batch=0"),
        (["--step-base-s", "-1"], "--step-base-s=-1.0"),
        (["--model-error-every", "-1"], "--model-error-every=-1"),
    ],
)
def test_an_out_of_range_option_is_one_error_line_naming_the_flag(
    args: list[str], flag: str
) -> None:
    """Out-of-range options fail before serving, naming the flag as written (a batch of 0
    served requests that never finished; a port past 65535 was a traceback)."""
    result = subprocess.run([*CLI, "simulate", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {flag}: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--instance-type", "ml.g5.2xlarge", "--time-scale", "0.1"],
         "error: --instance-type, --time-scale=['ml.g5.2xlarge', 0.1]: applies to the engine "
         "simulation, which serves only with --model"),
        (["--engine", "lmi:0.38.0"], "error: --engine='lmi:0.38.0': applies to the engine"),
        (["--input-tokens", "512"], "error: --input-tokens=512: applies"),  # typed, if default
        (["--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge", "--max-batch", "2",
          "--step-base-s", "0.5"],
         "error: --max-batch, --step-base-s=[2, 0.5]: the step law's flags do not apply with "
         "--model"),
    ],
)  # fmt: skip
def test_flags_of_the_mode_not_served_are_refused_by_name(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """They were ignored: the step law served --instance-type without --model, and the engine
    simulation served --model with --max-batch and --step-base-s."""
    from cdk_sagemaker_llm.cli import main

    assert main(["simulate", "--port", "0", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and "Fix: " in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-batch", "2", "--step-base-s", "0.01", "--max-queue", "1"],
        ["--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge", "--max-queue", "1"],
    ],
)
def test_each_mode_serves_its_own_flags_and_the_defaults(
    flags: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdk_sagemaker_llm.benchmarking import simulator_cli
    from cdk_sagemaker_llm.cli import main

    served = []
    monkeypatch.setattr(
        simulator_cli, "serve_until_interrupted", lambda config, port: served.append(config) or 0
    )
    assert main(["simulate", "--port", "0", *flags]) == 0
    (config,) = served
    assert config.max_queue == 1
    if "--model" in flags:
        assert config.engine is not None and config.engine.time_scale == 1.0
        assert (config.max_batch, config.step_base_s) == (8, 0.005)  # the defaults, unused
    else:
        assert config.engine is None and (config.max_batch, config.step_base_s) == (2, 0.01)


def test_serves_the_engine_with_the_memory_share_its_container_will_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--engine-memory-share``, as ``predict`` and ``recommend`` read it: the simulated
    engine holds the KV cache that share leaves (Llama 3 8B on one L4 at 4,200 tokens: fewer
    at vLLM's 0.85 than at its default 0.9), so that simulate -> benchmark -> calibrate ->
    recommend sizes one configuration; without ``--model`` the flag is refused by name."""
    from cdk_sagemaker_llm.benchmarking import simulator_cli
    from cdk_sagemaker_llm.cli import main

    served: list[Any] = []
    monkeypatch.setattr(
        simulator_cli, "serve_until_interrupted", lambda config, port: served.append(config) or 0
    )
    base = ["simulate", "--port", "0", "--model", "llama-3-8b", "--instance-type", "ml.g6.xlarge"]
    base += ["--input-tokens", "4000", "--output-tokens", "200"]
    assert main(base) == 0
    assert main([*base, "--engine-memory-share", "0.85"]) == 0
    default, smaller = (config.engine.policy().kv_tokens for config in served)
    assert 0 < smaller < default
    assert main(["simulate", "--port", "0", "--engine-memory-share", "0.85"]) == 2

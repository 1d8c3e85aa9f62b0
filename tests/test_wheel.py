"""The package as a user gets it: the wheel built from this tree, installed into a clean virtual
environment with no dev extras, runs every documented command.

The wheel is built once per session (``python -m build --wheel --no-isolation``, a few seconds)
and installed without network from the wheelhouse ``scripts/setup.sh`` fills with exactly the
versions of ``constraints/tested.txt`` (``$CDK_SAGEMAKER_LLM_WHEELHOUSE`` overrides its place).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from documentation import documentation_text

from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.commands import COMMAND_MODULES

WHEELHOUSE = Path(
    os.environ.get("CDK_SAGEMAKER_LLM_WHEELHOUSE", PROJECT_ROOT / ".venv" / "wheelhouse")
)

QUICK_START_APP = """
import sys
from aws_cdk import App, Environment, Size, Stack
from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    InferenceComponentEndpoint,
    InstanceType,
    Model,
)

app = App(outdir=sys.argv[1])
stack = Stack(app, "Llm", env=Environment(region="us-west-2"))
model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
endpoint.add_inference_component(
    "Component",
    serves=ComponentModel.of(model),
    resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
)
app.synth()
"""


class CleanVenv:
    """A virtual environment with nothing but what the wheel's dependencies bring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.python = root / "bin" / "python"
        self.cli = root / "bin" / "cdk-sagemaker-llm"
        # The user's view: no dev venv on PATH for Python, but Node (for jsii) stays reachable.
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                # PYTEST_: an xdist worker's PYTEST_XDIST_WORKER would make the scaffold's own
                # pytest act as a worker (syrupy then prints no snapshot summary).
                if not k.startswith(("VIRTUAL_ENV", "PYTHON", "AWS_", "PYTEST_"))
            },
            "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def install(self, *requirements: str) -> None:
        """Install from the local wheelhouse only (no index, no network)."""
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(self.python), "install", "--quiet",
             "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE), *requirements],
            check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.cli), *args], capture_output=True, text=True, timeout=300,
            env={**self.env, **(env or {})}, cwd=self.root,
        )  # fmt: skip


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), "."],
        cwd=PROJECT_ROOT, check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("cdk_sagemaker_llm-*.whl")
    return built


@pytest.fixture(scope="session")
def clean_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CleanVenv]:
    if not any(WHEELHOUSE.glob("aws_cdk_lib-*.whl")):
        pytest.fail(f"no wheelhouse at {WHEELHOUSE}: run `bash scripts/setup.sh` (it fills it)")
    root = tmp_path_factory.mktemp("clean-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    venv = CleanVenv(root)
    venv.install(str(wheel))
    yield venv


def test_the_wheel_ships_the_type_marker_and_the_handlers(wheel: Path) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    assert "cdk_sagemaker_llm/py.typed" in names
    for step in (
        "handler",
        "custom_resource",
        "advance",
        "worker",
        "results",
        "signal",
        "run_config",
    ):
        assert f"cdk_sagemaker_llm/lambdas/benchmark/{step}.py" in names
    assert "cdk_sagemaker_llm/lambdas/optimization_job/handler.py" in names
    assert not any(name.startswith("tests/") for name in names)


def test_the_wheel_carries_the_single_sourced_version(wheel: Path) -> None:
    import zipfile

    import cdk_sagemaker_llm

    assert wheel.name.startswith(f"cdk_sagemaker_llm-{cdk_sagemaker_llm.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert f"\nVersion: {cdk_sagemaker_llm.__version__}\n" in text


def test_the_documented_wheel_path_is_the_one_taken_here(wheel: Path) -> None:
    """The install guide builds with `python -m build --wheel` (as the fixture does, offline
    with --no-isolation) and installs the file it names, which is the one built here."""
    guide = (PROJECT_ROOT / "docs" / "guides" / "your-own-app.md").read_text()
    block = guide.split("[start:wheel] -->", 1)[1].split("[end:wheel]", 1)[0]
    assert "python -m build --wheel" in block
    assert f"pip install /path/to/cdk-sagemaker-llm/dist/{wheel.name}" in block
    assert "git checkout <commit>" in block


def test_building_leaves_no_build_folder_in_the_tree(wheel: Path) -> None:
    assert not (PROJECT_ROOT / "build").exists()


def test_every_command_is_documented() -> None:
    documentation = documentation_text()
    for command in COMMAND_MODULES:
        assert f"cdk-sagemaker-llm {command}" in documentation, command


@pytest.mark.parametrize("command", ["", *COMMAND_MODULES])
def test_help_of_every_command(clean_venv: CleanVenv, command: str) -> None:
    result = clean_venv.run(*([command] if command else []), "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: cdk-sagemaker-llm" in result.stdout
    assert result.stderr == ""  # no banner, no warning


def test_size_runs(clean_venv: CleanVenv) -> None:
    result = clean_venv.run(
        "size", "--model", "llama-3-8b", "--instance-type", "ml.g5.12xlarge", "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)


def test_a_cdk_app_synthesizes_and_plan_reads_it(clean_venv: CleanVenv) -> None:
    app = clean_venv.root / "app.py"
    app.write_text(QUICK_START_APP)
    synth = subprocess.run(
        [str(clean_venv.python), str(app), str(clean_venv.root / "cdk.out")],
        capture_output=True, text=True, timeout=300, env=clean_venv.env,
    )  # fmt: skip
    assert synth.returncode == 0, synth.stderr
    assert "b'!!" not in synth.stderr  # jsii's raw end-of-life banner
    plan = clean_venv.run("plan", str(clean_venv.root / "cdk.out"), "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert "ml.g5.12xlarge" in plan.stdout


def test_an_init_scaffold_synthesizes_with_the_cdk_cli_and_passes_its_test(
    clean_venv: CleanVenv, tmp_path: Path
) -> None:
    """What the scaffold's README says, offline: the requirements (the pinned library is the
    wheel installed above; pytest and syrupy come from the wheelhouse), Node.js 22 and the CDK
    CLI in node_modules/ (this project's own: the same pins, see tests/test_init.py), then
    `npx cdk synth` and the snapshot test recording its snapshot."""
    app = tmp_path / "platform"
    init = clean_venv.run("init", str(app))
    assert init.returncode == 0, init.stderr
    clean_venv.install("-r", str(app / "requirements-dev.txt"))
    (app / "node_modules").symlink_to(PROJECT_ROOT / "node_modules", target_is_directory=True)
    env = {**clean_venv.env, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    synth = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet", "--no-notices"],
        cwd=app, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert synth.returncode == 0, synth.stdout + synth.stderr
    template = json.loads((app / "cdk.out" / "LlmPlatform.template.json").read_text())
    types = [resource["Type"] for resource in template["Resources"].values()]
    assert types.count("AWS::SageMaker::InferenceComponent") == 2
    tests = subprocess.run(
        [str(clean_venv.python), "-m", "pytest", "--snapshot-update", "-q", "-p", "no:cacheprovider"],
        cwd=app, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "2 passed" in tests.stdout and "1 snapshot generated" in tests.stdout
    assert (app / "tests" / "__snapshots__" / "test_app.ambr").is_file()


def test_benchmark_needs_the_extra_then_runs_and_report_reads_it(clean_venv: CleanVenv) -> None:
    out = clean_venv.root / "results.json"
    credentials = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    config = SimulatorConfig(response_format="tgi", max_batch=2, step_base_s=0.002)
    with Simulator(config) as sim:
        args = (
            "benchmark", "--endpoint-name", "ep", "--endpoint-url", sim.endpoint_url,
            "--concurrency", "1,2", "--input-tokens", "6", "--output-tokens", "4",
            "--requests-per-level", "4", "--out", str(out),
        )  # fmt: skip
        without_boto3 = clean_venv.run(*args, "--region", "us-west-2", env=credentials)
        assert without_boto3.returncode == 2
        assert "pip install 'cdk-sagemaker-llm[benchmark]'" in without_boto3.stderr
        assert "Traceback" not in without_boto3.stderr

        clean_venv.install("boto3")
        no_region = clean_venv.run(*args, env={**credentials, "AWS_CONFIG_FILE": "/dev/null"})
        assert no_region.returncode == 2 and "--region" in no_region.stderr, no_region.stderr
        no_credentials = clean_venv.run(
            *args, "--region", "us-west-2",
            env={"AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_CONFIG_FILE": "/dev/null"},
        )  # fmt: skip
        assert no_credentials.returncode == 2 and "AWS_ACCESS_KEY_ID" in no_credentials.stderr

        result = clean_venv.run(*args, "--region", "us-west-2", env=credentials)
        assert result.returncode == 0, result.stderr
        assert len(sim.truth()) == 1 + 4 + 4  # warm-up, then two levels of 4
    assert [level["requests"] for level in json.loads(out.read_text())["levels"]] == [4, 4]
    report = clean_venv.run("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "| concurrency |" in report.stdout

"""The measure-and-decide guide (docs/guides/measure-and-decide.md) runs as written: its one
shell block (simulate, benchmark, calibrate, ``recommend --calibration``, an app with
``LlmService(sizing=Sizing(calibration=...))``, ``plan``) copied from the page and run by bash in
an empty directory, on a free port instead of 8080, with no AWS credentials."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT

GUIDE = PROJECT_ROOT / "docs" / "guides" / "measure-and-decide.md"


def _block() -> str:
    text = GUIDE.read_text()
    snippet = text.split("[start:loop] -->\n", 1)[1].split("<!-- --8<-- [end:loop]", 1)[0]
    assert snippet.startswith("```bash\n") and snippet.rstrip().endswith("```")
    return snippet.removeprefix("```bash\n").rstrip().removesuffix("```")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_guide_is_in_the_site_navigation() -> None:
    assert "guides/measure-and-decide.md" in (PROJECT_ROOT / "mkdocs.yml").read_text()


def test_the_documented_loop_runs_as_written(tmp_path: Path) -> None:
    block = _block()
    for step in ("simulate", "benchmark", "calibrate", "recommend", "plan"):
        assert f"cdk-sagemaker-llm {step}" in block
    assert "Sizing(calibration=Calibration.from_file(" in block
    script = tmp_path / "loop.sh"
    script.write_text(block.replace("8080", str(_free_port())))
    shim = tmp_path / "bin" / "cdk-sagemaker-llm"  # this tree's code, as the console script
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cdk_sagemaker_llm "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    path = [str(shim.parent), str(Path(sys.executable).parent)]
    path += [str(PROJECT_ROOT / "node_modules" / ".bin"), os.environ["PATH"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "PATH": os.pathsep.join(path),
        "PYTHONPATH": str(PROJECT_ROOT),
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", str(script)], cwd=work, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-4000:]

    results = json.loads((work / "results.json").read_text())
    assert results and (work / "calibration.json").is_file()
    calibration = json.loads((work / "calibration.json").read_text())
    assert calibration["engine"] == {"family": "lmi", "version": "0.38.0"}
    assert calibration["hardware"]["instance_type"] == "ml.g5.2xlarge"
    assert calibration["levels"] == 3
    decision = (work / "decision.json").read_text()
    assert "calibrated on results.json" in decision
    plan = (work / "plan.md").read_text()
    assert "| Calibration | calibrated on results.json" in plan
    assert "### Monthly cost and quotas" in plan

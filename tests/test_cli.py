"""The console script answers --help and --version."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cdk_sagemaker_llm.cli import main


def test_help_lists_the_program(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "cdk-sagemaker-llm" in capsys.readouterr().out


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "usage: cdk-sagemaker-llm" in capsys.readouterr().out


def test_console_script_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cdk_sagemaker_llm.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith("cdk-sagemaker-llm ")

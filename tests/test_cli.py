"""The console script answers --help and --version."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from cdk_sagemaker_llm.cli import build_parser, main


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


def _subcommands() -> list[str]:
    (subparsers,) = (
        action for action in build_parser()._actions if isinstance(action.choices, dict)
    )
    assert isinstance(subparsers.choices, dict)
    return sorted(subparsers.choices)


@pytest.mark.parametrize("command", _subcommands())
def test_each_command_s_help_raises_no_deprecation_warning(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse (Python 3.11+) deprecates an argument group nested in another: building and
    printing every command's help must not trip it (nor any other deprecation)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: cdk-sagemaker-llm {command}" in capsys.readouterr().out

"""The version has one source, ``cdk_sagemaker_llm.__version__``: the built wheel's metadata,
``--version`` and the CHANGELOG's latest release all say the same."""

from __future__ import annotations

import re
import tomllib

import pytest
from conftest import PROJECT_ROOT

import cdk_sagemaker_llm
from cdk_sagemaker_llm.cli import main

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def test_the_version_is_semantic() -> None:
    assert SEMVER.match(cdk_sagemaker_llm.__version__), cdk_sagemaker_llm.__version__


def test_pyproject_reads_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "cdk_sagemaker_llm/_version.py"


def test_the_changelog_names_the_version_as_its_latest_release() -> None:
    """A release bumps ``__version__`` and turns [Unreleased] into its section together."""
    headings = re.findall(r"^## \[([^\]]+)\]", (PROJECT_ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased"
    assert headings[1] == cdk_sagemaker_llm.__version__


def test_the_command_line_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cdk-sagemaker-llm {cdk_sagemaker_llm.__version__}"


def test_the_readme_states_the_versioning_policy() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    policy = readme.split("## Versioning", 1)[1]
    assert "Semantic Versioning" in policy and "breaking" in policy
    assert "replaces or deletes a deployed resource" in " ".join(policy.split())

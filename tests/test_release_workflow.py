"""The release workflow: on a version tag, test and build, then publish with trusted
publishing. actionlint checks it in scripts/test.sh; this pins the release's shape."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import PROJECT_ROOT

WORKFLOW = PROJECT_ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def test_runs_on_version_tags_only() -> None:
    triggers = workflow()[True]  # YAML 1.1 reads the key `on` as true
    assert list(triggers) == ["push"]
    assert triggers["push"] == {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}


def test_builds_after_the_whole_suite_and_checks_the_tag() -> None:
    steps = workflow()["jobs"]["build"]["steps"]
    runs = [step.get("run", "") for step in steps]
    suite = next(i for i, run in enumerate(runs) if "bash .ci/run" in run)
    build = next(i for i, run in enumerate(runs) if "python -m build" in run)
    tag = next(i for i, run in enumerate(runs) if "__version__" in run)
    assert tag < suite < build
    assert "CHANGELOG.md" in runs[tag]


def test_publishes_with_trusted_publishing_from_an_environment() -> None:
    data = workflow()
    assert data["permissions"] == {"contents": "read"}  # the default for every job
    publish = data["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}  # only the publishing job
    assert publish["environment"]["name"] == "pypi"
    (action,) = [s["uses"] for s in publish["steps"] if "pypi-publish" in s.get("uses", "")]
    assert action.startswith("pypa/gh-action-pypi-publish@")
    assert all("password" not in step.get("with", {}) for step in publish["steps"])  # no token


def test_actionlint_passes() -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed: run `bash scripts/setup.sh` (dev extra)")
    result = subprocess.run(
        [actionlint, "-color=false", str(WORKFLOW)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""``cdk-sagemaker-llm init``: what the scaffold holds and how the command refuses. (That the
scaffold synthesizes with the CDK CLI and passes its own test, from a clean environment with
the wheel installed, is in tests/test_wheel.py.)"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from cdk_sagemaker_llm import __version__
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.commands import init

EXPECTED = {
    "app.py", "cdk.json", "requirements.txt", "requirements-dev.txt", "package.json",
    ".gitignore", "pytest.ini", "README.md", "tests/test_app.py",
}  # fmt: skip


def test_init_writes_the_app(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "my-platform"
    assert main(["init", str(target)]) == 0
    written = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    assert written == EXPECTED
    assert "npx cdk synth" in (target / "README.md").read_text()
    assert f"Wrote a CDK app to {target}/" in capsys.readouterr().out


def test_the_app_composes_a_service_and_a_component_endpoint(tmp_path: Path) -> None:
    files = init.render(tmp_path / "platform", "LlmPlatform")
    app = files["app.py"]
    ast.parse(app)  # valid Python once rendered
    ast.parse(files["tests/test_app.py"])
    assert "LlmService(" in app and "InferenceComponentEndpoint(" in app
    assert 'LlmPlatformStack(app, "LlmPlatform"' in app
    assert "normalized_template" in files["tests/test_app.py"]
    assert "{{" not in "".join(files.values())
    assert json.loads(files["cdk.json"])["app"] == "python3 app.py"
    assert "cdk.out/" in files[".gitignore"] and "node_modules/" in files[".gitignore"]


def test_the_requirements_pin_this_release(tmp_path: Path) -> None:
    files = init.render(tmp_path, "LlmPlatform")
    pins = [line for line in files["requirements.txt"].splitlines() if not line.startswith("#")]
    assert pins == [f"cdk-sagemaker-llm=={__version__}"]
    assert "-r requirements.txt" in files["requirements-dev.txt"].splitlines()


def test_node_and_the_cdk_cli_come_from_npm_as_in_this_project(tmp_path: Path) -> None:
    """The scaffold pins what this project's own set-up installs (package.json)."""
    ours = json.loads((PROJECT_ROOT / "package.json").read_text())["devDependencies"]
    theirs = json.loads(init.render(tmp_path / "My App", "LlmPlatform")["package.json"])
    assert theirs["devDependencies"] == {"aws-cdk": ours["aws-cdk"], "node": ours["node"]}
    assert theirs["name"] == "my-app"
    readme = init.render(tmp_path, "LlmPlatform")["README.md"]
    assert "npm install" in readme and "Node.js 22" in readme and "`node` package" in readme


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app.py").write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 2
    assert "already has app.py" in capsys.readouterr().err
    assert (tmp_path / "app.py").read_text() == "# mine\n"
    assert not (tmp_path / "cdk.json").exists()  # nothing written


def test_a_bad_stack_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path), "--stack-name", "my stack"]) == 2
    assert "--stack-name 'my stack'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())

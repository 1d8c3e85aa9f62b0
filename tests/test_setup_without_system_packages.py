"""Set-up needs Python and npm only: synthesizing never reaches for the system package manager
(the documentation site's browser is the test command's own set-up), ``init`` runs before any
environment exists, and the install docs name no git tag that does not exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT

SYSTEM_PACKAGE_MANAGERS = ("apt-get", "apt", "dpkg", "sudo")
"""Commands that set-up for synth must never run."""


def _scripts_run_by(script: str) -> set[str]:
    """``script`` and every script under scripts/ it runs or sources, transitively."""
    seen: set[str] = set()
    todo = [script]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = (PROJECT_ROOT / name).read_text()
        todo += re.findall(r"(?:bash|source|\.)\s+(scripts/[\w.-]+\.sh)", text)
    return seen


def _commands(text: str) -> str:
    """A shell script without its comments."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def test_synth_and_its_set_up_never_run_the_system_package_manager() -> None:
    scripts = _scripts_run_by("scripts/synth.sh")
    assert "scripts/setup.sh" in scripts
    for name in scripts:
        body = _commands((PROJECT_ROOT / name).read_text())
        for manager in SYSTEM_PACKAGE_MANAGERS:
            assert not re.search(rf"(?<![\w-]){manager}(?![\w-])", body), (name, manager)


def test_only_the_test_command_installs_the_browser() -> None:
    assert "scripts/setup_browser.sh" in _scripts_run_by("scripts/test.sh")
    assert "scripts/setup_browser.sh" not in _scripts_run_by("scripts/synth.sh")
    browser = (PROJECT_ROOT / "scripts" / "setup_browser.sh").read_text()
    assert "DPkg::Lock::Timeout" in browser  # a held lock is waited on, then reported
    assert "exit 0" in browser.rstrip().splitlines()[-1]  # and never fails the test command


def test_init_runs_from_an_empty_directory_without_an_environment_or_apt(tmp_path: Path) -> None:
    """``python -m cdk_sagemaker_llm init`` from a clone with a bare interpreter (``-S``: no
    site-packages, so no aws-cdk-lib, no virtual environment), in an empty directory, with the
    system package manager unavailable: every apt/dpkg on PATH fails and leaves a mark."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    mark = tmp_path / "package-manager-called"
    for manager in SYSTEM_PACKAGE_MANAGERS:
        tool = fake_bin / manager
        tool.write_text(f'#!/bin/sh\necho "$0 $*" >> {mark}\nexit 100\n')
        tool.chmod(0o755)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {
        "PATH": f"{fake_bin}:/usr/bin:/bin",
        "PYTHONPATH": str(PROJECT_ROOT),
        "HOME": str(tmp_path),
    }
    run = subprocess.run(
        [sys.executable, "-S", "-m", "cdk_sagemaker_llm", "init", "my-platform"],
        cwd=empty, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    app = empty / "my-platform"
    assert (app / "app.py").is_file() and (app / "README.md").is_file()
    assert "python3 -m venv .venv" in (app / "README.md").read_text()
    assert not mark.exists(), mark.read_text()
    assert os.listdir(empty) == ["my-platform"]


def test_the_install_docs_name_no_tag_that_does_not_exist() -> None:
    """A tag exists only once a release is made (the release workflow runs on a pushed
    ``vX.Y.Z`` tag); until then the docs install a commit (``@<commit>``) or a wheel."""
    tags = set(
        subprocess.run(
            ["git", "tag", "--list"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    )
    pages = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]
    pages.append(PROJECT_ROOT / "cdk_sagemaker_llm/commands/init_template/README.md.tmpl")
    named = {
        (page.name, tag)
        for page in pages
        for tag in re.findall(r"(?:\.git@|git checkout )(v[\w.{}]+)", page.read_text())
    }
    assert {(page, tag) for page, tag in named if tag not in tags} == set()
    guide = (PROJECT_ROOT / "docs" / "guides" / "your-own-app.md").read_text()
    assert ".git@<commit>" in guide and "git checkout <commit>" in guide

"""The layout: pure domain packages (catalog, planning) and the commands that synthesize nothing
import no aws_cdk, so they start fast and can be reused outside a CDK app."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import cdk_sagemaker_llm.catalog
import cdk_sagemaker_llm.constructs
import cdk_sagemaker_llm.planning

PURE_MODULES = sorted(
    [
        *(
            f"cdk_sagemaker_llm.catalog.{m.name}"
            for m in pkgutil.iter_modules(cdk_sagemaker_llm.catalog.__path__)
        ),
        *(
            f"cdk_sagemaker_llm.planning.{m.name}"
            for m in pkgutil.iter_modules(cdk_sagemaker_llm.planning.__path__)
        ),
        "cdk_sagemaker_llm.errors",
        "cdk_sagemaker_llm.template_metadata",
        "cdk_sagemaker_llm.plan",
        "cdk_sagemaker_llm.cli",
    ]
)


def test_pure_modules_are_found() -> None:
    assert "cdk_sagemaker_llm.catalog.instance_types" in PURE_MODULES
    assert "cdk_sagemaker_llm.planning.sizing" in PURE_MODULES


def test_pure_modules_and_the_command_line_import_no_aws_cdk() -> None:
    probe = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "from cdk_sagemaker_llm.cli import build_parser\n"
        "build_parser()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'constructs', 'jsii'))\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "", f"pure modules loaded CDK modules: {result.stdout}"


def test_the_probe_would_see_aws_cdk() -> None:
    """Negative control: importing a construct module does load aws_cdk."""
    probe = (
        "import sys\nimport cdk_sagemaker_llm.constructs.images\nprint('aws_cdk' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "True"


def _runtime_imports(module: Path) -> set[str]:
    """Sibling modules ``module`` imports at run time (``TYPE_CHECKING`` blocks excluded)."""
    tree = ast.parse(module.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_constructs_import_no_module_that_imports_them_back() -> None:
    folder = Path(cdk_sagemaker_llm.constructs.__file__).parent
    graph = {path.stem: _runtime_imports(path) for path in folder.glob("*.py")}
    assert "interfaces" in graph["autoscaling"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, set()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = sorted(name for name in graph if reaches(name, name, set()))
    assert cycles == [], f"import cycles through {cycles}"

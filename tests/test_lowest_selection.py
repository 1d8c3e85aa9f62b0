"""`.ci/lowest` runs the test modules whose import closure reaches aws-cdk-lib or constructs
(tests/lowest_selection.py): a module that reaches them only through other modules is kept, one
that reaches neither is left to the main run."""

from __future__ import annotations

from pathlib import Path

from lowest_selection import ROOT, selected_tests

PROJECT = {
    "cdk_sagemaker_llm/__init__.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .constructs.endpoint import Endpoint\n"
        '_EXPORTS: dict[str, str] = {"Endpoint": ".constructs.endpoint", "plan": ".planning.sizing"}\n'
    ),
    "cdk_sagemaker_llm/planning/__init__.py": "",
    "cdk_sagemaker_llm/planning/sizing.py": "import math\n\ndef plan():\n    return math.pi\n",
    "cdk_sagemaker_llm/constructs/__init__.py": "",
    "cdk_sagemaker_llm/constructs/base.py": "from constructs import Construct\n",
    "cdk_sagemaker_llm/constructs/endpoint.py": (
        "from ..planning.sizing import plan\n\ndef render():\n    from .base import Construct\n"
    ),
    "tests/conftest.py": (
        "from pathlib import Path\nimport aws_cdk as cdk\n\n"
        "PROJECT_ROOT = Path(__file__).parent\n\n"
        "def new_stack():\n    return cdk.Stack(cdk.App())\n\n"
        "def stack():\n    return new_stack()\n"
    ),
    "tests/helpers.py": "from cdk_sagemaker_llm.constructs.endpoint import render\n",
    "tests/test_pure_planning.py": (
        "from cdk_sagemaker_llm.planning.sizing import plan\n"
        "from cdk_sagemaker_llm import plan as again\n"
        "from conftest import PROJECT_ROOT\n"
    ),
    "tests/test_through_a_helper.py": "def test_it():\n    from helpers import render\n",
    "tests/test_lazy_export.py": "from cdk_sagemaker_llm import Endpoint\n",
    "tests/test_conftest_helper.py": "from conftest import PROJECT_ROOT, new_stack\n",
    "tests/test_conftest_fixture.py": "def test_it(stack):\n    assert stack\n",
    "tests/test_cli_subprocess.py": 'ARGV = ["python", "-m", "cdk_sagemaker_llm", "init"]\n',
    "tests/test_probe.py": 'PROBE = "import cdk_sagemaker_llm.constructs.endpoint"\n',
    "tests/test_cdk_command.py": 'COMMAND = "npx cdk synth --quiet"\n',
    "tests/test_docs.py": "from documentation import examples\n",
    "tests/documentation.py": "def examples():\n    return []\n",
    "README.md": "```python\nfrom cdk_sagemaker_llm.constructs.base import Construct\n```\n",
}


def _selected(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return [path.stem for path in selected_tests(tmp_path)]


def test_a_module_reaching_the_cdk_through_others_is_kept_and_a_pure_one_dropped(
    tmp_path: Path,
) -> None:
    assert _selected(tmp_path, PROJECT) == [
        "test_cdk_command",  # a `cdk synth` in a subprocess
        "test_cli_subprocess",  # `-m` runs the package: any lazy export
        "test_conftest_fixture",  # a conftest fixture that builds a stack
        "test_conftest_helper",  # a conftest helper that builds a stack
        "test_docs",  # the helper that runs the README's Python blocks
        "test_lazy_export",  # a lazy export's module, then a function-level import
        "test_probe",  # a `-c` probe's imports
        "test_through_a_helper",  # a helper, a construct module, then its import in a function
    ]


def test_a_type_checking_import_or_an_unused_conftest_import_selects_nothing(
    tmp_path: Path,
) -> None:
    """Negative control: the package root names constructs under TYPE_CHECKING, and conftest
    imports aws_cdk for every test; neither runs a construct in test_pure_planning."""
    files = {name: text for name, text in PROJECT.items() if not name.startswith("tests/test_")}
    files["tests/test_pure_planning.py"] = PROJECT["tests/test_pure_planning.py"]
    files["tests/test_pure_planning.py"] += "import cdk_sagemaker_llm.planning\n"
    assert _selected(tmp_path, files) == []


def test_the_repository_selection_keeps_construct_tests_and_drops_planning_ones() -> None:
    selected = {path.name for path in selected_tests(ROOT)}
    assert {"test_llm_service.py", "test_nag.py", "test_readme.py", "test_plan.py"} <= selected
    assert not selected & {
        "test_sizing.py",
        "test_performance.py",
        "test_model_validation.py",
        "test_calibration_round_trip.py",
        "test_site_browser.py",
    }

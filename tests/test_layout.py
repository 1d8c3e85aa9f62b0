"""The layout: pure domain packages (catalog, planning) and the commands that synthesize nothing
import no aws_cdk, so they start fast and can be reused outside a CDK app; and no module of the
package imports, even only for type checkers, a module that imports it back."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from import_graph import import_graph

import cdk_sagemaker_llm
import cdk_sagemaker_llm.catalog
import cdk_sagemaker_llm.planning
import cdk_sagemaker_llm.review

PURE_MODULES = sorted(
    [
        *(
            f"cdk_sagemaker_llm.catalog.{m.name}"
            for m in pkgutil.iter_modules(cdk_sagemaker_llm.catalog.__path__)
        ),
        *(
            m.name
            for m in pkgutil.walk_packages(
                cdk_sagemaker_llm.planning.__path__, "cdk_sagemaker_llm.planning."
            )
        ),
        "cdk_sagemaker_llm.errors",
        "cdk_sagemaker_llm.template_metadata",
        "cdk_sagemaker_llm.review",
        *(
            f"cdk_sagemaker_llm.review.{m.name}"
            for m in pkgutil.iter_modules(cdk_sagemaker_llm.review.__path__)
        ),
        "cdk_sagemaker_llm.cli",
    ]
)


def test_pure_modules_are_found() -> None:
    assert "cdk_sagemaker_llm.catalog.instance_types" in PURE_MODULES
    assert "cdk_sagemaker_llm.planning.sizing" in PURE_MODULES
    assert "cdk_sagemaker_llm.planning.scheduling.loop" in PURE_MODULES  # subpackages too
    assert "cdk_sagemaker_llm.review.render" in PURE_MODULES


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


ROOT = "cdk_sagemaker_llm"


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (Tarjan's strongly connected
    components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(Path(cdk_sagemaker_llm.__file__).parent, ROOT)


def test_the_graph_counts_every_kind_of_import(graph: dict[str, set[str]]) -> None:
    """Positive controls: a plain import, one under TYPE_CHECKING, one inside a function, a
    subpackage's ``__init__`` run on the way, and the root's lazy exports are all edges."""
    assert "cdk_sagemaker_llm.constructs.interfaces" in graph[f"{ROOT}.constructs.autoscaling"]
    assert f"{ROOT}.constructs.model" in graph[f"{ROOT}.constructs.variant_options"]  # guarded
    assert f"{ROOT}.benchmarking" in graph[f"{ROOT}.constructs.benchmark"]
    assert f"{ROOT}.planning.performance" in graph[f"{ROOT}.planning.calibration"]
    assert f"{ROOT}.benchmarking" in graph[f"{ROOT}.lambdas.benchmark.handler"]  # in a function
    assert f"{ROOT}.constructs.endpoint" in graph[ROOT]  # _EXPORTS
    assert {f"{ROOT}.cli", f"{ROOT}.review", f"{ROOT}.stacks.reference"} <= set(graph)


def test_no_module_imports_one_that_imports_it_back(graph: dict[str, set[str]]) -> None:
    assert import_cycles(graph) == []


def test_nothing_in_the_package_imports_its_root(graph: dict[str, set[str]]) -> None:
    """The root ``__init__`` is the public facade: its lazy exports (and the matching
    TYPE_CHECKING imports) are edges down to every public module, so a module that imported
    the root would close a circle; none does."""
    assert sorted(module for module, edges in graph.items() if ROOT in edges) == []


LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "prop_docs": set(),
    "signatures": set(),
    "prop_types": {"errors", "prop_docs", "signatures"},
    "template_metadata": {"errors"},
    "catalog": {"errors", "prop_types"},
    "planning": {"catalog", "errors", "prop_types"},
    "benchmarking": {"catalog", "planning", "errors", "prop_types"},
    "lambdas": {"benchmarking", "catalog", "planning", "errors", "template_metadata"},
    "constructs": {
        "benchmarking",
        "catalog",
        "planning",
        "errors",
        "prop_types",
        "template_metadata",
    },
    "stacks": {"constructs", "benchmarking", "catalog", "planning", "errors"},
    "review": {"catalog", "planning", "errors", "template_metadata"},
    "commands": {"review", "benchmarking", "catalog", "planning", "errors", "_version"},
    "cli": {"commands", "_version"},
    "__main__": {"cli"},
    "_version": set(),
    "snapshot": set(),
}
"""What each top-level module or subpackage may import besides itself (ARCHITECTURE.md): layers
import downward only, and nothing but ``stacks`` builds on ``constructs``."""


def _layer(module: str) -> str:
    return module.split(".")[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """The edges from one layer to another that ``LAYERS`` does not allow (root excluded)."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module != ROOT
        for target in targets
        if _layer(target) != _layer(module) and _layer(target) not in LAYERS[_layer(module)]
    )


def test_layers_import_downward_only(graph: dict[str, set[str]]) -> None:
    assert {_layer(module) for module in graph if module != ROOT} == set(LAYERS)
    assert upward_imports(graph) == []


def test_the_layer_check_finds_an_upward_import(graph: dict[str, set[str]]) -> None:
    """Negative control: a planning module that named a construct (if only for type checkers)
    would be reported."""
    planner = f"{ROOT}.planning.recommend"
    upward = {**graph, planner: graph[planner] | {f"{ROOT}.constructs.endpoint"}}
    assert upward_imports(upward) == [f"{planner} -> {ROOT}.constructs.endpoint"]


def test_the_check_finds_a_circle(tmp_path: Path) -> None:
    """Negative control: circles closed by an import under TYPE_CHECKING, by one inside a
    function, and through the root's lazy exports are found; a one-way import is none."""
    package = tmp_path / "demo"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": '_EXPORTS: dict[str, str] = {"E": ".e"}\n',
        "a.py": "from .b import B\n",
        "b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .a import A\n",
        "c.py": "def late():\n    from .sub import d\n",
        "sub/__init__.py": "",
        "sub/d.py": "from .. import c\n",
        "e.py": "import demo\n",
        "one_way.py": "from .sub.d import late\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = import_graph(package, "demo")
    assert graph["demo.one_way"] == {"demo.sub", "demo.sub.d"}
    assert import_cycles(graph) == [
        ["demo", "demo.e"],
        ["demo.a", "demo.b"],
        ["demo.c", "demo.sub.d"],
    ]


PLANNING_FUNCTION_LINES = 120


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """The functions of ``source`` longer than ``limit`` lines, with their lengths."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_planning_functions_stay_short() -> None:
    """A planning function reads as one step of a decision: none is over 120 lines."""
    root = Path(cdk_sagemaker_llm.planning.__path__[0])
    long = {
        f"{path.relative_to(root)}:{name}": lines
        for path in sorted(root.rglob("*.py"))
        for name, lines in long_functions(path.read_text(), PLANNING_FUNCTION_LINES)
    }
    assert long == {}


def test_the_length_check_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(PLANNING_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n", PLANNING_FUNCTION_LINES) == [
        ("f", PLANNING_FUNCTION_LINES + 1)
    ]

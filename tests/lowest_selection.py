"""The test modules `.ci/lowest` runs on the lowest aws-cdk-lib and constructs: those whose
behaviour can depend on those versions, read statically from the import graph.

A test module is selected when its import closure reaches ``aws_cdk`` or ``constructs``. The
closure follows, transitively, the modules it imports (at module level or in functions; not
under ``if TYPE_CHECKING:``, which never runs): the package's (``cdk_sagemaker_llm.x``; a name taken from a package's lazy
``_EXPORTS`` table reaches the module that defines it, and ``import cdk_sagemaker_llm`` reaches
them all), the helpers under ``tests/``, the scripts under ``benchmarks/`` and ``scripts/``, and
``app.py``. What a test runs in a subprocess counts as imported too: a string that names a
module (``-m cdk_sagemaker_llm.cli``), a script's file (``benchmarks/model_validation.py``) or
is Python code (a ``-c`` probe), a ``cdk`` CLI command (``cdk synth``), and the documentation's
Python blocks for the helper that runs them (``DOCUMENTED_CODE``).

Every other test module imports neither library, so on the lowest versions it would repeat the
main run exactly. ``python tests/lowest_selection.py`` prints the selected files, one a line.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from itertools import pairwise
from pathlib import Path

from import_graph import imports_of, lazy_exports, nodes_of, package_modules, with_packages

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cdk_sagemaker_llm"
CDK_LIBRARIES = frozenset({"aws_cdk", "constructs"})
"""The top-level modules of the two distributions constraints/lowest.txt pins."""
SCRIPT_FOLDERS = ("tests", "benchmarks", "scripts", ".")
"""Folders whose ``*.py`` files are imported by file name (``benchmarks/`` goes on the path)."""
DOCUMENTED_CODE: Mapping[str, tuple[str, ...]] = {"documentation": ("README.md", "docs/**/*.md")}
"""Helpers that run the Python blocks of these Markdown files (tests/documentation.py)."""
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
CDK_COMMAND = re.compile(r"(?:^|[\s/\"'])cdk\s+(?:synth|deploy|diff|ls|list|bootstrap)\b")
"""A CDK CLI command, which runs an app's synthesis."""
CDK_NODE = "<cdk command>"
CONFTEST = "conftest"


def source_modules(root: Path = ROOT) -> dict[str, Path]:
    """The project's Python modules by import name: the package's by dotted name, the files of
    ``SCRIPT_FOLDERS`` by file name."""
    modules = package_modules(root / PACKAGE, PACKAGE)
    for folder in SCRIPT_FOLDERS:
        modules.update({path.stem: path for path in sorted((root / folder).glob("*.py"))})
    return modules


@cache
def _strings(tree: ast.AST) -> list[str]:
    """The string constants of ``tree`` but its docstrings and other bare strings (prose)."""
    prose = {
        id(node.value)
        for node in nodes_of(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in nodes_of(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def _code(text: str) -> ast.Module | None:
    """``text`` parsed as Python when it is code with an import, else None."""
    if "import " not in text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return tree if any(isinstance(n, ast.Import | ast.ImportFrom) for n in nodes_of(tree)) else None


def _run_by_strings(tree: ast.AST, modules: Mapping[str, Path]) -> set[str]:
    """What the module's strings run: a module named after ``-m``, a script's file name,
    imports in Python code, and a CDK CLI command."""
    files = {path.name: name for name, path in modules.items() if path.name != "__init__.py"}
    strings = _strings(tree)
    words = [word for text in strings for word in text.split()]
    run = {after for flag, after in pairwise(words) if flag == "-m"}
    run |= {files[tail] for word in words if (tail := word.rpartition("/")[2]) in files}
    for text in strings:
        code = _code(text)
        if code is not None:
            run |= imports_of(code, "__main__", False, modules, type_checking=False)
        if CDK_COMMAND.search(text):
            run.add(CDK_NODE)
    return run


def _documented_imports(patterns: Iterable[str], root: Path, modules: Iterable[str]) -> set[str]:
    """The modules the Python blocks of the Markdown files ``patterns`` import."""
    imported: set[str] = set()
    for pattern in patterns:
        for document in sorted(root.glob(pattern)):
            for block in PYTHON_BLOCK.findall(document.read_text()):
                code = _code(block)
                if code is not None:
                    imported |= imports_of(code, "__main__", False, modules, type_checking=False)
    return imported


def _bindings(tree: ast.Module, module: str, modules: Iterable[str]) -> dict[str, set[str]]:
    """The names a module's top-level imports bind, with the modules each imports."""
    bound: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                bound.setdefault(local, set()).update(imports_of(node, module, False, modules))
    return bound


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """A module's top-level functions, classes and assignments by name."""
    defined: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update({t.id: node for t in targets if isinstance(t, ast.Name)})
    return defined


def _conftest_names(tree: ast.Module, modules: Iterable[str]) -> dict[str, set[str]]:
    """``conftest:NAME`` for each top-level name of tests/conftest.py, with what its definition
    uses: the modules it imports or names, and the other conftest names it calls."""
    bound = _bindings(tree, CONFTEST, modules)
    defined = _definitions(tree)
    graph = {}
    for name, node in defined.items():
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        edges = imports_of(node, CONFTEST, False, modules, type_checking=False)
        edges |= {m for local in used & set(bound) for m in bound[local]}
        edges |= {f"{CONFTEST}:{other}" for other in used & set(defined) if other != name}
        graph[f"{CONFTEST}:{name}"] = edges
    return graph


def _conftest_uses(tree: ast.AST, conftest: Mapping[str, set[str]]) -> set[str]:
    """The conftest names a test module takes: imported from it, or fixtures named as a
    function's parameters."""
    taken = {
        alias.name
        for node in nodes_of(tree)
        if isinstance(node, ast.ImportFrom) and node.module == CONFTEST and not node.level
        for alias in node.names
    }
    taken |= {
        arg.arg
        for node in nodes_of(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in node.args.args
    }
    return {f"{CONFTEST}:{name}" for name in taken} & set(conftest)


def reach_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each project module and the modules (project or third-party) it imports or runs.

    Unlike the layering graph, a package's lazy exports are edges only from the modules that
    take those names (or import the package whole): importing a submodule runs the package's
    ``__init__``, which defers them. pytest imports tests/conftest.py for every test, so its
    own imports say nothing of one test: a module reaches what it takes from conftest, name by
    name (``conftest:NAME``)."""
    modules = source_modules(root)
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items()}
    exports = {name: lazy_exports(tree, name) for name, tree in trees.items()}
    conftest = _conftest_names(trees[CONFTEST], modules)
    graph: dict[str, set[str]] = dict(conftest)
    for name, tree in trees.items():
        is_package = modules[name].name == "__init__.py"
        edges = imports_of(tree, name, is_package, modules, exports, type_checking=False)
        if not name.startswith(PACKAGE):
            edges |= _run_by_strings(tree, modules)
        edges |= _documented_imports(DOCUMENTED_CODE.get(name, ()), root, modules)
        for whole in [edge for edge in edges if exports.get(edge)]:
            if _imports_whole(tree, whole):
                edges |= {m for e in exports[whole].values() for m in with_packages(e)}
        edges = (edges - {CONFTEST}) | _conftest_uses(tree, conftest)
        graph[name] = edges - {name}
    return graph


def _imports_whole(tree: ast.AST, package: str) -> bool:
    """Whether ``tree`` imports ``package`` itself (``import pkg``) or runs it (``-m pkg``):
    then any of its lazy exports may be used."""
    words = [word for text in _strings(tree) for word in text.split()]
    return any(
        isinstance(node, ast.Import) and any(alias.name == package for alias in node.names)
        for node in nodes_of(tree)
    ) or any(flag == "-m" and after == package for flag, after in pairwise(words))


def reaches_cdk(graph: Mapping[str, set[str]], start: str) -> bool:
    """Whether ``start``'s import closure in ``graph`` reaches aws-cdk-lib or constructs (or a
    CDK CLI command)."""
    seen, todo = {start}, [start]
    while todo:
        for edge in graph.get(todo.pop(), ()):
            if edge.split(".")[0] in CDK_LIBRARIES or edge == CDK_NODE:
                return True
            if edge not in seen:
                seen.add(edge)
                todo.append(edge)
    return False


def selected_tests(root: Path = ROOT) -> list[Path]:
    """The test modules (``tests/test_*.py``) whose closure reaches aws-cdk-lib or constructs."""
    graph = reach_graph(root)
    return [
        path for path in sorted((root / "tests").glob("test_*.py")) if reaches_cdk(graph, path.stem)
    ]


if __name__ == "__main__":
    for path in selected_tests():
        print(path.relative_to(ROOT))
    sys.exit(0)

"""The import graph of Python source, read statically (``ast``, nothing imported): which modules
each module's import statements name. ``tests/test_layout.py`` checks the package's layers and
circles on it; ``tests/lowest_selection.py`` walks it to find the tests that reach aws-cdk-lib."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path


def package_modules(folder: Path, package: str) -> dict[str, Path]:
    """Every module under ``folder`` by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def lazy_exports(tree: ast.Module, module: str) -> dict[str, str]:
    """A PEP 562 ``_EXPORTS`` table (name -> relative module) as name -> absolute module: the
    modules the package imports on first use of a name."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "_EXPORTS" and node.value is not None:
            table = ast.literal_eval(node.value)
            return {name: module + relative for name, relative in table.items()}
    return {}


def _named(
    node: ast.AST,
    module: str,
    is_package: bool,
    modules: Iterable[str],
    exports: Mapping[str, Mapping[str, str]],
) -> list[str]:
    """The modules an import statement names: ``from .a import b`` names ``pkg.a.b`` when
    that is a module, else ``pkg.a`` (``b`` is then a name defined there) and, where ``pkg.a``
    exports ``b`` lazily (``exports``), the module that defines it."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    source = ".".join(filter(None, [base if node.level else "", node.module or ""]))
    named = []
    for alias in node.names:
        if f"{source}.{alias.name}" in modules:
            named.append(f"{source}.{alias.name}")
            continue
        named.append(source)
        if alias.name in exports.get(source, {}):
            named.append(exports[source][alias.name])
    return named


def with_packages(name: str, importer: str = "") -> set[str]:
    """``name`` and the packages that importing it runs on the way (``a.b.c``: ``a``, ``a.b``),
    except those enclosing ``importer``, which Python initialized before it."""
    parts = name.split(".")
    return {
        ".".join(parts[:end])
        for end in range(1, len(parts))
        if not f"{importer}.".startswith(".".join(parts[:end]) + ".")
    } | {name}


@cache
def nodes_of(tree: ast.AST) -> tuple[ast.AST, ...]:
    """``ast.walk(tree)``, walked once per tree (the graphs read each tree several ways)."""
    return tuple(ast.walk(tree))


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the statements under ``if TYPE_CHECKING:``, which never run."""
    guarded: set[int] = set()
    for node in nodes_of(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return guarded


def imports_of(
    tree: ast.AST,
    module: str,
    is_package: bool,
    modules: Iterable[str],
    exports: Mapping[str, Mapping[str, str]] | None = None,
    *,
    type_checking: bool = True,
) -> set[str]:
    """Every module the import statements of ``tree`` name, known or not, with the packages on
    the way. Every import statement counts: at module level, inside functions, and under
    ``if TYPE_CHECKING:`` (an annotation is knowledge of the other module too) unless
    ``type_checking`` is False (only what runs)."""
    known = set(modules)
    skipped = set() if type_checking else _type_checking_only(tree)
    return {
        imported
        for node in nodes_of(tree)
        if id(node) not in skipped
        for name in _named(node, module, is_package, known, exports or {})
        for imported in with_packages(name, module)
    }


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports (``imports_of``), a
    lazy ``_EXPORTS`` table's modules included: they are imported on first use."""
    modules = package_modules(folder, package)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        edges = imports_of(tree, module, path.name == "__init__.py", modules)
        for name in lazy_exports(tree, module).values():
            edges |= with_packages(name, module)
        graph[module] = {edge for edge in edges if edge in modules and edge != module}
    return graph

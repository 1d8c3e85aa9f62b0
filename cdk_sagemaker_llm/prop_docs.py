"""How props read in documentation: an annotation in words (``InstanceType | None``), and a props
dataclass's ``help()`` listing each field with its type and the docstring under it in the
source (parsed with ``ast`` only when ``help()`` first reads it, not at import).

``prop_types`` (the run-time checks) uses ``describe`` in its messages and ``document_fields``
on each class it decorates.
"""

from __future__ import annotations

import inspect
import itertools
import types
import typing
from typing import Any

__all__ = ["describe", "document_fields", "field_docstrings"]

_PACKAGE = __name__.rpartition(".")[0]


def describe(expected: Any) -> str:
    """The annotation as a reader writes it (``InstanceType | None``, ``Sequence[str]``)."""
    if expected is None or expected is type(None):
        return "None"
    origin = typing.get_origin(expected)
    arguments = typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe(option) for option in arguments)
    if origin is typing.Literal:
        return " or ".join(repr(option) for option in arguments)
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else describe(a) for a in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if inner else str(origin)
    return getattr(expected, "__name__", str(expected))


class _FieldDocs:
    """A props dataclass's ``__doc__``: its docstring, then each field with its type and the
    docstring written under it in the source (``help(ComponentScheduling)`` shows them; the
    source is read on first access, not at import)."""

    def __init__(self, doc: str | None, cls: type) -> None:
        self._doc = doc or ""
        self._cls = cls
        self._rendered: str | None = None

    def __get__(self, instance: Any, owner: type | None = None) -> str:
        if self._rendered is None:
            self._rendered = self._doc + _fields_section(self._cls)
        return self._rendered


def field_docstrings(cls: type) -> dict[str, str]:
    """The docstring under each annotated field in ``cls``'s source (and its bases')."""
    import ast
    import textwrap

    found: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if not base.__module__.startswith(_PACKAGE):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(base)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
        for node, following in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[node.target.id] = inspect.cleandoc(following.value.value)
    return found


def _fields_section(cls: type) -> str:
    """The ``Fields:`` section of ``help()``: each init field, its type and its docstring."""
    import dataclasses

    docs = field_docstrings(cls)
    lines = ["", "", "Fields:"]
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        kind = field.type if isinstance(field.type, str) else describe(field.type)
        lines.append(f"    {field.name}: {kind}")
        lines.extend(f"        {line}" for line in docs.get(field.name, "").splitlines())
    return "\n".join(lines) if len(lines) > 3 else ""


def document_fields(cls: type) -> None:
    """Give a props dataclass the ``__doc__`` that lists its fields (read on first access)."""
    import dataclasses

    if dataclasses.is_dataclass(cls) and not isinstance(vars(cls).get("__doc__"), _FieldDocs):
        cls.__doc__ = _FieldDocs(vars(cls).get("__doc__"), cls)  # type: ignore[assignment]

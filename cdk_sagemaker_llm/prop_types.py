"""Run-time type checks of construct props: a wrong type is a ValidationError, not a raw
``AttributeError`` from deep inside a construct or a jsii ``TypeError``.

``@typed_props`` on a construct class (or a props dataclass) checks every argument of its
``__init__`` against the annotations at call time; ``@typed_factory`` does the same for a
static factory (``BenchmarkLoad.concurrency(...)``). It understands unions and ``None``,
``Sequence``/``Mapping``/``list``/``dict`` (element types too), ``Literal``, enums, our own
protocols (``IEndpoint``), jsii classes and interfaces (``iam.IRole``, ``Duration``, ``Size``),
and lets CDK tokens through where a string or number is expected: their value is only known at
deploy time.
"""

from __future__ import annotations

import builtins
import collections.abc
import functools
import importlib
import inspect
import numbers
import sys
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar, cast

from .errors import ValidationError, is_token

__all__ = ["typed_factory", "typed_props", "unchecked_props"]

T = TypeVar("T", bound=type)
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

_UNRESOLVED = object()
"""An annotation that names a type this module cannot import (left unchecked)."""


class _Namespace(dict[str, Any]):
    """Names an annotation may use beyond its module's globals: the module aliases of
    ``aws_cdk`` (``ec2``, ``kms`` ...), which modules import only for type checkers (importing
    them costs synth time). Names the module or the builtins define are theirs (``eval`` looks
    here first), so checking a pure module's annotations imports no aws_cdk. A name of this
    package must be imported at run time by the module that annotates with it
    (``unchecked_props`` finds one that is not)."""

    def __init__(self, module_globals: Mapping[str, Any]) -> None:
        super().__init__()
        self._globals = module_globals

    def __missing__(self, name: str) -> Any:
        if name in self._globals or hasattr(builtins, name):
            raise KeyError(name)
        try:
            return importlib.import_module(f"aws_cdk.aws_{name}")
        except ImportError:
            raise KeyError(name) from None


def _resolve(function: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotation of each parameter (``_UNRESOLVED`` when it cannot be)."""
    module = sys.modules[function.__module__]
    hints: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        annotation = parameter.annotation
        if name == "self" or annotation is inspect.Parameter.empty:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(vars(module)), _Namespace(vars(module)))
            except (NameError, AttributeError, TypeError, SyntaxError):
                annotation = _UNRESOLVED
        hints[name] = annotation
    return hints


def _init_of(cls: type) -> Callable[..., None]:
    init: Callable[..., None] = getattr(cls, "__init__")  # noqa: B009 (mypy: no instance access)
    return init


def unchecked_props(cls: type) -> list[str]:
    """The ``__init__`` parameters of a ``@typed_props`` class whose annotation names a type
    that cannot be imported (tests assert there are none)."""
    init = _init_of(cls)
    hints = _resolve(getattr(init, "__wrapped__", init))
    return sorted(name for name, hint in hints.items() if hint is _UNRESOLVED)


def _jsii_interface_proxy(expected: type) -> type | None:
    proxy = getattr(expected, "__jsii_proxy_class__", None)
    return proxy() if callable(proxy) and getattr(expected, "_is_protocol", False) else None


def _declares(value: Any, interface: type) -> bool:
    """True when ``value``'s class says it implements the jsii ``interface`` (or a sub-one)."""
    for cls in type(value).__mro__:
        for declared in getattr(cls, "__jsii_ifaces__", ()):
            if interface in declared.__mro__:
                return True
    return False


def _protocol_members(protocol: type) -> set[str]:
    members: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object, typing.Generic) or cls.__name__ == "Protocol":
            continue
        members.update(getattr(cls, "__annotations__", {}))
        members.update(name for name in vars(cls) if not name.startswith("_"))
    return members


def _matches_class(value: Any, expected: type) -> bool:
    if expected is Any or expected is object:
        return True
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and is_token(value)
        )
    if expected is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    proxy = _jsii_interface_proxy(expected)
    if proxy is not None:
        delegates = getattr(value, "_delegates", None)  # an imported resource's proxy
        candidates = [value, *(delegates if isinstance(delegates, list) else [])]
        return any(isinstance(c, proxy) or _declares(c, expected) for c in candidates)
    if getattr(expected, "_is_protocol", False):
        return all(hasattr(value, member) for member in _protocol_members(expected))
    return isinstance(value, expected)


_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Set)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_COLLECTIONS = _SEQUENCES + _MAPPINGS


def _matches_collection(value: Any, origin: Any, arguments: tuple[Any, ...]) -> bool:
    """True when ``value`` is the collection ``origin[arguments]`` (or a token for one)."""
    if isinstance(value, str) or not isinstance(value, origin):
        return is_token(value)
    if origin in _MAPPINGS:
        key_type, item_type = arguments if arguments else (Any, Any)
        return all(_matches(k, key_type) and _matches(v, item_type) for k, v in value.items())
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        return len(value) == len(arguments) and all(
            _matches(item, kind) for item, kind in zip(value, arguments, strict=True)
        )
    item_type = arguments[0] if arguments else Any
    return all(_matches(item, item_type) for item in value)


def _matches(value: Any, expected: Any) -> bool:
    """True when ``value`` is of the annotated type ``expected``."""
    if expected is _UNRESOLVED or expected is Any or isinstance(expected, TypeVar):
        return True
    if expected is None or expected is type(None):
        return value is None
    origin = typing.get_origin(expected)
    arguments = typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, option) for option in arguments)
    if origin is typing.Literal:
        return value in arguments
    if origin is collections.abc.Callable:
        return callable(value)
    if origin in _COLLECTIONS:
        return _matches_collection(value, origin, arguments)
    if origin is type:
        return isinstance(value, type)
    if isinstance(expected, type):
        return _matches_class(value, expected)
    return True  # an annotation form this checker does not model: leave it to the construct


def _describe(expected: Any) -> str:
    """The annotation as a reader writes it (``InstanceType | None``, ``Sequence[str]``)."""
    if expected is None or expected is type(None):
        return "None"
    origin = typing.get_origin(expected)
    arguments = typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_describe(option) for option in arguments)
    if origin is typing.Literal:
        return " or ".join(repr(option) for option in arguments)
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else _describe(a) for a in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if inner else str(origin)
    return getattr(expected, "__name__", str(expected))


def _classes(expected: Any) -> list[type]:
    """The plain classes an annotation allows, ``None`` excluded."""
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return [cls for option in typing.get_args(expected) for cls in _classes(option)]
    return [expected] if isinstance(expected, type) and expected is not type(None) else []


def _factories(cls: type) -> list[str]:
    """A class's public static factories (``InstanceType.of``, ``ContainerImage.lmi`` ...)."""
    return [
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and isinstance(member, staticmethod | classmethod)
    ]


def _enum_fix(value: Any, cls: type[Enum]) -> str:
    """The member a string names, else every member."""
    for member in cls:
        if isinstance(value, str) and value.lower() in (
            member.name.lower(),
            str(member.value).lower(),
        ):
            return f"use {cls.__name__}.{member.name}"
    names = ", ".join(f"{cls.__name__}.{member.name}" for member in cls)
    return f"use one of {names}"


def _scalar_fix(value: Any, cls: type, prop: str) -> str | None:
    """A number for a Duration or Size, a number for a quoted or boolean one, a bool."""
    if cls.__name__ == "Duration" and isinstance(value, numbers.Real):
        return f"use Duration.seconds({value!r}) (or Duration.minutes/hours)"
    if cls.__name__ == "Size" and isinstance(value, numbers.Real):
        return f"use Size.mebibytes({value!r}) or Size.gibibytes(...)"
    if cls in (int, float) and isinstance(value, bool):
        return f"pass a number, not {value}"
    if cls in (int, float) and isinstance(value, str):
        example = value.strip() if value.strip().replace(".", "", 1).isdigit() else "1"
        return f"pass a number without quotes, e.g. {prop}={example}"
    if cls is bool:
        return f"pass True or False, e.g. {prop}=True"
    return None


def _fix(value: Any, expected: Any, prop: str) -> str:
    """How to pass ``value`` as the expected type, as specific as the value allows."""
    for cls in _classes(expected):
        if issubclass(cls, Enum):
            return _enum_fix(value, cls)
        scalar = _scalar_fix(value, cls, prop)
        if scalar is not None:
            return scalar
        if getattr(cls, "_is_protocol", False) and cls.__doc__:
            # An interface: say what it is, as its docstring's opening says (up to ": ").
            summary = cls.__doc__.split("\n\n")[0].split(": ")[0]
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            return f"pass {article} {cls.__name__}: " + " ".join(summary.replace("``", "").split())
        factories = _factories(cls)
        if isinstance(value, str) and "of" in factories:
            return f"use {cls.__name__}.of({value!r})"
        if factories:
            shown = ", ".join(f"{cls.__name__}.{name}(...)" for name in factories[:4])
            return f"build one with {shown}"
    return f"pass a value of type {_describe(expected)}"


def check_type(
    prop: str, value: Any, expected: Any, owner: str, *, qualified: bool = False
) -> None:
    """Raise ValidationError when ``value`` is not of the annotated type ``expected``; a wrong
    element of a list or mapping is named by its index or key (``concurrencies[1]``), an
    argument of a factory by its owner too (``BenchmarkLoad.concurrency(levels)[1]``)."""
    if _matches(value, expected):
        return
    container = expected
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(expected) if o is not type(None)]
        container = options[0] if len(options) == 1 else expected
    origin, arguments = typing.get_origin(container), typing.get_args(container)
    if origin in (list, collections.abc.Sequence) and isinstance(value, origin) and arguments:
        for index, item in enumerate(value):
            check_type(f"{prop}[{index}]", item, arguments[0], owner, qualified=qualified)
    if origin in (dict, collections.abc.Mapping) and isinstance(value, origin) and arguments:
        for key, item in value.items():
            check_type(f"{prop}[{key!r}]", item, arguments[1], owner, qualified=qualified)
    argument, _, element = prop.partition("[")
    raise ValidationError(
        f"{owner}({argument}){'[' if element else ''}{element}" if qualified else prop,
        value,
        f"{owner} expects {prop} to be {_describe(expected)}, not {type(value).__name__}",
        _fix(value, expected, prop),
    )


def _checked(function: Callable[..., R], owner: str, qualified: bool) -> Callable[..., R]:
    """``function`` checking each argument against its annotation before it runs; a wrong type
    is named ``arg`` (a constructor's prop) or ``Owner(arg)`` (a factory's argument)."""
    signature = inspect.signature(function)

    @functools.cache
    def hints() -> Mapping[str, Any]:  # resolved on first use: annotations may refer ahead
        return _resolve(function)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> R:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:  # an unknown or missing prop
            raise ValidationError(
                owner, f"{args!r}, {kwargs!r}", str(error), f"see help({owner})"
            ) from None
        resolved = hints()
        for name, value in bound.arguments.items():
            if name in resolved and signature.parameters[name].kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                check_type(name, value, resolved[name], owner, qualified=qualified)
        return function(*args, **kwargs)

    return checked


def typed_props(cls: T) -> T:
    """Class decorator: check the types of every ``__init__`` argument at call time.

    Put it above ``@dataclass`` on a props dataclass, so it wraps the generated ``__init__``.
    """
    cls.__init__ = _checked(_init_of(cls), cls.__name__, qualified=False)  # type: ignore[misc]
    return cls


def typed_factory(function: F) -> F:
    """Decorator of a static factory (below ``@staticmethod``): check the types of its
    arguments at call time; a wrong one is named ``Class.factory(argument)``, as the factory's
    own validation names it."""
    return cast(F, _checked(function, function.__qualname__, qualified=True))

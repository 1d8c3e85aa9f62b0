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
import difflib
import functools
import importlib
import inspect
import numbers
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, ParamSpec, TypeVar, cast

from .errors import (
    ValidationError,
    _shown,
    collecting_unchecked,
    is_token,
    require_concrete,
    stop_collecting_unchecked,
)
from .prop_docs import describe as _describe
from .prop_docs import document_fields as _document_fields
from .signatures import expose_init_signature

__all__ = [
    "is_typed",
    "trusted",
    "typed_factory",
    "typed_props",
    "unchecked_props",
    "unresolved_arguments",
]

T = TypeVar("T", bound=type)
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")

_TYPED = "__typed_checked__"
"""The attribute that marks a function whose arguments ``_checked`` checks."""
_PACKAGE = __name__.rpartition(".")[0]

_UNRESOLVED = object()
"""An annotation that names a type this module cannot import (left unchecked)."""


class _Namespace(dict[str, Any]):
    """Names an annotation may use beyond its module's globals: the module aliases of
    ``aws_cdk`` (``ec2``, ``kms`` ...), and this package's public exports (``AsyncInference``,
    ``RollingDeployment`` ...), which modules import only for type checkers (importing them
    costs synth time, and a prop left at None never resolves its annotation). Names the module
    or the builtins define are theirs (``eval`` looks here first), so checking a pure module's
    annotations imports no aws_cdk. Any other name of this package must be imported at run time
    by the module that annotates with it (``unchecked_props`` finds one that is not)."""

    def __init__(self, module_globals: Mapping[str, Any]) -> None:
        super().__init__()
        self._globals = module_globals

    def __missing__(self, name: str) -> Any:
        if name in self._globals or hasattr(builtins, name):
            raise KeyError(name)
        package = sys.modules[_PACKAGE]
        if name in getattr(package, "_EXPORTS", ()):
            return getattr(package, name)  # the package imports the export's module once
        try:
            return importlib.import_module(f"aws_cdk.aws_{name}")
        except ImportError:
            raise KeyError(name) from None


_EVALUATED: dict[tuple[str, str], Any] = {}
"""Each written annotation evaluated in its module, once per module (``int | None`` is
written on many parameters of one module); one that cannot be evaluated is not kept."""


def _evaluate(annotation: Any, module_name: str) -> Any:
    """A parameter's annotation as written (a string, under ``from __future__ import
    annotations``) evaluated in its module, or ``_UNRESOLVED`` when it cannot be."""
    if not isinstance(annotation, str):
        return annotation
    key = (module_name, annotation)
    evaluated = _EVALUATED.get(key, _UNRESOLVED)
    if evaluated is _UNRESOLVED:
        namespace = vars(sys.modules[module_name])
        try:
            evaluated = eval(annotation, dict(namespace), _Namespace(namespace))
        except (NameError, AttributeError, TypeError, SyntaxError):
            return _UNRESOLVED
        _EVALUATED[key] = evaluated
    return evaluated


def _resolve(function: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotation of each parameter (``_UNRESOLVED`` when it cannot be)."""
    hints: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == "self" or parameter.annotation is inspect.Parameter.empty:
            continue
        hints[name] = _evaluate(parameter.annotation, function.__module__)
    return hints


_UNANNOTATED = object()
"""A parameter with no annotation to check (``self``, or none written)."""
_NONE_ALTERNATIVE = re.compile(r"(^|\|)\s*None\s*($|\|)")


def _admits_none(annotation: Any) -> bool:
    """True for a written annotation that lists ``None`` as an alternative (``X | None``)."""
    return isinstance(annotation, str) and bool(_NONE_ALTERNATIVE.search(annotation))


def _init_of(cls: type) -> Callable[..., None]:
    init: Callable[..., None] = getattr(cls, "__init__")  # noqa: B009 (mypy: no instance access)
    return init


def unchecked_props(cls: type) -> list[str]:
    """The ``__init__`` parameters of a ``@typed_props`` class whose annotation names a type
    that cannot be imported (tests assert there are none)."""
    init = _init_of(cls)
    hints = _resolve(getattr(init, "__wrapped__", init))
    return sorted(name for name, hint in hints.items() if hint is _UNRESOLVED)


def unresolved_arguments(function: Callable[..., Any]) -> list[str]:
    """The arguments of a function (checked or not) whose annotation names a type that cannot
    be imported at run time (tests assert there are none)."""
    function = getattr(function, "__func__", function)
    hints = _resolve(getattr(function, "__wrapped__", function))
    return sorted(name for name, hint in hints.items() if hint is _UNRESOLVED)


@functools.cache
def _jsii_interface_proxy(expected: type) -> type | None:
    """The proxy class of a jsii interface (``iam.IRole``), else None; once per class."""
    proxy = getattr(expected, "__jsii_proxy_class__", None)
    return proxy() if callable(proxy) and getattr(expected, "_is_protocol", False) else None


def _declares(value: Any, interface: type) -> bool:
    """True when ``value``'s class says it implements the jsii ``interface`` (or a sub-one)."""
    value_class: Any = type(value)  # a class is hashable; mypy does not see it of type[Any]
    return _class_declares(value_class, interface)


@functools.cache
def _class_declares(value_class: Any, interface: type) -> bool:
    for cls in value_class.__mro__:
        for declared in getattr(cls, "__jsii_ifaces__", ()):
            if interface in declared.__mro__:
                return True
    return False


@functools.cache
def _protocol_members(protocol: type) -> frozenset[str]:
    """The members a protocol declares; once per protocol (a class does not change)."""
    members: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object, typing.Generic) or cls.__name__ == "Protocol":
            continue
        members.update(getattr(cls, "__annotations__", {}))
        members.update(name for name in vars(cls) if not name.startswith("_"))
    return frozenset(members)


def _has_member(value: Any, member: str) -> bool:
    """``hasattr(value, member)``, without reading a member that a class from outside this
    package defines (``Construct.node``): reading a jsii property is a round trip to the
    kernel, and such a property always answers."""
    for cls in type(value).__mro__:
        if member in vars(cls):
            if isinstance(vars(cls)[member], (property, functools.cached_property)):
                return True  # declared; a construct's may read the kernel (``model_arn``)
            return not cls.__module__.startswith(_PACKAGE) or hasattr(value, member)
    return hasattr(value, member)


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
        return all(_has_member(value, member) for member in _protocol_members(expected))
    return isinstance(value, expected)


_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Set)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_COLLECTIONS = _SEQUENCES + _MAPPINGS


def _matches_collection(value: Any, origin: Any, arguments: tuple[Any, ...]) -> bool:
    """True when ``value`` is the collection ``origin[arguments]`` (or a list token for a
    sequence: a string or number token never stands for a collection)."""
    if isinstance(value, str) or not isinstance(value, origin):
        return origin in _SEQUENCES and isinstance(value, list) and is_token(value)
    if origin in _MAPPINGS:
        key_type, item_type = arguments if arguments else (Any, Any)
        return all(_matches(k, key_type) and _matches(v, item_type) for k, v in value.items())
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        return len(value) == len(arguments) and all(
            _matches(item, kind) for item, kind in zip(value, arguments, strict=True)
        )
    item_type = arguments[0] if arguments else Any
    return all(_matches(item, item_type) for item in value)


def _shape(expected: Any) -> tuple[Any, tuple[Any, ...]]:
    """``typing.get_origin`` and ``typing.get_args`` of an annotation, once per annotation."""
    try:
        return _cached_shape(expected)
    except TypeError:  # an unhashable annotation (a Literal of a list): not cached
        return typing.get_origin(expected), typing.get_args(expected)


@functools.cache
def _cached_shape(expected: Any) -> tuple[Any, tuple[Any, ...]]:
    return typing.get_origin(expected), typing.get_args(expected)


def _matches(value: Any, expected: Any) -> bool:
    """True when ``value`` is of the annotated type ``expected``."""
    if type(value) is expected:  # the common case, a value of exactly the annotated class
        return True
    if expected is _UNRESOLVED or expected is Any or isinstance(expected, TypeVar):
        return True
    if expected is None or expected is type(None):
        return value is None
    origin, arguments = _shape(expected)
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
    """A number for a Duration or Size, a number for a quoted or boolean one, a bool. A token
    is shown as one, never by its encoded value."""
    if cls.__name__ == "Duration" and isinstance(value, numbers.Real):
        return f"use Duration.seconds({_shown(value)}) (or Duration.minutes/hours)"
    if cls.__name__ == "Size" and isinstance(value, numbers.Real):
        return f"use Size.mebibytes({_shown(value)}) or Size.gibibytes(...)"
    if cls in (int, float) and isinstance(value, bool):
        return f"pass a number, not {value}"
    if cls in (int, float) and isinstance(value, str):
        example = value.strip() if value.strip().replace(".", "", 1).isdigit() else "1"
        return f"pass a number without quotes, e.g. {prop}={example}"
    if cls is bool:
        return f"pass True or False, e.g. {prop}=True"
    if cls.__name__ == "IBucket" and isinstance(value, str):
        name = value.removeprefix("s3://").split("/")[0] or "my-bucket"
        return (
            f"pass a bucket, not its name: s3.Bucket.from_bucket_name(self, 'Weights', "
            f"{_shown(value) if is_token(value) else repr(name)}) for an existing bucket, or a "
            "bucket your stack creates"
        )
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
        if cls.__module__ == "builtins":
            name = getattr(value, "name", None)
            if cls is str and isinstance(name, str):  # an InstanceType where its name goes
                return f"pass its name, {prop}={name!r}"
            continue  # str.maketrans is no way to build a str
        factories = _factories(cls)
        if isinstance(value, str) and "of" in factories and not is_token(value):
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
        _refuse_key_alias(prop, value, expected, owner, qualified)
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


def _refuse_key_alias(prop: str, value: Any, expected: Any, owner: str, qualified: bool) -> None:
    """A KMS alias passes for a ``kms.IKey``, but the library grants roles the use of the key:
    a grant on an alias ARN does not authorize the key's use (AWS KMS developer guide, "Using
    aliases to control access to KMS keys"), and an imported alias takes no grant at all."""
    if value is None or not any(cls.__name__ == "IKey" for cls in _classes(expected)):
        return
    if not hasattr(value, "alias_name"):
        return
    raise ValidationError(
        f"{owner}({prop})" if qualified else prop,
        value.alias_name,
        "a KMS alias where the key is needed: the grants the library makes on it would not "
        "let the roles use the key",
        "pass the key itself, e.g. kms.Key.from_key_arn(self, 'Key', "
        "'arn:aws:kms:<region>:<account>:key/<key-id>')",
    )


@functools.cache
def _option_types(options: type) -> Mapping[str, Any]:
    """The evaluated annotation of each key of a ``TypedDict``."""
    module = sys.modules[options.__module__]
    resolved: dict[str, Any] = {}
    for key, annotation in getattr(options, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(vars(module)), _Namespace(vars(module)))
            except (NameError, AttributeError, TypeError, SyntaxError):
                annotation = _UNRESOLVED
        resolved[key] = annotation
    return resolved


def _check_options(values: Mapping[str, Any], expected: Any, owner: str, qualified: bool) -> None:
    """Check ``**options: Unpack[SomeOptions]``: each key is one of the ``TypedDict``'s, each
    value of its type."""
    if typing.get_origin(expected) is not typing.Unpack:
        return
    options = typing.get_args(expected)[0]
    types_by_key = _option_types(options)
    for key, value in values.items():
        if key not in types_by_key:
            raise ValidationError(
                f"{owner}({key})" if qualified else key,
                value,
                f"{owner} takes no option {key!r}",
                f"use one of {', '.join(sorted(types_by_key))} (see help({options.__name__}))",
            )
        check_type(key, value, types_by_key[key], owner, qualified=qualified)


def _numeric(expected: Any) -> bool:
    """True when an annotation admits a number (int or float, alone or in a list)."""
    if expected in (int, float):
        return True
    return any(_numeric(argument) for argument in typing.get_args(expected))


def _report_unchecked(construct: Any, notes: list[str]) -> None:
    """Tell synth, as info messages on ``construct``, which checks did not run on tokens."""
    cdk = sys.modules.get("aws_cdk")
    if cdk is None or not notes or not hasattr(construct, "node"):
        return
    for note in dict.fromkeys(notes):
        cdk.Annotations.of(construct).add_info(note)


def _binder(
    signature: inspect.Signature,
) -> Callable[[tuple[Any, ...], dict[str, Any]], list[tuple[str, Any]]]:
    """``signature.bind(*args, **kwargs).arguments.items()``, in the parameters' order, without
    ``Signature.bind``'s general machinery when every parameter is positional-or-keyword or
    keyword-only (a construct's, a props dataclass's, a factory's): the arguments are matched
    by position and name here. Any other call (too many positional arguments, an unknown or
    repeated name, a missing argument) and any other signature go through ``Signature.bind``,
    which raises its usual ``TypeError``."""
    parameters = signature.parameters
    positional_or_keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    plain_kinds = (positional_or_keyword, inspect.Parameter.KEYWORD_ONLY)

    def general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
        return list(signature.bind(*args, **kwargs).arguments.items())

    if any(parameter.kind not in plain_kinds for parameter in parameters.values()):
        return general
    order = tuple(parameters)
    positional = tuple(n for n, p in parameters.items() if p.kind is positional_or_keyword)
    names = frozenset(parameters)
    required = frozenset(n for n, p in parameters.items() if p.default is p.empty)

    def fast(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
        if len(args) > len(positional):
            return general(args, kwargs)
        given = dict(zip(positional, args, strict=False))
        if not names.issuperset(kwargs) or not given.keys().isdisjoint(kwargs):
            return general(args, kwargs)
        given.update(kwargs)
        if not required.issubset(given):
            return general(args, kwargs)
        return [(name, given[name]) for name in order if name in given]

    return fast


_Prepared = tuple[
    Callable[[tuple[Any, ...], dict[str, Any]], list[tuple[str, Any]]],
    dict[str, Any],
    dict[str, bool],
    Callable[[str], Any],
]
"""What a checked function's calls need of its signature: the binder, each parameter's kind,
whether its written annotation admits None, and its resolved annotation by name."""


def _prepare(function: Callable[..., Any]) -> _Prepared:
    """What the calls of a checked ``function`` need of its signature, read on its first call."""
    signature = inspect.signature(function)
    parameters = signature.parameters.items()
    written = {
        name: parameter.annotation
        for name, parameter in parameters
        if name != "self" and parameter.annotation is not inspect.Parameter.empty
    }

    @functools.cache
    def hint(name: str) -> Any:
        # Resolved on first use, one parameter at a time: annotations may refer ahead,
        # and the aws_cdk module of a prop left at None (``ec2``, ``kms``) is never
        # imported for it.
        if name not in written:
            return _UNANNOTATED
        return _evaluate(written[name], function.__module__)

    return (
        _binder(signature),
        {name: parameter.kind for name, parameter in parameters},
        {name: _admits_none(parameter.annotation) for name, parameter in parameters},
        hint,
    )


def _binding_error(
    function: Callable[..., Any], owner: str, kwargs: Mapping[str, Any], error: TypeError
) -> ValidationError:
    """A call that does not bind (an unknown prop, a missing one, too many positional
    arguments) as a ValidationError: the value shown is the names of the props given, never
    their values (a secret in ``environment`` stays out of logs), and an unknown prop gets the
    nearest prop the signature takes."""
    unknown = re.search(r"unexpected keyword argument '(\w+)'", str(error))
    close = (
        difflib.get_close_matches(unknown.group(1), list(inspect.signature(function).parameters))
        if unknown
        else []
    )
    fix = f"did you mean {close[0]}? See help({owner})" if close else f"see help({owner})"
    return ValidationError(owner, f"props given: {', '.join(kwargs) or 'none'}", str(error), fix)


def _checked(
    function: Callable[..., R],
    owner: str,
    qualified: bool,
    *,
    decision: str | None = None,
    construct: bool = False,
) -> Callable[..., R]:
    """``function`` checking each argument against its annotation before it runs; a wrong type
    is named ``arg`` (a constructor's prop) or ``Owner(arg)`` (a factory's argument).

    ``decision``: what the owner decides at synth from its numbers (``LlmService`` lays out
    the service), so a number given as a deploy-time token is a ValidationError saying a
    concrete number is needed. ``construct``: the function is a construct's ``__init__``,
    which reports the checks skipped on tokens while it runs as info messages.
    """
    # What each call needs of the signature (its binder, each parameter's kind, whether its
    # written annotation admits None: a None there is not checked further) is read on the
    # first call, not at import: most checked functions of an app are never called.
    prepared: _Prepared | None = None

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> R:
        nonlocal prepared
        if prepared is None:
            prepared = _prepare(function)
        bind, kinds, admits_none, hint = prepared
        try:
            arguments = bind(args, kwargs)
        except TypeError as error:  # an unknown or missing prop
            raise _binding_error(function, owner, kwargs, error) from None
        for name, value in arguments:
            kind = kinds[name]
            if kind is inspect.Parameter.VAR_POSITIONAL or (value is None and admits_none[name]):
                continue
            expected = hint(name)
            if expected is _UNANNOTATED:
                continue
            if kind is inspect.Parameter.VAR_KEYWORD:
                _check_options(value, expected, owner, qualified)
                continue
            check_type(name, value, expected, owner, qualified=qualified)
            if decision is not None and _numeric(expected):
                require_concrete(f"{owner}({name})" if qualified else name, value, decision)
        if not construct:
            return function(*args, **kwargs)
        notes, collecting = collecting_unchecked()
        try:
            result = function(*args, **kwargs)
        finally:
            stop_collecting_unchecked(collecting)
        _report_unchecked(args[0], notes)
        return result

    setattr(checked, _TYPED, True)
    return checked


def is_typed(function: Any) -> bool:
    """True for a function (or static/class method) whose arguments are checked at call time,
    or one with no argument to check (``self`` or ``cls`` only)."""
    function = getattr(function, "__func__", function)
    if getattr(function, _TYPED, False):
        return True
    try:
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return not [name for name in parameters if name not in ("self", "cls")]


def _needs_no_check(function: Any) -> bool:
    """``is_typed`` of a plain function, read from its code object (``inspect.signature``
    costs more, for each method of each class at import) unless it wraps another or declares
    its own signature."""
    code = getattr(function, "__code__", None)
    if code is None or hasattr(function, "__wrapped__") or hasattr(function, "__signature__"):
        return is_typed(function)
    if getattr(function, _TYPED, False):
        return True
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return not [name for name in code.co_varnames[:count] if name not in ("self", "cls")]


def _foreign_names(cls: type) -> set[str]:
    """Names a base class from outside this package (a jsii class, ``Construct``, ``Enum``)
    or an implemented jsii interface defines: methods the jsii kernel may call back (``bind``,
    ``validate``), which keep their exact signature."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if not base.__module__.startswith(_PACKAGE):
            names.update(vars(base))
    for base in cls.__mro__:
        for interface in getattr(base, "__jsii_ifaces__", ()):
            for declared in interface.__mro__:
                names.update(vars(declared))
    return names


def _check_methods(cls: type, decision: str | None = None) -> None:
    """Wrap each public method, static method and class method ``cls`` defines whose arguments
    carry annotations, so a wrong type is named ``Class.method(argument)``."""
    foreign = _foreign_names(cls)
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name in foreign:
            continue
        function = getattr(member, "__func__", member)
        if not inspect.isfunction(function) or _needs_no_check(function):
            continue
        checked = _checked(function, function.__qualname__, qualified=True, decision=decision)
        if isinstance(member, staticmethod):
            setattr(cls, name, staticmethod(checked))
        elif isinstance(member, classmethod):
            setattr(cls, name, classmethod(checked))
        else:
            setattr(cls, name, checked)


def typed_props(cls: T) -> T:
    """Class decorator: check the types of every ``__init__`` argument at call time.

    Put it above ``@dataclass`` on a props dataclass, so it wraps the generated ``__init__``.
    The public methods, static methods and class methods the class defines are checked too
    (a wrong type is named ``Class.method(argument)``), except those that implement a jsii
    base class or interface. An ``__init__`` inherited from outside this package (an abstract
    construct base's, an enum's) is left alone.

    A props dataclass's ``help()`` lists its fields with their docstrings, and every class's
    ``inspect.signature`` (so ``help()``, IPython, Jupyter) gives its ``__init__``'s parameters
    (``signatures.py``: jsii's metaclass hides them otherwise).

    A class that decides something at synth from its numbers names the decision in
    ``__synth_decision__`` (``"LlmService decides the layout"``): a number given to it as a
    deploy-time token is then a ValidationError saying a concrete number is needed.
    """
    init = _init_of(cls)
    ours = getattr(init, "__module__", "").startswith(_PACKAGE)  # not Construct's or Enum's
    decision = getattr(cls, "__synth_decision__", None)
    if ours and ("__init__" in vars(cls) or not getattr(init, _TYPED, False)):
        is_construct = any(base.__name__ == "Construct" for base in cls.__mro__)
        cls.__init__ = _checked(  # type: ignore[misc]
            init, cls.__name__, qualified=False, decision=decision, construct=is_construct
        )
    _check_methods(cls, decision)
    _document_fields(cls)
    expose_init_signature(cls)
    return cls


def typed_factory(function: F) -> F:
    """Decorator of a static factory (below ``@staticmethod``): check the types of its
    arguments at call time; a wrong one is named ``Class.factory(argument)``, as the factory's
    own validation names it."""
    return cast(F, _checked(function, function.__qualname__, qualified=True))


def trusted(cls: Callable[P, R]) -> Callable[P, R]:
    """``cls``'s constructor without the run-time type checks of ``@typed_props``: for the
    library's own constant data (the catalog's accelerators, instance types, model specs and
    prices), whose types mypy checks, so that importing the catalog does not check each of its
    entries. The class's own validation (``__post_init__``) still runs, and every value a user
    passes still goes through the checks."""
    init = getattr(_init_of(cast(type, cls)), "__wrapped__", None)
    if init is None:
        return cls

    def build(*args: P.args, **kwargs: P.kwargs) -> R:
        instance: R = cast(Any, cls).__new__(cls)
        init(instance, *args, **kwargs)
        return instance

    return build

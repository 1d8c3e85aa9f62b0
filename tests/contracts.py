"""API contracts: requests checked against botocore's service models.

``validate_request(service, operation, params)`` runs botocore's own validator
(``botocore.validate.validate_parameters`` on the operation's input shape: required members,
types, minimum lengths and values) and adds what that validator leaves out on purpose: enum
values and maximums (of numbers, string lengths and list lengths). ``checked(fake, service)`` wraps a hand-written fake client so its calls are held
to the same contract; the ``api_contract`` fixture in ``conftest.py`` does it for every real
boto3 client (moto, Stubber) a test creates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import botocore.session
from botocore import xform_name
from botocore.exceptions import ParamValidationError
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.validate import validate_parameters

_SESSION = botocore.session.get_session()


@functools.cache
def service_model(service: str) -> ServiceModel:
    """botocore's model of ``service`` (``sagemaker``, ``s3``, ...)."""
    return _SESSION.get_service_model(service)


@functools.cache
def _operations(service: str) -> dict[str, str]:
    return {xform_name(name): name for name in service_model(service).operation_names}


def _maximum_error(shape: Shape, value: Any, path: str) -> str | None:
    maximum = shape.metadata.get("max")
    if maximum is None:
        return None
    if shape.type_name in ("integer", "long", "float", "double"):
        if isinstance(value, int | float) and not isinstance(value, bool) and value > maximum:
            return f"{path}: {value} is above the maximum {maximum}"
    elif (
        shape.type_name in ("string", "list")
        and isinstance(value, str | list)
        and len(value) > maximum
    ):
        return f"{path}: length {len(value)} is above the maximum {maximum}"
    return None


def model_errors(shape: Shape | None, value: Any, path: str = "") -> list[str]:
    """What botocore's validator skips: values outside their shape's enum or above its max."""
    if shape is None:
        return []
    errors: list[str] = []
    too_big = _maximum_error(shape, value, path or "value")
    if too_big:
        errors.append(too_big)
    if shape.type_name == "string" and shape.enum and isinstance(value, str):
        if value not in shape.enum:
            errors.append(f"{path or 'value'}: {value!r} is not one of {shape.enum}")
    elif shape.type_name == "structure" and isinstance(value, Mapping):
        for name, item in value.items():
            member = shape.members.get(name)  # type: ignore[attr-defined]
            errors += model_errors(member, item, f"{path}.{name}" if path else name)
    elif shape.type_name == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            errors += model_errors(shape.member, item, f"{path}[{index}]")  # type: ignore[attr-defined]
    elif shape.type_name == "map" and isinstance(value, Mapping):
        for key, item in value.items():
            errors += model_errors(shape.key, key, f"{path}<key>")  # type: ignore[attr-defined]
            errors += model_errors(shape.value, item, f"{path}[{key!r}]")  # type: ignore[attr-defined]
    return errors


def validate_operation(operation: OperationModel, params: Mapping[str, Any]) -> None:
    """Raise ``ParamValidationError`` unless ``params`` is a valid request of ``operation``."""
    shape = operation.input_shape
    if shape is None:
        if params:
            raise ParamValidationError(report=f"{operation.name} takes no parameters")
        return
    validate_parameters(dict(params), shape)
    errors = model_errors(shape, params)
    if errors:
        report = f"{operation.name}: " + "; ".join(errors)
        raise ParamValidationError(report=report)


def validate_request(service: str, operation: str, params: Mapping[str, Any]) -> None:
    """Validate a request given the operation's API name (``CreateModel``) or method name
    (``create_model``)."""
    name = _operations(service).get(operation, operation)
    validate_operation(service_model(service).operation_model(name), params)


class _Checked:
    """A proxy validating each API-method call of a fake client before forwarding it."""

    def __init__(self, fake: Any, service: str) -> None:
        self._fake = fake
        self._service = service
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._fake, name)
        operation = _operations(self._service).get(name)
        if operation is None or not callable(attribute):
            return attribute

        def call(*args: Any, **params: Any) -> Any:
            if args:
                raise TypeError(f"{name}: boto3 takes keyword arguments only")
            validate_request(self._service, operation, params)
            self.calls.append(operation)
            return attribute(**params)

        return call


def checked(fake: Any, service: str) -> Any:
    """``fake`` with every call of an operation of ``service`` validated (see module doc)."""
    return _Checked(fake, service)

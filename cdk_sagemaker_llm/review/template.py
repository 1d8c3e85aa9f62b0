"""Helpers over one CloudFormation template: resources by type, references, intrinsic values
rendered for a reader.
"""

from __future__ import annotations

import json
from typing import Any


def refs(value: Any) -> set[str]:
    """Logical ids referenced (Ref, Fn::GetAtt, Fn::Sub ${X}) anywhere in ``value``."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                found.add(item)
            elif key == "Fn::GetAtt":
                target = item[0] if isinstance(item, list) and item else str(item).split(".")[0]
                if isinstance(target, str):
                    found.add(target)
            else:
                found |= refs(item)
    elif isinstance(value, list):
        for item in value:
            found |= refs(item)
    return found


def shown(value: Any) -> str:
    """A readable string for a template value; tokens shown as ``${...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, dict) and len(value) == 1:
        key, item = next(iter(value.items()))
        if key == "Ref":
            return "${" + str(item) + "}"
        if key == "Fn::GetAtt":
            return "${" + (".".join(item) if isinstance(item, list) else str(item)) + "}"
        if key == "Fn::Join" and isinstance(item, list) and len(item) == 2:
            return str(item[0]).join(shown(part) for part in item[1])
        if key == "Fn::FindInMap" and isinstance(item, list):
            return "${" + ".".join(shown(part) for part in item) + "}"
        if key == "Fn::ImportValue":
            return "${import:" + shown(item) + "}"
        if key == "Fn::Sub":
            return shown(item[0] if isinstance(item, list) else item)
    return "${" + json.dumps(value, sort_keys=True) + "}"


def literal_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def environment_of(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, str)}


class Template:
    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, dict[str, Any]] = dict(
            sorted((template.get("Resources") or {}).items())
        )

    def of_type(self, resource_type: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (logical_id, resource)
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == resource_type
        ]

    def properties(self, logical_id: str) -> dict[str, Any]:
        return dict(self.resources.get(logical_id, {}).get("Properties") or {})

    def metadata(self, logical_id: str) -> dict[str, Any]:
        return dict(self.resources.get(logical_id, {}).get("Metadata") or {})

    def referenced(self, value: Any, resource_type: str) -> str | None:
        for logical_id in sorted(refs(value)):
            if self.resources.get(logical_id, {}).get("Type") == resource_type:
                return logical_id
        return None


def display_name(logical_id: str, name: Any) -> str:
    return name if isinstance(name, str) else logical_id

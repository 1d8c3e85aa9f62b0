"""Stable templates for snapshot tests: volatile values (asset hashes) normalized."""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Template

_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
_ASSET_PARAMETER = re.compile(r"AssetParameters[0-9a-fA-F]{64}")


def normalized_template(stack: Stack) -> dict[str, Any]:
    """``stack``'s template with asset hashes replaced by ``ASSET_HASH``, so a snapshot changes
    only when the template does (not when a Lambda asset's bytes or the CDK version do).

    The ``CDKMetadata`` resource and the bootstrap-version rule and parameter are dropped.
    """
    template: dict[str, Any] = dict(Template.from_stack(stack).to_json())
    template.get("Resources", {}).pop("CDKMetadata", None)
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    template.get("Rules", {}).pop("CheckBootstrapVersion", None)
    for section in ("Parameters", "Rules", "Conditions"):
        if section in template and not template[section]:
            del template[section]
    normalized: dict[str, Any] = _normalize(template)
    return normalized


def _normalize(value: Any) -> Any:
    if isinstance(value, dict):
        return {_normalize_text(key): _normalize(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalize(item) for item in value]
    if isinstance(value, str):
        return _normalize_text(value)
    return value


def _normalize_text(text: str) -> str:
    return _ASSET_HASH.sub("ASSET_HASH", _ASSET_PARAMETER.sub("AssetParametersASSET_HASH", text))

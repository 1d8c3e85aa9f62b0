"""Reading a synthesized cloud assembly: the stacks' templates (``manifest.json`` or every
``*.template.json``) and their regions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ValidationError


def read_templates(assembly_dir: str | Path) -> dict[str, dict[str, Any]]:
    """The stack templates of a cloud assembly, by stack name (sorted).

    Uses ``manifest.json``'s ``aws:cloudformation:stack`` artifacts; nested assemblies (stages)
    are followed. Without a manifest, every ``*.template.json`` is read.
    """
    root = Path(assembly_dir)
    if not root.is_dir():
        raise ValidationError(
            "assembly_dir",
            str(root),
            "not a directory",
            "run `cdk synth` first (it writes cdk.out), or pass the assembly directory",
        )
    templates: dict[str, dict[str, Any]] = {}
    _read_assembly(root, templates)
    if not templates and not (root / "manifest.json").is_file():
        raise ValidationError(
            "assembly_dir",
            str(root),
            "is not a cloud assembly: it holds no manifest.json and no *.template.json",
            "run `cdk synth` first (it writes cdk.out), or pass the assembly directory",
        )
    return dict(sorted(templates.items()))


def _read_assembly(root: Path, templates: dict[str, dict[str, Any]]) -> None:
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        for path in sorted(root.glob("*.template.json")):
            templates[path.name.removesuffix(".template.json")] = _read_object(path, template=True)
        return
    manifest = _read_object(manifest_path)
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        kind = artifact.get("type")
        properties = artifact.get("properties", {})
        if kind == "aws:cloudformation:stack" and properties.get("templateFile"):
            name = artifact.get("displayName") or properties.get("stackName") or artifact_id
            templates[name] = _read_object(root / properties["templateFile"], template=True)
        elif kind == "cdk:cloud-assembly" and properties.get("directoryName"):
            _read_assembly(root / properties["directoryName"], templates)


def _read_object(path: Path, *, template: bool = False) -> dict[str, Any]:
    """The JSON object in ``path`` (a manifest, or a template whose ``Resources`` is an object);
    a file that is unreadable, not JSON or not such an object is a ValidationError naming it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        problem = f"{path} cannot be read as JSON: {error}"
    else:
        if not isinstance(document, dict):
            problem = f"{path} is not a JSON object"
        elif template and not isinstance(document.get("Resources", {}), dict):
            problem = f"{path}'s Resources is not an object"
        else:
            return document
    raise ValidationError(
        "assembly_dir",
        str(path.parent),
        problem,
        "pass the directory `cdk synth` wrote (cdk.out), or synthesize again",
    )


def stack_regions(assembly_dir: str | Path) -> dict[str, str]:
    """The region of each stack whose environment names one (``aws://account/region``)."""
    regions: dict[str, str] = {}

    def read(root: Path) -> None:
        manifest_path = root / "manifest.json"
        if not manifest_path.is_file():
            return
        for artifact_id, artifact in _read_object(manifest_path).get("artifacts", {}).items():
            properties = artifact.get("properties", {})
            if artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
                read(root / properties["directoryName"])
            region = str(artifact.get("environment", "")).rpartition("/")[2]
            if artifact.get("type") == "aws:cloudformation:stack" and region not in (
                "",
                "unknown-region",
            ):
                name = artifact.get("displayName") or properties.get("stackName") or artifact_id
                regions[name] = region

    read(Path(assembly_dir))
    return regions

"""Generate cdk_sagemaker_llm/catalog/jumpstart_catalog.json from a pinned public npm package.

SageMaker JumpStart publishes each model's specs (serving image per region, environment, weights
location, instance types, licence) in its regional S3 buckets; AWS's generative-AI CDK
constructs (``@cdklabs/generative-ai-cdk-constructs``) ship a generated snapshot of them,
``lib/patterns/gen-ai/aws-model-deployment-sagemaker/jumpstart-models.json`` (a raw-deflated
JSON document), with the regional JumpStart buckets in ``private/jumpstart-constants.js``
(taken from the SageMaker Python SDK's ``jumpstart/constants.py``). This script reads the pinned
package tarball offline and keeps only what the library needs of the text-generation models
(LLMs): for each model id its newest version that names its serving images (the others cannot
be deployed from the snapshot).

    python scripts/generate_jumpstart_catalog.py --download   # cache the pinned tarball (npm)
    python scripts/generate_jumpstart_catalog.py              # regenerate the catalog
    python scripts/generate_jumpstart_catalog.py --check      # exit 1 when the file is stale

The tarball is cached in ``.cache/jumpstart`` (or ``$CDK_SAGEMAKER_LLM_JUMPSTART_CACHE``); its
SHA-256 is pinned, so a regeneration reads exactly the bytes the checked-in catalog came from.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "cdk_sagemaker_llm" / "catalog" / "jumpstart_catalog.json"

PACKAGE = "@cdklabs/generative-ai-cdk-constructs"
VERSION = "0.1.318"
PUBLISHED = "2026-07-17"
"""The npm registry's publication date of ``VERSION`` (``npm view <package> time``)."""
TARBALL = "cdklabs-generative-ai-cdk-constructs-0.1.318.tgz"
TARBALL_SHA256 = "391dfb8219f3a56ff8ea11b19a0947fec00d5756a64adf8dd83edf5519919a92"
DIRECTORY = "package/lib/patterns/gen-ai/aws-model-deployment-sagemaker/"
MODELS = DIRECTORY + "jumpstart-models.json"
CONSTANTS = DIRECTORY + "private/jumpstart-constants.js"

TEXT_GENERATION = re.compile(r"(^|-)(textgeneration\d*|llm)(-|$)")
"""JumpStart's text-generation model ids: ``meta-textgeneration-*``, ``huggingface-llm-*``,
``huggingface-textgeneration1-*``, ``deepseek-llm-*`` ..."""
BUCKET_ENTRY = re.compile(
    r"'(?P<region>[a-z0-9-]+)':\s*\{\s*contentBucket:\s*'(?P<content>[^']+)',"
    r"\s*gatedContentBucket:\s*'(?P<gated>[^']+)'"
)
IMAGE_URI = re.compile(
    r"^(?P<registry>\d{12}\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.[a-z.]+)/(?P<image>.+)$"
)


def default_cache() -> Path:
    """The tarball cache: ``$CDK_SAGEMAKER_LLM_JUMPSTART_CACHE`` or ``<repo>/.cache/jumpstart``."""
    return Path(os.environ.get("CDK_SAGEMAKER_LLM_JUMPSTART_CACHE", ROOT / ".cache" / "jumpstart"))


def version_key(version: str) -> tuple[int, ...]:
    """``"2.2.4"`` as ``(2, 2, 4)``."""
    return tuple(int(part) for part in version.split("."))


def read_package(tarball: Path) -> tuple[dict[str, Any], str]:
    """The model specs by constant name and the text of the JumpStart constants module."""
    with tarfile.open(tarball, "r:gz") as archive:
        models_file = archive.extractfile(MODELS)
        constants_file = archive.extractfile(CONSTANTS)
        if models_file is None or constants_file is None:
            raise ValueError(f"{tarball.name} lacks {MODELS} or {CONSTANTS}")
        buffer = json.loads(models_file.read())
        constants = constants_file.read().decode()
    if buffer.get("type") != "Buffer":
        raise ValueError(f"{MODELS} is not a serialized Node.js Buffer")
    specs: dict[str, Any] = json.loads(zlib.decompress(bytes(buffer["data"]), -zlib.MAX_WBITS))
    return specs, constants


def buckets_of(constants: str) -> dict[str, dict[str, str]]:
    """JumpStart's content and gated-content bucket per launched region."""
    buckets = {
        match.group("region"): {"content": match.group("content"), "gated": match.group("gated")}
        for match in BUCKET_ENTRY.finditer(constants)
    }
    if not buckets:
        raise ValueError(f"{CONSTANTS} names no JumpStart buckets")
    return buckets


def newest_deployable(specs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per text-generation model id, its newest version with serving images (and no
    Marketplace model package, which this library does not deploy)."""
    chosen: dict[str, dict[str, Any]] = {}
    for spec in specs.values():
        model_id = spec["modelId"]
        if not TEXT_GENERATION.search(model_id) or spec.get("modelPackageArns"):
            continue
        if not spec.get("instanceAliases") or not spec.get("instanceVariants"):
            continue
        current = chosen.get(model_id)
        if current is None or version_key(spec["version"]) > version_key(current["version"]):
            chosen[model_id] = spec
    return chosen


def _strings(environment: dict[str, Any] | None) -> dict[str, str]:
    """An environment with every value as the string the container sees."""
    return {name: str(value) for name, value in sorted((environment or {}).items())}


def model_entry(
    spec: dict[str, Any],
    launched: set[str],
    registries: dict[str, str],
    region_sets: list[list[str]],
) -> dict[str, Any]:
    """What the library keeps of one model version, in the regions JumpStart is launched in
    (those with its buckets: a model is offered where both its image and the weights are);
    fills the shared registry and region-set tables."""
    images: dict[str, dict[str, list[str]]] = {}
    for regional in spec["instanceAliases"]:
        if regional["region"] not in launched:
            continue
        for alias, uri in regional["aliases"].items():
            match = IMAGE_URI.match(uri)
            if match is None or match.group("region") != regional["region"]:
                raise ValueError(f"{spec['modelId']}: unexpected image URI {uri}")
            known = registries.setdefault(regional["region"], match.group("registry"))
            if known != match.group("registry"):
                raise ValueError(f"{regional['region']}: two registries {known}, {uri}")
            images.setdefault(alias, {}).setdefault(match.group("image"), []).append(
                regional["region"]
            )
    families: dict[str, str] = {}
    instance_environment: dict[str, dict[str, str]] = {}
    for variant in spec["instanceVariants"]:
        if "imageUri" in variant:
            families[variant["instanceType"]] = variant["imageUri"].lstrip("$")
        if variant.get("environment"):
            instance_environment[variant["instanceType"]] = _strings(variant["environment"])
    regional_images: dict[str, list[tuple[str, int]]] = {}
    for alias, by_image in sorted(images.items()):
        entries = []
        for image, regions in sorted(by_image.items()):
            ordered = sorted(regions)
            if ordered not in region_sets:
                region_sets.append(ordered)
            entries.append((image, region_sets.index(ordered)))
        regional_images[alias] = entries
    return {
        "version": spec["version"],
        "default_instance_type": spec["defaultInstanceType"],
        "instance_types": sorted(spec["instanceTypes"]),
        "environment": _strings(spec["environment"]),
        "instance_environment": instance_environment,
        "artifact_key": spec.get("prepackedArtifactKey") or spec.get("artifactKey"),
        "gated_bucket": bool(spec.get("gatedBucket")),
        "eula": spec.get("requiresEula"),
        "image_of_family": dict(sorted(families.items())),
        "images": regional_images,
    }


def build_catalog(tarball: Path) -> dict[str, Any]:
    """The catalog document generated from ``tarball``."""
    specs, constants = read_package(tarball)
    buckets = buckets_of(constants)
    registries: dict[str, str] = {}
    region_sets: list[list[str]] = []
    models = {
        model_id: model_entry(spec, set(buckets), registries, region_sets)
        for model_id, spec in sorted(newest_deployable(specs).items())
    }
    return {
        "generated_by": "scripts/generate_jumpstart_catalog.py",
        "source": {
            "package": PACKAGE,
            "version": VERSION,
            "published": PUBLISHED,
            "tarball": tarball.name,
            "sha256": sha256(tarball),
            "files": [MODELS, CONSTANTS],
        },
        "buckets": buckets,
        "registries": dict(sorted(registries.items())),
        "region_sets": region_sets,
        "models": models,
    }


def render(catalog: dict[str, Any]) -> str:
    """The catalog as the checked-in text: sorted keys, no indent past one level, final newline."""
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


def sha256(path: Path) -> str:
    """The hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_tarball(cache: Path) -> Path:
    """The pinned tarball in ``cache``; raises FileNotFoundError or ValueError (wrong bytes)."""
    tarball = cache / TARBALL
    if not tarball.is_file():
        raise FileNotFoundError(
            f"{tarball} is missing: run python scripts/generate_jumpstart_catalog.py --download"
        )
    digest = sha256(tarball)
    if digest != TARBALL_SHA256:
        raise ValueError(f"{tarball} has SHA-256 {digest}, expected {TARBALL_SHA256}")
    return tarball


def download(cache: Path) -> Path:
    """Fetch the pinned tarball into ``cache`` with ``npm pack``, then verify it."""
    if (cache / TARBALL).is_file():
        return pinned_tarball(cache)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "pack", "--silent", f"{PACKAGE}@{VERSION}", "--pack-destination", str(cache)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return pinned_tarball(cache)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--download",
        action="store_true",
        help="fetch the pinned tarball (then stop, unless --check)",
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="tarball cache")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="catalog file")
    args = parser.parse_args(argv)
    if args.download:
        tarball = download(args.cache)
        print(f"cached {tarball}")
        if not args.check:
            return 0
    tarball = pinned_tarball(args.cache)
    text = render(build_catalog(tarball))
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: regenerate it from {tarball.name}", file=sys.stderr)
            return 1
        print(f"{args.output} matches {tarball.name}")
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} from {tarball.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

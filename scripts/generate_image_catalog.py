"""Generate cdk_sagemaker_llm/catalog/dlc_catalog.json from the SageMaker Python SDK's image map.

AWS maintains, in the SageMaker Python SDK, the map of Deep Learning Container images that
``sagemaker.image_uris.retrieve`` resolves: per framework version the ECR repository, the tag
parts and the registry account of every region (``image_uri_config/*.json``). SDK v2 shipped
it in the ``sagemaker`` wheel (``sagemaker/image_uri_config``; the last v2 release is 2.257.7);
SDK v3 turned ``sagemaker`` into a meta-package and moved the map, kept current, to
``sagemaker-core`` (``sagemaker/core/image_uri_config``). The catalog is generated from the
pinned ``sagemaker-core`` wheel below, read as a zip archive: nothing of the SDK is imported.

    python scripts/generate_image_catalog.py --download   # cache the pinned wheel (pip), only
    python scripts/generate_image_catalog.py              # regenerate the catalog
    python scripts/generate_image_catalog.py --check      # exit 1 when the file is stale

The wheel is cached in ``.cache/sagemaker-sdk`` (or ``$CDK_SAGEMAKER_LLM_SDK_CACHE``); its
SHA-256 is pinned, so a regeneration reads exactly the bytes the checked-in catalog came from.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "cdk_sagemaker_llm" / "catalog" / "dlc_catalog.json"

SDK_PACKAGE = "sagemaker-core"
SDK_VERSION = "2.27.0"
SDK_WHEEL = "sagemaker_core-2.27.0-py3-none-any.whl"
SDK_WHEEL_SHA256 = "62e5b4e2296dd26c042f28d26b9292501cdcf0c83a02656e280d61f132114312"
CONFIG_DIRECTORIES = ("sagemaker/core/image_uri_config/", "sagemaker/image_uri_config/")
"""Where the map lives in a sagemaker-core (v3) wheel, and in a sagemaker (v2) wheel."""

UNMODELED_REGION_PREFIXES = ("us-iso", "eu-isoe", "eusc-")
"""Regions of partitions the library does not model (ISO, European Sovereign Cloud): their ARN
partition and ECR domain differ from aws/aws-cn/aws-us-gov, so they are left out and listed."""


def default_cache() -> Path:
    """The wheel cache: ``$CDK_SAGEMAKER_LLM_SDK_CACHE`` or ``<repo>/.cache/sagemaker-sdk``."""
    return Path(os.environ.get("CDK_SAGEMAKER_LLM_SDK_CACHE", ROOT / ".cache" / "sagemaker-sdk"))


@dataclass(frozen=True)
class LineSource:
    """Where one library container line comes from in the SDK map, and how its tags are built."""

    family: str
    """The ContainerFamily value the line serves."""
    config: str
    """The image_uri_config file."""
    scope: str | None = None
    """The image scope holding the versions (``inference``), or None when the file is flat."""
    processor: str | None = None
    """The processor whose tag and container version the line uses (``gpu``, ``cpu``)."""
    inference_tool: str | None = None
    """The tag token that replaces the processor for Neuron images (``neuronx``)."""
    processor_in_tag: bool = True
    """False when the processor token is left out of the tag (Triton GPU images)."""
    first_release: str | None = None
    """The oldest release kept, or None for all."""


LINES = (
    LineSource("lmi", "djl-lmi.json"),
    LineSource("lmi-tensorrt-llm", "djl-tensorrtllm.json"),
    LineSource("lmi-neuronx", "djl-neuronx.json"),
    # TGI is in maintenance mode upstream (Hugging Face recommends vLLM or SGLang for new
    # deployments); AWS still publishes the images, so the line stays.
    LineSource("tgi", "huggingface-llm.json", scope="inference", processor="gpu"),
    LineSource(
        "tgi-neuronx",
        "huggingface-llm-neuronx.json",
        scope="inference",
        processor="inf2",
        inference_tool="neuronx",
    ),
    # PyTorch 0.4-1.x images predate LLM serving, use older registry accounts and carry several
    # Python versions per release: the catalog starts at 2.0.0.
    LineSource("pytorch-gpu", "pytorch.json", "inference", "gpu", first_release="2.0.0"),
    LineSource("pytorch-cpu", "pytorch.json", "inference", "cpu", first_release="2.0.0"),
    # The SDK strips "-gpu" from Triton tags: only CPU images carry the processor token.
    LineSource("triton", "sagemaker-tritonserver.json", processor="gpu", processor_in_tag=False),
    # SageMaker's vLLM Deep Learning Containers: vLLM's OpenAI server, configured by SM_VLLM_*
    # variables. "vllm" is keyed by vLLM release (0.23.0 ...), "vllm-server" by image generation
    # (2, 2.1 ...; tag server-sagemaker-cuda-v2); both live in the "vllm" repository.
    LineSource("vllm", "vllm.json", "inference", "gpu"),
    LineSource("vllm-server", "vllm-server.json", processor="gpu", processor_in_tag=False),
    LineSource("huggingface-vllm", "huggingface-vllm.json", "inference", "gpu"),
)


def version_key(version: str) -> tuple[int, ...]:
    """``"0.31.0"`` as ``(0, 31, 0)``."""
    return tuple(int(part) for part in version.split("."))


def image_tag(line: LineSource, version: str, config: dict[str, Any]) -> str:
    """The tag ``sagemaker.image_uris.retrieve`` builds for one release: tag prefix (or the
    version), processor or inference tool, Python version, container version, joined by "-"."""
    py_versions = config.get("py_versions", [])
    if len(py_versions) > 1:
        raise ValueError(f"{line.config} {version}: several Python versions {py_versions}")
    processor_token = line.processor if line.processor_in_tag else None
    parts = (
        config.get("tag_prefix", version),
        line.inference_tool or processor_token,
        py_versions[0] if py_versions else None,
        config.get("container_version", {}).get(line.processor) if line.processor else None,
    )
    return "-".join(part for part in parts if part)


def read_map(wheel: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """The image_uri_config directory of ``wheel`` and its JSON files by name."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for directory in CONFIG_DIRECTORIES:
            files = {
                name[len(directory) :]: json.loads(archive.read(name))
                for name in names
                if name.startswith(directory) and name.endswith(".json")
            }
            if files:
                return directory.rstrip("/"), files
    raise ValueError(f"{wheel.name} holds no image_uri_config directory")


def build_catalog(wheel: Path) -> dict[str, Any]:
    """The catalog document generated from ``wheel``."""
    directory, files = read_map(wheel)
    omitted: set[str] = set()
    lines: dict[str, Any] = {}
    for line in LINES:
        document = files[line.config]
        versions = (document[line.scope] if line.scope else document)["versions"]
        repositories = set()
        releases = {}
        for version, config in versions.items():
            if line.first_release and version_key(version) < version_key(line.first_release):
                continue
            registries = {}
            for region, account in config["registries"].items():
                if region.startswith(UNMODELED_REGION_PREFIXES):
                    omitted.add(region)
                else:
                    registries[region] = account
            repositories.add(config["repository"])
            releases[version] = {"tag": image_tag(line, version, config), "registries": registries}
        if len(repositories) != 1:
            raise ValueError(f"{line.config}: expected one repository, found {repositories}")
        lines[line.family] = {
            "config": line.config,
            "repository": repositories.pop(),
            "releases": releases,
        }
    return {
        "generated_by": "scripts/generate_image_catalog.py",
        "source": {
            "package": SDK_PACKAGE,
            "version": SDK_VERSION,
            "wheel": wheel.name,
            "sha256": sha256(wheel),
            "directory": directory,
        },
        "omitted_regions": sorted(omitted),
        "lines": lines,
    }


def render(catalog: dict[str, Any]) -> str:
    """The catalog as the checked-in text: sorted keys, one level of indent, final newline."""
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


def sha256(path: Path) -> str:
    """The hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_wheel(cache: Path) -> Path:
    """The pinned wheel in ``cache``; raises FileNotFoundError or ValueError (wrong bytes)."""
    wheel = cache / SDK_WHEEL
    if not wheel.is_file():
        raise FileNotFoundError(
            f"{wheel} is missing: run python scripts/generate_image_catalog.py --download"
        )
    digest = sha256(wheel)
    if digest != SDK_WHEEL_SHA256:
        raise ValueError(f"{wheel} has SHA-256 {digest}, expected {SDK_WHEEL_SHA256}")
    return wheel


def download(cache: Path) -> Path:
    """Fetch the pinned wheel into ``cache`` with pip (no dependencies), then verify it."""
    if (cache / SDK_WHEEL).is_file():
        return pinned_wheel(cache)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(cache),
            f"{SDK_PACKAGE}=={SDK_VERSION}",
        ],
        check=True,
    )
    return pinned_wheel(cache)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--download", action="store_true", help="fetch the pinned wheel (then stop, unless --check)"
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="wheel cache")
    parser.add_argument("--wheel", type=Path, help="read this wheel instead of the pinned one")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="catalog file")
    args = parser.parse_args(argv)
    if args.download:
        wheel = download(args.cache)
        print(f"cached {wheel}")
        if not args.check:
            return 0
    wheel = args.wheel or pinned_wheel(args.cache)
    text = render(build_catalog(wheel))
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: regenerate it from {wheel.name}", file=sys.stderr)
            return 1
        print(f"{args.output} matches {wheel.name}")
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} from {wheel.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The generated image catalog: regenerating it from the pinned SageMaker SDK wheel reproduces
the checked-in file, offline. ``scripts/setup.sh`` caches the wheel
(``scripts/generate_image_catalog.py --download``); without it these tests are skipped."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_image_catalog.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_image_catalog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


generator = _generator()
WHEEL = generator.default_cache() / generator.SDK_WHEEL
needs_wheel = pytest.mark.skipif(
    not WHEEL.is_file(),
    reason=f"the pinned {generator.SDK_WHEEL} is not cached at {WHEEL}: run "
    "scripts/setup.sh or python scripts/generate_image_catalog.py --download",
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


@needs_wheel
def test_regenerating_from_the_pinned_wheel_reproduces_the_checked_in_catalog() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stderr
    assert "matches sagemaker_core-2.27.0" in result.stdout


@needs_wheel
def test_check_fails_on_a_stale_catalog(tmp_path: Path) -> None:
    """Negative control: a hand edit is caught."""
    stale = tmp_path / "dlc_catalog.json"
    document = json.loads(generator.OUTPUT.read_text())
    del document["lines"]["lmi"]["releases"]["0.38.0"]
    stale.write_text(generator.render(document))
    result = _run("--check", "--output", str(stale))
    assert result.returncode == 1
    assert "is stale" in result.stderr


@needs_wheel
def test_the_catalog_records_its_source_and_the_newest_lmi_of_the_sdk_map() -> None:
    document = json.loads(generator.OUTPUT.read_text())
    assert document["source"]["package"] == "sagemaker-core"
    assert document["source"]["version"] == "2.27.0"
    assert document["source"]["sha256"] == generator.SDK_WHEEL_SHA256
    with zipfile.ZipFile(WHEEL) as archive:
        lmi = json.loads(archive.read("sagemaker/core/image_uri_config/djl-lmi.json"))
    newest = max(lmi["versions"], key=generator.version_key)
    assert newest == "0.38.0"
    assert newest in document["lines"]["lmi"]["releases"]


def test_a_wheel_with_other_bytes_is_refused(tmp_path: Path) -> None:
    (tmp_path / generator.SDK_WHEEL).write_bytes(b"not the pinned wheel")
    with pytest.raises(ValueError, match="expected"):
        generator.pinned_wheel(tmp_path)


def test_a_missing_wheel_names_the_download_step(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--download"):
        generator.pinned_wheel(tmp_path)


def _entry(**extra: object) -> dict[str, object]:
    return {"registries": {"us-east-1": "763104351884"}, "repository": "r", **extra}


@pytest.mark.parametrize(
    ("line", "version", "config", "tag"),
    [
        (generator.LINES[0], "0.38.0", _entry(tag_prefix="0.38.0-lmi29.0.0-cu130"), None),
        (
            generator.LINES[3],
            "3.3.6",
            _entry(
                tag_prefix="2.7.0-tgi3.3.6",
                py_versions=["py311"],
                container_version={"gpu": "cu124-ubuntu22.04"},
            ),
            "2.7.0-tgi3.3.6-gpu-py311-cu124-ubuntu22.04",
        ),
        (
            generator.LINES[4],
            "0.3.0",
            _entry(
                tag_prefix="2.7.0-optimum3.3.6",
                py_versions=["py310"],
                container_version={"inf2": "ubuntu22.04"},
            ),
            "2.7.0-optimum3.3.6-neuronx-py310-ubuntu22.04",
        ),
        (generator.LINES[5], "2.6.0", _entry(py_versions=["py312"]), "2.6.0-gpu-py312"),
        (generator.LINES[6], "2.6.0", _entry(py_versions=["py312"]), "2.6.0-cpu-py312"),
        (generator.LINES[7], "26.05", _entry(tag_prefix="26.05-py3"), "26.05-py3"),
    ],
)
def test_tags_are_built_as_the_sdk_builds_them(
    line: object, version: str, config: dict[str, object], tag: str | None
) -> None:
    expected = tag or config["tag_prefix"]
    assert generator.image_tag(line, version, config) == expected


def test_a_release_with_several_python_versions_is_refused() -> None:
    with pytest.raises(ValueError, match="several Python versions"):
        generator.image_tag(generator.LINES[5], "1.8.1", _entry(py_versions=["py3", "py36"]))


@needs_wheel
@pytest.mark.parametrize(
    ("family", "config", "scoped"),
    [("vllm", "vllm.json", True), ("vllm-server", "vllm-server.json", False)],
)
def test_the_catalog_holds_every_vllm_release_of_the_sdk_map(
    family: str, config: str, scoped: bool
) -> None:
    document = json.loads(generator.OUTPUT.read_text())
    with zipfile.ZipFile(WHEEL) as archive:
        source = json.loads(archive.read(f"sagemaker/core/image_uri_config/{config}"))
    versions = (source["inference"] if scoped else source)["versions"]
    assert set(document["lines"][family]["releases"]) == set(versions)

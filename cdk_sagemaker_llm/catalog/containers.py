"""Deep Learning Container lines: repositories, known releases and where AWS publishes them.

The facts are generated (``scripts/generate_image_catalog.py``) from the image map AWS maintains
in the SageMaker Python SDK and checked in as ``dlc_catalog.json``: for every release the tag
``sagemaker.image_uris.retrieve`` resolves and the registry account of every region it is
published in. ``CATALOG_SOURCE`` names the SDK release it came from. Pure facts (no aws_cdk):
``ContainerImage`` (constructs/images.py) binds them to a stack, and ``plan`` reads them to
describe images in synthesized templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from types import MappingProxyType
from typing import Any

from ..errors import ValidationError
from .instance_types import AcceleratorKind, CpuArchitecture


class ContainerFamily(Enum):
    """The serving stack inside an image; decides which serving options apply."""

    LMI = "lmi"
    """LMI (DJL Serving) with the vLLM / LMI-Dist backends."""
    LMI_TENSORRT_LLM = "lmi-tensorrt-llm"
    """LMI with the TensorRT-LLM backend."""
    LMI_NEURONX = "lmi-neuronx"
    """LMI with the Transformers-NeuronX backend (Inferentia2 / Trainium)."""
    TGI = "tgi"
    """Hugging Face Text Generation Inference on GPUs."""
    TGI_NEURONX = "tgi-neuronx"
    """Hugging Face TGI with Optimum Neuron (Inferentia2 / Trainium)."""
    PYTORCH_GPU = "pytorch-gpu"
    """PyTorch inference (TorchServe) on GPUs."""
    PYTORCH_CPU = "pytorch-cpu"
    """PyTorch inference (TorchServe) on CPUs."""
    TRITON = "triton"
    """NVIDIA Triton Inference Server."""
    VLLM = "vllm"
    """SageMaker's vLLM Deep Learning Container, by vLLM release (vLLM's OpenAI server,
    configured by ``SM_VLLM_*`` variables)."""
    VLLM_SERVER = "vllm-server"
    """SageMaker's vLLM server image, by image generation (``server-sagemaker-cuda-v2``)."""
    HUGGINGFACE_VLLM = "huggingface-vllm"
    """Hugging Face's vLLM Deep Learning Container (vLLM with Transformers)."""
    CUSTOM = "custom"
    """An image the library does not know."""

    @property
    def facts(self) -> FamilyFacts:
        """This family's row of ``FAMILY_FACTS``."""
        return FAMILY_FACTS[self]

    @property
    def is_lmi(self) -> bool:
        """True for the LMI (DJL Serving) families."""
        return self.facts.options is ServingOptionSet.LMI

    @property
    def is_tgi(self) -> bool:
        """True for the TGI families."""
        return self.facts.options is ServingOptionSet.TGI

    @property
    def is_vllm(self) -> bool:
        """True for the vLLM families (serving options as ``SM_VLLM_*`` variables)."""
        return self.facts.options is ServingOptionSet.VLLM


class ServingOptionSet(Enum):
    """The typed serving options a family's server reads (``constructs/serving_options.py``)."""

    LMI = "lmi"
    """``LmiOptions``: ``OPTION_*`` variables (DJL Serving's ``serving.properties``)."""
    TGI = "tgi"
    """``TgiOptions``: the TGI launcher's variables (``MAX_INPUT_TOKENS`` ...)."""
    VLLM = "vllm"
    """``VllmOptions``: vLLM engine arguments as ``SM_VLLM_*`` variables."""


@dataclass(frozen=True)
class FamilyFacts:
    """What the library knows of one container family, in one row: a new family is a new
    ``ContainerFamily`` member, its row here and its line in the generated ``dlc_catalog.json``
    (``scripts/generate_image_catalog.py``); ``ContainerImage.of(family, version)`` serves it
    before it has a named factory."""

    tag_pattern: re.Pattern[str] | None
    """Recognizes the line's tags; group ``release`` is the version the tag carries (None: the
    family has no catalog line)."""
    accelerator: AcceleratorKind | None
    """The accelerator its images are built for (None: CPU, or any)."""
    options: ServingOptionSet | None = None
    """The typed serving options it reads (None: none; its environment is passed as is)."""
    request_format: str | None = None
    """The ``PayloadFormat`` value of the request body its server reads on ``/invocations``
    (LMI's and TGI's schemas, ``benchmarking/payload.py``); None: none the library models."""
    cpu_build_suffix: str | None = None
    """A tag ending in it is the family's CPU build, which needs no accelerator (Triton's
    ``24.09-py3-cpu`` beside the GPU build ``24.09-py3``: "Triton images don't have a trailing
    -gpu tag. Only -cpu images do.", SageMaker Python SDK ``image_uris._get_image_tag``)."""

    def accelerator_of(self, tag: str) -> AcceleratorKind | None:
        """The accelerator the image tagged ``tag`` is built for (None: CPU, or any)."""
        if self.cpu_build_suffix is not None and tag.endswith(self.cpu_build_suffix):
            return None
        return self.accelerator


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.31.0"`` as ``(0, 31, 0)``, for ordering releases."""
    return tuple(int(part) for part in version.split("."))


SHORT_VERSION = re.compile(r"^\d+(\.\d+)*$")
"""A catalog release key: ``0.31.0``, ``25.09``, or a vLLM server image generation (``2``)."""

VLLM_VARIABLE_PREFIX = "SM_VLLM_"
"""SageMaker's vLLM containers turn every ``SM_VLLM_<ARG>`` variable into the engine argument
``--<arg>`` (upper case to lower, ``_`` to ``-``; ``true`` a bare flag). AWS Deep Learning
Containers docs, "vLLM Inference / Configuration"
(https://aws.github.io/deep-learning-containers/vllm/configuration/), and the image's
``sagemaker_entrypoint.sh``."""


def vllm_variable(argument: str) -> str:
    """The variable that sets vLLM engine argument ``argument`` (``"max-model-len"`` ->
    ``SM_VLLM_MAX_MODEL_LEN``) in SageMaker's vLLM containers."""
    return VLLM_VARIABLE_PREFIX + argument.upper().replace("-", "_")


DRAFT_MODEL_VARIABLE = "OPTION_SPECULATIVE_DRAFT_MODEL"
"""The LMI variable naming the draft model of speculative decoding."""
SPECULATIVE_LENGTH_VARIABLE = "OPTION_SPECULATIVE_LENGTH"
"""The LMI variable with the draft tokens proposed per step (default 5)."""
FIRST_DRAFT_RELEASE = "0.27.0"
"""The first LMI release whose documented options include a speculative draft model."""
LEADING_VERSION = re.compile(r"^(\d+\.\d+\.\d+)-")
"""The DJL Serving version an LMI image tag starts with."""


def draft_release(release: str | None, tag: str | None) -> str | None:
    """An LMI image's release: the catalog's, else the DJL version a full tag starts with
    (``0.26.0-deepspeed0.12.6-cu121``); None when neither says."""
    leading = LEADING_VERSION.match(tag or "")
    return release or (leading.group(1) if leading else None)


def draft_serving_problem(family: ContainerFamily, release: str | None) -> str | None:
    """Why a ``family`` image at ``release`` cannot serve speculative decoding (None: it can,
    or its release is unknown and trusted). LMI documents ``option.speculative_draft_model``,
    ``option.speculative_length`` and ``option.draft_model_tp_size`` from release 0.27.0 (LMI
    user guide, "LMI-Dist Engine User Guide", configuration table), read by its vLLM and
    LMI-Dist backends: TGI and the other non-LMI families do not read them, and LMI with
    TensorRT-LLM takes its drafts as compiled engines, not these variables. ``LlmService``
    (``SpeculativeDecoding``), ``predict`` and ``recommend`` apply this rule."""
    if family is not ContainerFamily.LMI:
        return (
            f"speculative decoding is served through LMI's {DRAFT_MODEL_VARIABLE} (vLLM / "
            f"LMI-Dist backends), which a {family.value} image does not read"
        )
    if release is not None and version_tuple(release) < version_tuple(FIRST_DRAFT_RELEASE):
        return (
            f"LMI documents {DRAFT_MODEL_VARIABLE} and {SPECULATIVE_LENGTH_VARIABLE} from "
            f"release {FIRST_DRAFT_RELEASE}"
        )
    return None


@dataclass(frozen=True)
class Fp8KvCacheSetting:
    """How one container family is told to store its KV cache in FP8 (E4M3): the variable, its
    value, and the first release documenting it (None: every catalog release)."""

    variable: str
    value: str
    since: str | None
    source: str
    """Where the container documents it."""

    def environment(self) -> dict[str, str]:
        """The variable and its value."""
        return {self.variable: self.value}


_VLLM_FP8_KV_CACHE = Fp8KvCacheSetting(
    vllm_variable("kv-cache-dtype"),
    "fp8",
    None,
    "vLLM engine argument --kv-cache-dtype fp8 (vLLM docs, 'Engine Arguments' and 'Quantized KV "
    "Cache': fp8 is E4M3), as an SM_VLLM_* variable",
)
FP8_KV_CACHE_SETTINGS: Mapping[ContainerFamily, Fp8KvCacheSetting] = MappingProxyType(
    {
        # LMI passes every vLLM engine argument through as OPTION_<ARG> from 0.32.0 (djl-serving
        # docs, "vLLM Engine User Guide", "Advanced vLLM Configurations": "LMI supports all
        # additional vLLM EngineArguments in Pass-Through mode"), read by its vLLM backends.
        ContainerFamily.LMI: Fp8KvCacheSetting(
            "OPTION_KV_CACHE_DTYPE",
            "fp8",
            "0.32.0",
            "LMI vLLM user guide: vLLM engine argument kv_cache_dtype passed through as "
            "OPTION_KV_CACHE_DTYPE",
        ),
        # TGI's launcher option --kv-cache-dtype (env KV_CACHE_DTYPE; fp8_e4m3fn or fp8_e5m2 on
        # CUDA), first released in 2.4.0 (text-generation-inference docs, "Text-generation-
        # launcher arguments"; "Add basic FP8 KV cache support", #2603).
        ContainerFamily.TGI: Fp8KvCacheSetting(
            "KV_CACHE_DTYPE",
            "fp8_e4m3fn",
            "2.4.0",
            "TGI launcher reference: --kv-cache-dtype / KV_CACHE_DTYPE",
        ),
        ContainerFamily.VLLM: _VLLM_FP8_KV_CACHE,
        ContainerFamily.VLLM_SERVER: _VLLM_FP8_KV_CACHE,
        ContainerFamily.HUGGINGFACE_VLLM: _VLLM_FP8_KV_CACHE,
    }
)
"""The documented FP8 KV-cache setting of each family that has one. LMI with TensorRT-LLM has
none: its user guide documents ``option.quantize=fp8`` (FP8 weights, compiled just in time)
and ``option.use_fp8_context_fmha`` but no KV-cache dtype; TGI on Neuron, NeuronX and the
other families none either."""


def fp8_kv_cache_problem(family: ContainerFamily, release: str | None) -> str | None:
    """Why a ``family`` image at ``release`` cannot be told to store its KV cache in FP8 (None:
    it can, or its release is unknown and trusted): a family without a documented setting
    (``FP8_KV_CACHE_SETTINGS``), or a release before the first that documents it."""
    setting = FP8_KV_CACHE_SETTINGS.get(family)
    if setting is None:
        return f"a {family.value} image documents no KV-cache dtype setting"
    if (
        setting.since is not None
        and release is not None
        and SHORT_VERSION.match(release)
        and version_tuple(release) < version_tuple(setting.since)
    ):
        return (
            f"{family.value} documents {setting.variable} from release {setting.since} "
            f"({setting.source}), not in {release}"
        )
    return None


HUB_TOKEN_VARIABLE = "HF_TOKEN"
"""The variable LMI, vLLM and TGI from 2.1.0 read a Hugging Face token from."""
LEGACY_HUB_TOKEN_VARIABLE = "HUGGING_FACE_HUB_TOKEN"
FIRST_TGI_WITH_HF_TOKEN = "2.1.0"
"""TGI read only ``HUGGING_FACE_HUB_TOKEN`` before text-generation-inference pull request 2066,
"Support HF_TOKEN environment variable" (merged 2024-06-24, first released in 2.1.0)."""


def hub_token_variable(family: ContainerFamily, release: str | None) -> str:
    """The variable a ``family`` image at ``release`` reads a Hugging Face token from: TGI
    before 2.1.0 the legacy ``HUGGING_FACE_HUB_TOKEN``, every other image ``HF_TOKEN``."""
    if _tgi_before(family, release, FIRST_TGI_WITH_HF_TOKEN):
        return LEGACY_HUB_TOKEN_VARIABLE
    return HUB_TOKEN_VARIABLE


def _tgi_before(family: ContainerFamily, release: str | None, first: str) -> bool:
    """Whether ``family`` is TGI at a known ``release`` older than ``first`` (the release that
    introduced a setting); an unknown or unparsed release is trusted to be current."""
    return (
        family is ContainerFamily.TGI
        and release is not None
        and SHORT_VERSION.match(release) is not None
        and version_tuple(release) < version_tuple(first)
    )


FIRST_TGI_WITH_MAX_INPUT_TOKENS = "2.0.0"
"""TGI's launcher read the longest prompt from ``--max-input-length`` (``MAX_INPUT_LENGTH``)
until text-generation-inference pull request 1727, "Improve the defaults for the launcher"
(2024-04-11, first released in 2.0.0), renamed it ``--max-input-tokens``
(``MAX_INPUT_TOKENS``), keeping the old name as a deprecated alias."""
MAX_INPUT_TOKENS_VARIABLE = "MAX_INPUT_TOKENS"
LEGACY_MAX_INPUT_TOKENS_VARIABLE = "MAX_INPUT_LENGTH"


def max_input_tokens_variable(family: ContainerFamily, release: str | None) -> str:
    """The variable a ``family`` image at ``release`` reads the longest prompt from: TGI before
    2.0.0 ``MAX_INPUT_LENGTH`` (its launchers do not know ``MAX_INPUT_TOKENS``), any other
    release ``MAX_INPUT_TOKENS``."""
    if _tgi_before(family, release, FIRST_TGI_WITH_MAX_INPUT_TOKENS):
        return LEGACY_MAX_INPUT_TOKENS_VARIABLE
    return MAX_INPUT_TOKENS_VARIABLE


@dataclass(frozen=True)
class DlcRelease:
    """One release of a container line: its tag and the regions that publish it."""

    version: str
    """The short version, e.g. ``0.31.0`` (LMI) or ``3.3.6`` (TGI)."""
    tag: str
    """The image tag the SageMaker Python SDK resolves for this release."""
    registries: Mapping[str, str]
    """Registry account of every region that publishes the image."""


@dataclass(frozen=True)
class DlcLine:
    """One line of Deep Learning Containers: repository, known releases, tag recognition."""

    family: ContainerFamily
    repository: str
    releases: Mapping[str, DlcRelease]
    """Short version -> release, oldest first."""
    tag_pattern: re.Pattern[str]
    """Recognizes this line's tags; group ``release`` is the version the tag carries."""

    @property
    def tags(self) -> dict[str, str]:
        """Short version -> full tag, oldest first."""
        return {version: release.tag for version, release in self.releases.items()}

    @property
    def newest(self) -> DlcRelease:
        """The newest release the catalog knows."""
        return list(self.releases.values())[-1]

    def release_of(self, tag: str) -> str | None:
        """The version ``tag`` carries, or None when the tag is not this line's."""
        match = self.tag_pattern.search(tag)
        return match.group("release") if match else None

    def release_for(self, tag: str) -> DlcRelease:
        """The release whose registries serve ``tag``: its own when the catalog knows the tag;
        else the listed release the tag carries (another tag of a listed release, such as
        Triton's CPU build ``24.09-py3-cpu`` or PyTorch's long form
        ``2.5.1-gpu-py311-cu124-ubuntu22.04-sagemaker``, is published where that release is:
        the SDK's image map keeps one region list per version, for every processor); else the
        newest (a tag newer than the catalog is taken to be published like it)."""
        for release in self.releases.values():
            if release.tag == tag:
                return release
        carried = self.release_of(tag)
        if carried is not None and carried in self.releases:
            return self.releases[carried]
        return self.newest

    def architecture_of(self, tag: str) -> CpuArchitecture:
        """The CPU architecture ``tag`` is built for: the SDK's image map gives these lines'
        x86_64 images; AWS tags its Arm builds ``arm64`` (Deep Learning Containers'
        ``available_images.md``, e.g. ``...-cpu-py312-ubuntu22.04-sagemaker-arm64``)."""
        return CpuArchitecture.ARM64 if "arm64" in tag.split("-") else CpuArchitecture.X86_64

    def publishes_from(self, region: str, account: str) -> bool:
        """True when some release of this line is published by ``account`` in ``region``."""
        return any(r.registries.get(region) == account for r in self.releases.values())


_GPU, _NEURON = AcceleratorKind.NVIDIA_GPU, AcceleratorKind.AWS_NEURON
_RELEASE = r"(?P<release>\d+\.\d+\.\d+)"

FAMILY_FACTS: Mapping[ContainerFamily, FamilyFacts] = MappingProxyType(
    {
        ContainerFamily.LMI: FamilyFacts(
            re.compile(rf"^{_RELEASE}-lmi"), _GPU, ServingOptionSet.LMI, "lmi"
        ),
        ContainerFamily.LMI_TENSORRT_LLM: FamilyFacts(
            re.compile(rf"^{_RELEASE}-tensorrtllm"), _GPU, ServingOptionSet.LMI, "lmi"
        ),
        ContainerFamily.LMI_NEURONX: FamilyFacts(
            re.compile(rf"^{_RELEASE}-neuronx"), _NEURON, ServingOptionSet.LMI, "lmi"
        ),
        # A TGI tag leads with the PyTorch version; the TGI release follows "-tgi".
        ContainerFamily.TGI: FamilyFacts(
            re.compile(rf"-tgi{_RELEASE}-gpu"), _GPU, ServingOptionSet.TGI, "tgi"
        ),
        # A TGI Neuron tag leads with the PyTorch version (2.1.2-optimum0.0.25-neuronx-...).
        ContainerFamily.TGI_NEURONX: FamilyFacts(
            re.compile(rf"^{_RELEASE}-optimum[\d.]+-neuronx"), _NEURON, ServingOptionSet.TGI, "tgi"
        ),
        ContainerFamily.PYTORCH_GPU: FamilyFacts(re.compile(rf"^{_RELEASE}-gpu-"), _GPU),
        ContainerFamily.PYTORCH_CPU: FamilyFacts(re.compile(rf"^{_RELEASE}-cpu-"), None),
        ContainerFamily.TRITON: FamilyFacts(
            re.compile(r"^(?P<release>\d+\.\d+)-py3"), _GPU, cpu_build_suffix="-cpu"
        ),
        ContainerFamily.VLLM: FamilyFacts(
            re.compile(rf"^{_RELEASE}-gpu-py\d+-.*-sagemaker"), _GPU, ServingOptionSet.VLLM
        ),
        ContainerFamily.VLLM_SERVER: FamilyFacts(
            re.compile(r"^server-sagemaker-cuda-v(?P<release>\d+(\.\d+)*)$"),
            _GPU,
            ServingOptionSet.VLLM,
        ),
        ContainerFamily.HUGGINGFACE_VLLM: FamilyFacts(
            re.compile(rf"^{_RELEASE}-transformers[\d.]+-gpu-"), _GPU, ServingOptionSet.VLLM
        ),
        ContainerFamily.CUSTOM: FamilyFacts(None, None),
    }
)
"""Every family's facts (``FamilyFacts``): the one place a container family is described."""


def _load_catalog() -> tuple[str, dict[ContainerFamily, DlcLine]]:
    document: dict[str, Any] = json.loads(
        resources.files(__package__).joinpath("dlc_catalog.json").read_text()
    )
    source = document["source"]
    lines = {}
    for family, facts in FAMILY_FACTS.items():
        if facts.tag_pattern is None:
            continue
        line = document["lines"][family.value]
        releases = {
            version: DlcRelease(
                version, facts["tag"], MappingProxyType(dict(sorted(facts["registries"].items())))
            )
            for version, facts in sorted(
                line["releases"].items(), key=lambda item: version_tuple(item[0])
            )
        }
        lines[family] = DlcLine(
            family, line["repository"], MappingProxyType(releases), facts.tag_pattern
        )
    return f"{source['package']} {source['version']}", lines


CATALOG_SOURCE, DLC_LINES = _load_catalog()
"""The SageMaker Python SDK release the catalog was generated from, and the lines by family."""

ECR_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.(?P<domain>amazonaws\.com(\.cn)?)"
    r"/(?P<repository>[a-z0-9._/-]+)(:(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


def recognize_dlc_uri(uri: str) -> tuple[ContainerFamily, DlcLine | None, str, str] | None:
    """``(family, line, repository, tag)`` of an ECR image URI, or None when ``uri`` is not an
    ECR URI. ``line`` is the Deep Learning Container line when the URI is in the registry AWS
    publishes that line from in its region and the tag is the line's; otherwise the family is
    CUSTOM."""
    match = ECR_URI.match(uri)
    if match is None:
        return None
    repository = match.group("repository")
    tag = match.group("tag") or match.group("digest") or ""
    region, account = match.group("region"), match.group("account")
    for line in DLC_LINES.values():
        if (
            line.repository == repository
            and line.release_of(tag)
            and line.publishes_from(region, account)
        ):
            return line.family, line, repository, tag
    return ContainerFamily.CUSTOM, None, repository, tag


def image_facts_of_uri(uri: str) -> tuple[str | None, str | None, bool]:
    """``(family, release, in ECR)`` a literal image URI states: the family's value and the
    Deep Learning Container release when ``recognize_dlc_uri`` knows the line, and whether the
    image is in Amazon ECR (what makes it eligible for container caching)."""
    recognized = recognize_dlc_uri(uri)
    if recognized is None:
        return None, None, False
    family, line, _, tag = recognized
    return family.value, line.release_of(tag) if line else None, True


def releases_closest_to(family: ContainerFamily, version: tuple[int, ...]) -> list[str]:
    """The releases ``DLC_LINES`` lists for ``family``, closest to ``version`` first: most
    leading components shared, then the smallest gap at the first that differs, then nearest in
    order (``9.9`` -> ``3.3.6, 3.3.4, ...``; ``3.3.1`` -> ``3.3.4, 3.3.6, 3.2.3, ...``). Empty
    when the family has no line."""
    line = DLC_LINES.get(family)
    if line is None:
        return []
    width = max(len(version), *(len(version_tuple(release)) for release in line.releases))

    def distance(release: str) -> tuple[int, int, tuple[int, ...]]:
        have = version_tuple(release)
        ours, theirs = ((*v, *([0] * (width - len(v)))) for v in (have, version))
        pairs = enumerate(zip(ours, theirs, strict=True))
        shared = next((i for i, (a, b) in pairs if a != b), width)
        gap = abs(ours[shared] - theirs[shared]) if shared < width else 0
        # Below the version the newest is nearest; above it, the oldest.
        return -shared, gap, tuple(-part for part in ours) if ours < theirs else ours

    return sorted(line.releases, key=distance)


def check_listed_release(prop: str, value: str, family: ContainerFamily, version: str) -> None:
    """Raise a ``ValidationError`` naming ``prop`` and ``value`` unless ``version`` is a release
    ``DLC_LINES`` lists for ``family`` (the generated ``dlc_catalog.json``); the fix names the
    releases that exist, closest first."""
    line = DLC_LINES.get(family)
    if line is None:
        raise ValidationError(
            prop,
            value,
            f"{family.value} has no Deep Learning Container line, so no release of it is known",
            f"pass the family alone ({family.value}), or one with releases: "
            f"{', '.join(f.value for f in DLC_LINES)}",
        )
    if version in line.releases:
        return
    if not SHORT_VERSION.match(version):
        problem, order = f"{version!r} is not a release number", "newest first"
        releases = list(reversed(list(line.releases)))
    else:
        problem = (
            f"{family.value} {version} is not a release the container catalog lists "
            f"(generated from {CATALOG_SOURCE})"
        )
        order, releases = "closest first", releases_closest_to(family, version_tuple(version))
    raise ValidationError(
        prop,
        value,
        problem,
        f"pass one of {family.value}'s releases ({order}: {', '.join(releases)}), or "
        f"{family.value} alone when the release is unknown",
    )


def parse_container_release(prop: str, text: str) -> tuple[ContainerFamily, str | None]:
    """``FAMILY[:VERSION]`` (``tgi:3.3.6``, ``LMI@0.33.0``; ``tgi`` alone when the release is
    unknown) as the family and its release, the family in any case: a family the library does
    not know, an empty release (``tgi:``) or one ``DLC_LINES`` does not list is a
    ``ValidationError`` naming ``prop`` and ``text``."""
    family_text, separator, version = str(text).strip().replace("@", ":").partition(":")
    families = [family.value for family in ContainerFamily]
    if family_text.strip().lower() not in families:
        raise ValidationError(
            prop,
            text,
            f"{family_text.strip()!r} is not a container family the library knows",
            f"pass one of {', '.join(families)}",
        )
    family = ContainerFamily(family_text.strip().lower())
    if not separator:
        return family, None
    if not version.strip():
        raise ValidationError(
            prop,
            text,
            "names no release after the separator",
            f"pass a release after it ({family.value}:"
            f"{DLC_LINES[family].newest.version if family in DLC_LINES else 'VERSION'}), or "
            f"{family.value} alone when the release is unknown",
        )
    check_listed_release(prop, text, family, version.strip())
    return family, version.strip()

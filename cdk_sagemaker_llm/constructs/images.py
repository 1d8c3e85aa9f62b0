"""Serving container images: Deep Learning Containers resolved per region, or your own."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from aws_cdk import Annotations, Aws, CfnMapping, Fn, Stack, Token
from aws_cdk import aws_iam as iam
from constructs import Construct

from .nag import acknowledge_wildcard_resources
from .registries import DLC_REGISTRY_ACCOUNTS, ecr_domain
from .validation import ValidationError

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_ecr as ecr


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
    CUSTOM = "custom"
    """An image the library does not know."""

    @property
    def is_lmi(self) -> bool:
        """True for the LMI (DJL Serving) families."""
        return self in (
            ContainerFamily.LMI,
            ContainerFamily.LMI_TENSORRT_LLM,
            ContainerFamily.LMI_NEURONX,
        )

    @property
    def is_tgi(self) -> bool:
        """True for the TGI families."""
        return self in (ContainerFamily.TGI, ContainerFamily.TGI_NEURONX)

    @property
    def needs_neuron(self) -> bool:
        """True for images built for AWS Inferentia / Trainium."""
        return self in (ContainerFamily.LMI_NEURONX, ContainerFamily.TGI_NEURONX)

    @property
    def needs_gpu(self) -> bool:
        """True for images built for NVIDIA GPUs."""
        return self in (
            ContainerFamily.LMI,
            ContainerFamily.LMI_TENSORRT_LLM,
            ContainerFamily.TGI,
            ContainerFamily.PYTORCH_GPU,
        )


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


_SHORT_VERSION = re.compile(r"^\d+(\.\d+)+$")

_LMI_NEURONX_REGIONS = frozenset(
    [
        "ap-northeast-1",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "eu-central-1",
        "eu-west-1",
        "eu-west-3",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-2",
        "ca-west-1",
    ]
)
_TGI_NEURONX_REGIONS = frozenset(
    [
        "ap-northeast-1",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "cn-north-1",
        "cn-northwest-1",
        "eu-central-1",
        "eu-central-2",
        "eu-south-2",
        "eu-west-1",
        "eu-west-3",
        "il-central-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-gov-east-1",
        "us-gov-west-1",
        "us-west-2",
        "ca-west-1",
    ]
)
_ALL_REGIONS = frozenset(DLC_REGISTRY_ACCOUNTS)
_TRITON_REGIONS = frozenset(r for r in _ALL_REGIONS if not r.startswith("us-gov-"))


@dataclass(frozen=True)
class _DlcLine:
    """One line of Deep Learning Containers: repository, known tags, caching, regions."""

    family: ContainerFamily
    repository: str
    tags: dict[str, str]
    """Short version -> full tag, for the releases the library knows."""
    tag_pattern: re.Pattern[str]
    """Recognizes this line's tags; group ``release`` is the version compared for caching."""
    first_cached_release: str
    """The first release SageMaker container caching covers (domain.md)."""
    regions: frozenset[str]

    def release_of(self, tag: str) -> str | None:
        match = self.tag_pattern.search(tag)
        return match.group("release") if match else None

    def is_cached(self, tag: str) -> bool:
        release = self.release_of(tag)
        return release is not None and _version_tuple(release) >= _version_tuple(
            self.first_cached_release
        )


_LINES: dict[ContainerFamily, _DlcLine] = {
    line.family: line
    for line in (
        _DlcLine(
            ContainerFamily.LMI,
            "djl-inference",
            {
                "0.28.0": "0.28.0-lmi10.0.0-cu124",
                "0.29.0": "0.29.0-lmi11.0.0-cu124",
                "0.30.0": "0.30.0-lmi12.0.0-cu124",
                "0.31.0": "0.31.0-lmi13.0.0-cu124",
                "0.32.0": "0.32.0-lmi14.0.0-cu126",
                "0.33.0": "0.33.0-lmi15.0.0-cu128",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-lmi"),
            "0.29.0",
            _ALL_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.LMI_TENSORRT_LLM,
            "djl-inference",
            {
                "0.28.0": "0.28.0-tensorrtllm0.9.0-cu122",
                "0.29.0": "0.29.0-tensorrtllm0.11.0-cu124",
                "0.30.0": "0.30.0-tensorrtllm0.12.0-cu125",
                "0.32.0": "0.32.0-tensorrtllm0.12.0-cu125",
                "0.33.0": "0.33.0-tensorrtllm0.21.0-cu128",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-tensorrtllm"),
            "0.29.0",
            _ALL_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.LMI_NEURONX,
            "djl-inference",
            {
                "0.27.0": "0.27.0-neuronx-sdk2.18.1",
                "0.28.0": "0.28.0-neuronx-sdk2.18.2",
                "0.29.0": "0.29.0-neuronx-sdk2.19.1",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-neuronx"),
            "0.29.0",
            _LMI_NEURONX_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.TGI,
            "huggingface-pytorch-tgi-inference",
            {
                "2.0.2": "2.3.0-tgi2.0.2-gpu-py310-cu121-ubuntu22.04",
                "2.2.0": "2.3.0-tgi2.2.0-gpu-py310-cu121-ubuntu22.04-v2.0",
                "2.3.1": "2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04",
                "2.4.0": "2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.0",
                "3.0.1": "2.4.0-tgi3.0.1-gpu-py311-cu124-ubuntu22.04-v2.1",
                "3.3.4": "2.7.0-tgi3.3.4-gpu-py311-cu124-ubuntu22.04",
                "3.3.6": "2.7.0-tgi3.3.6-gpu-py311-cu124-ubuntu22.04",
            },
            # The TGI release (not the PyTorch version leading the tag) decides caching.
            re.compile(r"-tgi(?P<release>\d+\.\d+\.\d+)-gpu"),
            "2.4.0",
            _ALL_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.TGI_NEURONX,
            "huggingface-pytorch-tgi-inference",
            {
                "0.0.24": "2.1.2-optimum0.0.24-neuronx-py310-ubuntu22.04",
                "0.0.25": "2.1.2-optimum0.0.25-neuronx-py310-ubuntu22.04-v1.0",
                "0.0.27": "2.1.2-optimum0.0.27-neuronx-py310-ubuntu22.04",
            },
            # Caching is published against the PyTorch version leading the tag (2.1.2).
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-optimum[\d.]+-neuronx"),
            "2.1.2",
            _TGI_NEURONX_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.PYTORCH_GPU,
            "pytorch-inference",
            {
                "2.3.0": "2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker",
                "2.4.0": "2.4.0-gpu-py311-cu124-ubuntu22.04-sagemaker",
                "2.5.1": "2.5.1-gpu-py311-cu124-ubuntu22.04-sagemaker",
                "2.6.0": "2.6.0-gpu-py312-cu124-ubuntu22.04-sagemaker",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-gpu-"),
            "2.5.1",
            _ALL_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.PYTORCH_CPU,
            "pytorch-inference",
            {
                "2.3.0": "2.3.0-cpu-py311-ubuntu20.04-sagemaker",
                "2.4.0": "2.4.0-cpu-py311-ubuntu22.04-sagemaker",
                "2.5.1": "2.5.1-cpu-py311-ubuntu22.04-sagemaker",
                "2.6.0": "2.6.0-cpu-py312-ubuntu22.04-sagemaker",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-cpu-"),
            "2.5.1",
            _ALL_REGIONS,
        ),
        _DlcLine(
            ContainerFamily.TRITON,
            "sagemaker-tritonserver",
            {
                "23.12": "23.12-py3",
                "24.01": "24.01-py3",
                "24.03": "24.03-py3",
                "24.05": "24.05-py3",
                "24.09": "24.09-py3",
            },
            re.compile(r"^(?P<release>\d+\.\d+)-py3"),
            "24.09",
            _TRITON_REGIONS,
        ),
    )
}

_ECR_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.(?P<domain>amazonaws\.com(\.cn)?)"
    r"/(?P<repository>[a-z0-9._/-]+)(:(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


class ContainerImage:
    """A serving container image for a SageMaker model or inference component.

    Deep Learning Container factories (``lmi``, ``tgi``, ``pytorch_gpu``, ``triton`` ...) take
    either a short version known to the catalog (``"0.31.0"``) or a full image tag
    (``"0.31.0-lmi13.0.0-cu124"``), so a new container release needs no library upgrade. The
    registry account and domain are resolved for the stack's region at synth time; a
    region-agnostic stack gets a CloudFormation mapping keyed on ``AWS::Region``.
    """

    def __init__(
        self,
        *,
        family: ContainerFamily,
        repository_name: str,
        tag: str,
        line: _DlcLine | None = None,
        uri: str | None = None,
        ecr_repository: ecr.IRepository | None = None,
        tag_known: bool = True,
    ) -> None:
        self.family = family
        """The serving stack inside the image."""
        self.repository_name = repository_name
        """The ECR repository name (e.g. ``djl-inference``)."""
        self.tag = tag
        """The image tag (or digest) as it appears in the URI."""
        self._line = line
        self._uri = uri
        self._ecr_repository = ecr_repository
        self._tag_known = tag_known

    # ----- Deep Learning Container factories -------------------------------------------------

    @staticmethod
    def lmi(version: str) -> ContainerImage:
        """LMI (DJL Serving) for GPUs with the vLLM or LMI-Dist backend, e.g. ``"0.31.0"``."""
        return ContainerImage._dlc(ContainerFamily.LMI, version)

    @staticmethod
    def lmi_tensorrt_llm(version: str) -> ContainerImage:
        """LMI with the TensorRT-LLM backend, e.g. ``"0.29.0"``."""
        return ContainerImage._dlc(ContainerFamily.LMI_TENSORRT_LLM, version)

    @staticmethod
    def lmi_neuronx(version: str) -> ContainerImage:
        """LMI with Transformers-NeuronX for Inferentia2 / Trainium, e.g. ``"0.29.0"``."""
        return ContainerImage._dlc(ContainerFamily.LMI_NEURONX, version)

    @staticmethod
    def tgi(version: str) -> ContainerImage:
        """Hugging Face TGI for GPUs, by TGI release, e.g. ``"2.4.0"``."""
        return ContainerImage._dlc(ContainerFamily.TGI, version)

    @staticmethod
    def tgi_neuronx(version: str) -> ContainerImage:
        """Hugging Face TGI for Inferentia2 / Trainium, by Optimum Neuron release (``"0.0.25"``)."""
        return ContainerImage._dlc(ContainerFamily.TGI_NEURONX, version)

    @staticmethod
    def pytorch_gpu(version: str) -> ContainerImage:
        """PyTorch inference (TorchServe) for GPUs, e.g. ``"2.5.1"``."""
        return ContainerImage._dlc(ContainerFamily.PYTORCH_GPU, version)

    @staticmethod
    def pytorch_cpu(version: str) -> ContainerImage:
        """PyTorch inference (TorchServe) for CPUs, e.g. ``"2.5.1"``."""
        return ContainerImage._dlc(ContainerFamily.PYTORCH_CPU, version)

    @staticmethod
    def triton(version: str) -> ContainerImage:
        """NVIDIA Triton Inference Server, e.g. ``"24.09"``."""
        return ContainerImage._dlc(ContainerFamily.TRITON, version)

    @staticmethod
    def known_versions(family: ContainerFamily) -> list[str]:
        """The short versions the catalog knows for a container family, oldest first."""
        line = _LINES.get(family)
        if line is None:
            return []
        return sorted(line.tags, key=_version_tuple)

    @staticmethod
    def _dlc(family: ContainerFamily, version: str) -> ContainerImage:
        line = _LINES[family]
        prop = f"ContainerImage.{family.name.lower()}(version)"
        if not isinstance(version, str) or not version:
            raise ValidationError(
                prop,
                version,
                "the version must be a non-empty string",
                f"pass one of {', '.join(ContainerImage.known_versions(family))}",
            )
        if _SHORT_VERSION.match(version):
            if version not in line.tags:
                known = ", ".join(ContainerImage.known_versions(family))
                raise ValidationError(
                    prop,
                    version,
                    f"the catalog knows no {family.value} release {version}",
                    f"use one of {known}, or pass the full image tag "
                    f"(e.g. {line.tags[max(line.tags, key=_version_tuple)]!r})",
                )
            return ContainerImage(
                family=family, repository_name=line.repository, tag=line.tags[version], line=line
            )
        tag_known = version in line.tags.values()
        return ContainerImage(
            family=family,
            repository_name=line.repository,
            tag=version,
            line=line,
            tag_known=tag_known,
        )

    # ----- Other images -----------------------------------------------------------------------

    @staticmethod
    def from_uri(uri: str) -> ContainerImage:
        """Any image by URI. A Deep Learning Container URI is recognized (family, caching);
        an ECR URI gets a pull grant on its repository; other registries get none."""
        if Token.is_unresolved(uri):
            return ContainerImage(
                family=ContainerFamily.CUSTOM, repository_name="", tag="", uri=uri
            )
        match = _ECR_URI.match(uri)
        if match is None:
            if not isinstance(uri, str) or not uri or " " in uri:
                raise ValidationError(
                    "ContainerImage.from_uri(uri)",
                    uri,
                    "not an image URI",
                    "pass <registry>/<repository>:<tag>, e.g. "
                    "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-llm:1.0",
                )
            return ContainerImage(
                family=ContainerFamily.CUSTOM, repository_name="", tag="", uri=uri
            )
        repository, tag = (
            match.group("repository"),
            match.group("tag") or match.group("digest") or "",
        )
        is_dlc_account = DLC_REGISTRY_ACCOUNTS.get(match.group("region")) == match.group("account")
        family = ContainerFamily.CUSTOM
        line = None
        if is_dlc_account:
            for candidate in _LINES.values():
                if candidate.repository == repository and candidate.release_of(tag):
                    family, line = candidate.family, candidate
                    break
        return ContainerImage(
            family=family, repository_name=repository, tag=tag, line=line, uri=uri
        )

    @staticmethod
    def from_ecr_repository(repository: ecr.IRepository, tag: str = "latest") -> ContainerImage:
        """Your own image in an ECR repository; the model's role is granted pull on it."""
        return ContainerImage(
            family=ContainerFamily.CUSTOM,
            repository_name=repository.repository_name,
            tag=tag,
            uri=repository.repository_uri_for_digest(tag)
            if tag.startswith("sha256:")
            else repository.repository_uri_for_tag(tag),
            ecr_repository=repository,
        )

    # ----- Facts -----------------------------------------------------------------------------

    @property
    def is_deep_learning_container(self) -> bool:
        """True for an AWS Deep Learning Container the library recognizes."""
        return self._line is not None

    @property
    def container_caching_eligible(self) -> bool:
        """True when SageMaker container caching covers this image (domain.md's first cached
        releases). Caching only takes effect on inference-component endpoints."""
        return self._line is not None and self._line.is_cached(self.tag)

    @property
    def release(self) -> str | None:
        """The release compared for caching (e.g. ``0.31.0`` for LMI, the TGI release for TGI)."""
        return self._line.release_of(self.tag) if self._line else None

    def available_in(self, region: str) -> bool:
        """False only when the image is a DLC that AWS does not publish in ``region``."""
        return self._line is None or region in self._line.regions

    # ----- Binding ---------------------------------------------------------------------------

    def bind(self, scope: Construct, role: iam.IRole | None) -> str:
        """Resolve the image URI for ``scope``'s stack and grant ``role`` pull on the image.

        Raises ValidationError when a Deep Learning Container is not published in the stack's
        region. Warns (synth annotation) when a full DLC tag is not in the catalog.
        """
        if self._line is not None and not self._tag_known:
            Annotations.of(scope).add_warning_v2(
                "cdk-sagemaker-llm:unknown-image-tag",
                f"Image tag {self.repository_name}:{self.tag} is not in the library's catalog; "
                "it is used as given. Check that the tag exists in the region.",
            )
        if self._uri is not None:
            self._grant_pull_from_uri(scope, role)
            return self._uri
        assert self._line is not None
        stack = Stack.of(scope)
        region = stack.region
        if Token.is_unresolved(region):
            account: str = self._registry_mapping(stack).find_in_map(Aws.REGION, "account")
            uri = Fn.join(
                "",
                [
                    account,
                    ".dkr.ecr.",
                    Aws.REGION,
                    ".",
                    Aws.URL_SUFFIX,
                    f"/{self.repository_name}:{self.tag}",
                ],
            )
            arn = stack.format_arn(
                service="ecr",
                account=account,
                resource="repository",
                resource_name=self.repository_name,
            )
        else:
            if region not in self._line.regions:
                published = ", ".join(sorted(self._line.regions))
                raise ValidationError(
                    "image",
                    f"{self.repository_name}:{self.tag} in {region}",
                    f"AWS does not publish this {self._line.family.value} image in {region}",
                    f"deploy to one of {published}, or copy the image to your own ECR "
                    "repository and use ContainerImage.from_ecr_repository",
                )
            account = DLC_REGISTRY_ACCOUNTS[region]
            uri = (
                f"{account}.dkr.ecr.{region}.{ecr_domain(region)}/{self.repository_name}:{self.tag}"
            )
            arn = stack.format_arn(
                service="ecr",
                region=region,
                account=account,
                resource="repository",
                resource_name=self.repository_name,
            )
        if role is not None:
            _grant_pull(role, arn)
        return uri

    def _registry_mapping(self, stack: Stack) -> CfnMapping:
        assert self._line is not None
        mapping_id = "DlcRegistry" + "".join(
            part.capitalize() for part in self._line.family.value.split("-")
        )
        existing = stack.node.try_find_child(mapping_id)
        if isinstance(existing, CfnMapping):
            return existing
        return CfnMapping(
            stack,
            mapping_id,
            mapping={
                region: {"account": DLC_REGISTRY_ACCOUNTS[region]}
                for region in sorted(self._line.regions)
            },
        )

    def _grant_pull_from_uri(self, scope: Construct, role: iam.IRole | None) -> None:
        if role is None:
            return
        if self._ecr_repository is not None:
            self._ecr_repository.grant_pull(role)
            return
        match = (
            _ECR_URI.match(self._uri or "")
            if self._uri and not Token.is_unresolved(self._uri)
            else None
        )
        if match is None:
            return
        _grant_pull(role, _repository_arn(scope, match))

    def __repr__(self) -> str:
        return f"ContainerImage({self.family.value}, {self.repository_name}:{self.tag})"


def _repository_arn(scope: Construct, match: re.Match[str]) -> str:
    return Stack.of(scope).format_arn(
        service="ecr",
        region=match.group("region"),
        account=match.group("account"),
        resource="repository",
        resource_name=match.group("repository"),
    )


def _grant_pull(role: iam.IRole, repository_arn: str) -> None:
    """Pull rights on exactly one repository (the token call has no resource to scope)."""
    iam.Grant.add_to_principal(
        grantee=role,
        actions=[
            "ecr:BatchCheckLayerAvailability",
            "ecr:GetDownloadUrlForLayer",
            "ecr:BatchGetImage",
        ],
        resource_arns=[repository_arn],
    )
    iam.Grant.add_to_principal(
        grantee=role, actions=["ecr:GetAuthorizationToken"], resource_arns=["*"]
    )
    acknowledge_wildcard_resources(
        role,
        ["*"],
        "ecr:GetAuthorizationToken supports no resource-level scoping; image pulls are scoped "
        "to exactly one repository.",
    )

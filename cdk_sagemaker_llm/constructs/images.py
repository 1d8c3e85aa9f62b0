"""Serving container images: Deep Learning Containers resolved per region, or your own."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aws_cdk import Annotations, Aws, CfnMapping, Fn, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..catalog.containers import (
    DLC_LINES,
    ECR_URI,
    SHORT_VERSION,
    ContainerFamily,
    DlcLine,
    recognize_dlc_uri,
    version_tuple,
)
from ..catalog.instance_types import AcceleratorKind, CpuArchitecture
from ..catalog.registries import check_region, ecr_domain
from ..planning.engine_profiles import EngineProfile, profile_for_image
from ..prop_types import typed_props
from .execution_role import ExecutionRole
from .nag import acknowledge_wildcard_resources
from .synth_cache import format_arn, region_of, shared, stack_of
from .validation import ValidationError, is_unresolved

__all__ = ["ContainerFamily", "ContainerImage"]

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_ecr as ecr


_DOCKER_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A Docker image tag (Docker's reference grammar): up to 128 characters."""


@typed_props
class ContainerImage:
    """A serving container image for a SageMaker model or inference component.

    Deep Learning Container factories (``lmi``, ``tgi``, ``pytorch_gpu``, ``triton`` ...) take
    either a short version known to the catalog (``"0.31.0"``) or a full image tag
    (``"0.31.0-lmi13.0.0-cu124"``), so a new container release needs no library upgrade; a tag
    that another line's pattern recognizes (a CUDA tag given to ``lmi_neuronx``) is refused
    naming that line's factory. The
    catalog is generated from the SageMaker Python SDK's image map (``CATALOG_SOURCE``). The
    registry account and domain are resolved for the stack's region at synth time; a
    region-agnostic stack gets a CloudFormation mapping keyed on ``AWS::Region``.
    """

    def __init__(
        self,
        *,
        family: ContainerFamily,
        repository_name: str,
        tag: str,
        line: DlcLine | None = None,
        uri: str | None = None,
        ecr_repository: ecr.IRepository | None = None,
        tag_known: bool = True,
        cpu_architecture: CpuArchitecture | None = None,
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
        self._cpu_architecture = cpu_architecture

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
        """Hugging Face TGI for GPUs, by TGI release, e.g. ``"3.3.6"``. TGI is in maintenance
        mode upstream (Hugging Face points new deployments to vLLM or SGLang); prefer ``lmi``."""
        return ContainerImage._dlc(ContainerFamily.TGI, version)

    @staticmethod
    def tgi_neuronx(version: str) -> ContainerImage:
        """Hugging Face TGI for Inferentia2 / Trainium, by the SDK's Optimum Neuron release key
        (``"0.0.28"``, ``"0.3.0"``); TGI is in maintenance mode upstream."""
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
        """NVIDIA Triton Inference Server for GPUs, e.g. ``"25.09"``; its CPU build by the full
        tag, e.g. ``"25.09-py3-cpu"``."""
        return ContainerImage._dlc(ContainerFamily.TRITON, version)

    @staticmethod
    def vllm(version: str) -> ContainerImage:
        """SageMaker's vLLM Deep Learning Container by vLLM release, e.g. ``"0.30.0"``: vLLM's
        OpenAI-compatible server, configured with ``VllmOptions`` (``SM_VLLM_*`` variables)."""
        return ContainerImage._dlc(ContainerFamily.VLLM, version)

    @staticmethod
    def vllm_server(version: str) -> ContainerImage:
        """SageMaker's vLLM server image by image generation, e.g. ``"2.6"``
        (``vllm:server-sagemaker-cuda-v2.6``); configured like ``vllm``."""
        return ContainerImage._dlc(ContainerFamily.VLLM_SERVER, version)

    @staticmethod
    def huggingface_vllm(version: str) -> ContainerImage:
        """Hugging Face's vLLM Deep Learning Container by vLLM release, e.g. ``"0.29.0"``;
        configured like ``vllm``."""
        return ContainerImage._dlc(ContainerFamily.HUGGINGFACE_VLLM, version)

    @staticmethod
    def known_versions(family: ContainerFamily | str) -> list[str]:
        """The short versions the catalog knows for a container family, oldest first.

        ``family`` is a ``ContainerFamily`` or its value (``"lmi"``, ``"tgi-neuronx"`` ...); an
        unknown family is a ValidationError, and a family without a catalog line (``CUSTOM``)
        knows no versions.
        """
        if not isinstance(family, ContainerFamily):
            known = {f.value: f for f in ContainerFamily} | {f.name: f for f in ContainerFamily}
            if not isinstance(family, str) or (family not in known and family.upper() not in known):
                raise ValidationError(
                    "family",
                    family,
                    "not a container family",
                    "pass a ContainerFamily such as ContainerFamily.LMI, or one of "
                    + ", ".join(repr(f.value) for f in ContainerFamily),
                )
            family = known.get(family) or known[family.upper()]
        line = DLC_LINES.get(family)
        if line is None:
            return []
        return sorted(line.releases, key=version_tuple)

    @staticmethod
    def of(family: ContainerFamily, version: str) -> ContainerImage:
        """A release of any Deep Learning Container line the catalog knows, by family: the
        named factories' escape hatch (a line added to the catalog serves before it has a
        factory). ``ContainerImage.of(ContainerFamily.LMI, "0.31.0")`` is
        ``ContainerImage.lmi("0.31.0")``; ``version`` is a short version or a full tag."""
        if family not in DLC_LINES:
            raise ValidationError(
                "ContainerImage.of(family)",
                family.value,
                "the catalog has no Deep Learning Container line of this family",
                "pass one of "
                + ", ".join(f"ContainerFamily.{f.name}" for f in DLC_LINES)
                + ", or use ContainerImage.from_uri(...) for your own image",
            )
        return ContainerImage._dlc(family, version, "ContainerImage.of(family, version)")

    @staticmethod
    def _dlc(family: ContainerFamily, version: str, prop: str | None = None) -> ContainerImage:
        line = DLC_LINES[family]
        prop = prop or f"ContainerImage.{family.name.lower()}(version)"
        if not isinstance(version, str) or not version:
            raise ValidationError(
                prop,
                version,
                "the version must be a non-empty string",
                f"pass one of {', '.join(ContainerImage.known_versions(family))}",
            )
        if SHORT_VERSION.match(version):
            if version not in line.tags:
                known = ", ".join(ContainerImage.known_versions(family))
                raise ValidationError(
                    prop,
                    version,
                    f"the catalog knows no {family.value} release {version}",
                    f"use one of {known}, or pass the full image tag (e.g. {line.newest.tag!r})",
                )
            return ContainerImage(
                family=family, repository_name=line.repository, tag=line.tags[version], line=line
            )
        ContainerImage._check_full_tag(family, version, prop)
        tag_known = version in line.tags.values()
        return ContainerImage(
            family=family,
            repository_name=line.repository,
            tag=version,
            line=line,
            tag_known=tag_known,
        )

    @staticmethod
    def _check_full_tag(family: ContainerFamily, tag: str, prop: str) -> None:
        """A full tag must be one Docker accepts (``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``), and
        not a tag of another line (a NeuronX tag given to ``lmi``: one the catalog lists, or a
        newer one that line's tag pattern recognizes and this line's does not) or a short
        version with a stray ``v`` or space, each named with what was meant."""
        meant = tag.strip().removeprefix("v")
        if meant != tag and meant in DLC_LINES[family].tags:
            raise ValidationError(
                prop, tag, "not a release or image tag", f"pass the short version {meant!r}"
            )
        own = DLC_LINES[family].tags.values()
        for other, line in DLC_LINES.items():
            if other is not family and tag in line.tags.values() and tag not in own:
                raise ValidationError(
                    prop,
                    tag,
                    f"is a tag of the {other.value} image, not of {family.value}",
                    f"use ContainerImage.{other.name.lower()}({tag!r})",
                )
        # A tag newer than the catalog is still recognized by its line's tag pattern: a CUDA
        # tag (0.39.0-lmi30.0.0-cu130) given to lmi_neuronx, or a NeuronX one to lmi, would be
        # taken for the factory's accelerator and placed on instances it cannot run on.
        line = DLC_LINES[family]
        if not line.release_of(tag):
            for other, other_line in DLC_LINES.items():
                if (
                    other is not family
                    and other_line.repository == line.repository
                    and other_line.release_of(tag)
                ):
                    raise ValidationError(
                        prop,
                        tag,
                        f"is a tag of the {other.value} image (its tags look like "
                        f"{other_line.newest.tag!r}), not of {family.value} (tags like "
                        f"{line.newest.tag!r})",
                        f"use ContainerImage.{other.name.lower()}({tag!r})",
                    )
        if not _DOCKER_TAG.fullmatch(tag):
            raise ValidationError(
                prop,
                tag,
                "not an image tag: a tag is 1-128 letters, digits, '_', '.' or '-', not "
                "starting with '.' or '-'",
                f"pass a short version such as {DLC_LINES[family].newest.version!r} or a full tag "
                f"such as {DLC_LINES[family].newest.tag!r}",
            )

    # ----- Other images -----------------------------------------------------------------------

    @staticmethod
    def from_uri(uri: str, *, cpu_architecture: CpuArchitecture | None = None) -> ContainerImage:
        """Any image by URI. A Deep Learning Container URI is recognized (family, caching,
        CPU architecture); an ECR URI gets a pull grant on its repository. An image of another
        registry can be described (its caching eligibility) but not served: binding it to a
        model is refused, as SageMaker pulls only from ECR.

        :param cpu_architecture: the CPUs your image is built for, checked against the
            instance type's; default: a Deep Learning Container's from its tag, else unknown.
        """
        if is_unresolved(uri):
            return ContainerImage(
                family=ContainerFamily.CUSTOM,
                repository_name="",
                tag="",
                uri=uri,
                cpu_architecture=cpu_architecture,
            )
        recognized = recognize_dlc_uri(uri) if isinstance(uri, str) else None
        if recognized is None:
            if not isinstance(uri, str) or not uri or " " in uri:
                raise ValidationError(
                    "ContainerImage.from_uri(uri)",
                    uri,
                    "not an image URI",
                    "pass <registry>/<repository>:<tag>, e.g. "
                    "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-llm:1.0",
                )
            return ContainerImage(
                family=ContainerFamily.CUSTOM,
                repository_name="",
                tag="",
                uri=uri,
                cpu_architecture=cpu_architecture,
            )
        family, line, repository, tag = recognized
        return ContainerImage(
            family=family,
            repository_name=repository,
            tag=tag,
            line=line,
            uri=uri,
            cpu_architecture=cpu_architecture,
        )

    @staticmethod
    def from_ecr_repository(
        repository: ecr.IRepository,
        tag: str = "latest",
        *,
        cpu_architecture: CpuArchitecture | None = None,
    ) -> ContainerImage:
        """Your own image in an ECR repository; the model's role is granted pull on it.

        :param cpu_architecture: the CPUs the image is built for, checked against the
            instance type's; default unknown (not checked).
        """
        return ContainerImage(
            cpu_architecture=cpu_architecture,
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
    def cpu_architecture(self) -> CpuArchitecture | None:
        """The CPUs the image is built for: as stated, else a Deep Learning Container's from
        its catalog line; None when unknown."""
        if self._cpu_architecture is not None:
            return self._cpu_architecture
        if self._line is not None and not is_unresolved(self.tag):
            return self._line.architecture_of(self.tag)
        return None

    @property
    def is_deep_learning_container(self) -> bool:
        """True for an AWS Deep Learning Container the library recognizes."""
        return self._line is not None

    @property
    def hosted_in_ecr(self) -> bool:
        """True when the image is pulled from Amazon ECR: a Deep Learning Container, an ECR
        URI, or your ECR repository."""
        if self._line is not None or self._ecr_repository is not None:
            return True
        return (
            self._uri is not None
            and not is_unresolved(self._uri)
            and bool(ECR_URI.match(self._uri))
        )

    @property
    def container_caching_eligible(self) -> bool:
        """True when SageMaker container caching can hold this image: any image in Amazon ECR
        (catalog/container_caching.py states the rule and its source). It takes effect on
        accelerator instance types in commercial regions."""
        return self.hosted_in_ecr

    @property
    def accelerator(self) -> AcceleratorKind | None:
        """The accelerator the image is built for: NVIDIA GPUs, AWS Neuron devices, or None
        (a CPU build such as ``pytorch_cpu`` or Triton's ``-cpu`` tag, or an image the
        library does not know)."""
        return self.family.facts.accelerator_of(self.tag)

    @property
    def release(self) -> str | None:
        """The release the tag carries (e.g. ``0.31.0`` for LMI, the TGI release for TGI)."""
        return self._line.release_of(self.tag) if self._line else None

    @property
    def engine_profile(self) -> EngineProfile:
        """The serving engine's performance profile for this image's family and release
        (``planning.engine_profiles.profile_for_image``): what ``predict``/``recommend`` use
        for its overheads, efficiencies, batch limit and quantized-kernel speed."""
        return profile_for_image(self.family, self.release)

    def available_in(self, region: str) -> bool:
        """False only when the image is a DLC that AWS does not publish in ``region``."""
        return self._line is None or region in self._line.release_for(self.tag).registries

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
            self._check_in_ecr()
            self._check_same_region(scope)
            self._grant_pull_from_uri(scope, role)
            return self._uri
        assert self._line is not None
        stack = stack_of(scope)
        region = region_of(stack)
        if is_unresolved(region):
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
            arn = format_arn(
                stack,
                service="ecr",
                account=account,
                resource="repository",
                resource_name=self.repository_name,
            )
        else:
            # A typo (us-esat-1) is named as one, not as a region this image is not published in.
            check_region("region of the stack", region)
            registries = self._line.release_for(self.tag).registries
            if region not in registries:
                published = ", ".join(sorted(registries))
                raise ValidationError(
                    "image",
                    f"{self.repository_name}:{self.tag} in {region}",
                    f"AWS does not publish this {self._line.family.value} image in {region}",
                    f"deploy to one of {published}, or copy the image to your own ECR "
                    "repository and use ContainerImage.from_ecr_repository",
                )
            account = registries[region]
            uri = (
                f"{account}.dkr.ecr.{region}.{ecr_domain(region)}/{self.repository_name}:{self.tag}"
            )
            arn = _dlc_repository_arn(stack, region, account, self.repository_name)
        if role is not None:
            _grant_pull(role, arn)
        return uri

    def _registry_mapping(self, stack: Stack) -> CfnMapping:
        """One mapping per family and release: releases are published in different regions."""
        assert self._line is not None
        release = self._line.release_for(self.tag)
        mapping_id = (
            "DlcRegistry"
            + "".join(part.capitalize() for part in self._line.family.value.split("-"))
            + "V"
            + release.version.replace(".", "")
        )
        existing = stack.node.try_find_child(mapping_id)
        if isinstance(existing, CfnMapping):
            return existing
        return CfnMapping(
            stack,
            mapping_id,
            mapping={
                region: {"account": account} for region, account in release.registries.items()
            },
        )

    def _check_same_region(self, scope: Construct) -> None:
        """An ECR image must be in the model's region (SageMaker API reference,
        ``ContainerDefinition.Image``: "The Amazon ECR image must be in the same region as the
        model or endpoint you are creating")."""
        uri, region = self._uri or "", region_of(stack_of(scope))
        if is_unresolved(region):
            return
        match = ECR_URI.match(uri) if not is_unresolved(uri) else None
        image_region = match.group("region") if match is not None else None
        if image_region is None and self._ecr_repository is not None:
            # A repository's URI carries the AWS::URLSuffix token; an imported repository
            # (from_repository_arn, from_repository_attributes in another region) states its
            # region in ``env.region``.
            repository_region = self._ecr_repository.env.region
            if not is_unresolved(repository_region):
                image_region = repository_region
            uri = f"{self.repository_name}:{self.tag}" if is_unresolved(uri) else uri
        if image_region is None or image_region == region:
            return
        raise ValidationError(
            "image",
            uri,
            f"the ECR image is in {image_region}, but SageMaker pulls a model's image "
            f"only from its own region ({region})",
            f"replicate the image to {region} (ECR replication) and pass that URI, or deploy "
            f"the stack to {image_region}",
        )

    def _check_in_ecr(self) -> None:
        """SageMaker pulls a container it is given without ``ImageConfig`` from Amazon ECR
        (``ImageConfig.RepositoryAccessMode`` ``Platform``: "The model image is hosted in
        Amazon ECR", CreateModel API reference); a private registry needs ``Vpc`` mode, which
        no construct of this library renders. A URI of another registry would fail to pull."""
        uri = self._uri
        if uri is None or is_unresolved(uri) or self.hosted_in_ecr:
            return
        raise ValidationError(
            "image",
            uri,
            "is not in Amazon ECR, and SageMaker pulls a model's image only from ECR (a private "
            "registry needs ImageConfig RepositoryAccessMode Vpc, which this library does not "
            "render)",
            "push the image to an ECR repository in the stack's region and pass its URI (or "
            "ContainerImage.from_ecr_repository(repository, tag))",
        )

    def _grant_pull_from_uri(self, scope: Construct, role: iam.IRole | None) -> None:
        if role is None:
            return
        if self._ecr_repository is not None:
            self._ecr_repository.grant_pull(role)
            return
        match = (
            ECR_URI.match(self._uri or "") if self._uri and not is_unresolved(self._uri) else None
        )
        if match is None:
            return
        _grant_pull(role, _repository_arn(scope, match))

    def __repr__(self) -> str:
        return f"ContainerImage({self.family.value}, {self.repository_name}:{self.tag})"


def _dlc_repository_arn(stack: Stack, region: str, account: str, repository: str) -> str:
    return format_arn(
        stack,
        service="ecr",
        region=region,
        account=account,
        resource="repository",
        resource_name=repository,
    )


def pull_statements_known_now(
    image: ContainerImage, scope: Construct
) -> tuple[iam.PolicyStatement, ...]:
    """The statements ``image.bind`` will grant an ``ExecutionRole`` in ``scope``'s stack,
    when they are known without creating anything (a Deep Learning Container in a stack with
    a literal region where it is published); else none. A role created with them gets no
    second call when ``bind`` grants them (``ExecutionRole.add_statements`` skips what it
    has): one jsii round trip less per model."""
    line = image._line
    if line is None or image._uri is not None:
        return ()
    stack = stack_of(scope)
    region = region_of(stack)
    registries = line.release_for(image.tag).registries
    if is_unresolved(region) or region not in registries:
        return ()
    arn = _dlc_repository_arn(stack, region, registries[region], image.repository_name)
    return shared(stack, ("ecr pull statements", arn), lambda: _pull_statements(arn))


def _pull_statements(repository_arn: str) -> tuple[iam.PolicyStatement, iam.PolicyStatement]:
    return (
        iam.PolicyStatement(
            actions=[
                "ecr:BatchCheckLayerAvailability",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchGetImage",
            ],
            resources=[repository_arn],
        ),
        iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
    )


def _repository_arn(scope: Construct, match: re.Match[str]) -> str:
    return format_arn(
        stack_of(scope),
        service="ecr",
        region=match.group("region"),
        account=match.group("account"),
        resource="repository",
        resource_name=match.group("repository"),
    )


def _grant_pull(role: iam.IRole, repository_arn: str) -> None:
    """Pull rights on exactly one repository (the token call has no resource to scope)."""
    if isinstance(role, ExecutionRole):  # the same two statements for every role of a stack
        role.add_statements(
            *shared(
                stack_of(role),
                ("ecr pull statements", repository_arn),
                lambda: _pull_statements(repository_arn),
            )
        )
    else:
        for statement in _pull_statements(repository_arn):
            role.add_to_principal_policy(statement)
    acknowledge_wildcard_resources(
        role,
        ["*"],
        "ecr:GetAuthorizationToken supports no resource-level scoping; image pulls are scoped "
        "to exactly one repository.",
    )

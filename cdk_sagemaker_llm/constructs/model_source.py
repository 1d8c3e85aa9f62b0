"""Where a model's weights come from: a Hugging Face model id, an S3 prefix or an S3 tarball,
or a SageMaker JumpStart model (which also names its serving image and environment)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker

from ..catalog.containers import HUB_TOKEN_VARIABLE
from ..catalog.hub_access import hub_gate, hub_url_id, is_url, ungated_example
from ..catalog.instance_types import InstanceType
from ..catalog.jumpstart import JumpStartModel, jumpstart_model
from ..catalog.model_specs import ModelSpec
from ..catalog.registries import partition
from ..prop_types import typed_props
from .images import ContainerImage
from .nag import acknowledge_wildcard_resources
from .validation import ValidationError, is_unresolved

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_s3 as s3
    from aws_cdk import aws_secretsmanager as secretsmanager

MODEL_DIRECTORY = "/opt/ml/model"
"""Where SageMaker places S3 model data inside the container."""


class ModelSourceKind(Enum):
    """How the weights reach the container."""

    HUGGING_FACE = "hugging-face"
    S3_PREFIX = "s3-prefix"
    S3_TARBALL = "s3-tarball"
    JUMPSTART = "jumpstart"


@dataclass(frozen=True)
class BoundModelSource:
    """What a model source contributes to a container definition."""

    environment: dict[str, str] = field(default_factory=dict)
    model_data_url: str | None = None
    model_data_source: sagemaker.CfnModel.ModelDataSourceProperty | None = None


def _refuse_hub_url(prop: str, model_id: str) -> None:
    """A Hub page's URL is not a model id: the containers read ``HF_MODEL_ID`` as
    ``<organization>/<model>`` (Hugging Face's own naming) and fail to download a URL. The fix
    suggests the id the URL names, else an example the catalog knows is ungated."""
    if not is_url(model_id):
        return
    named = hub_url_id(model_id)
    fix = (
        f'pass the id the URL names: "{named}"'
        if named is not None
        else f'pass "<organization>/<model>" as the model\'s Hub page shows it, e.g. '
        f'"{ungated_example()}" (an ungated repository)'
    )
    raise ValidationError(
        prop,
        model_id,
        "a URL, not a Hugging Face model id (the container downloads <organization>/<model>)",
        "use ModelSource.from_s3(bucket, prefix) for weights in S3"
        if model_id.lower().startswith("s3://")
        else fix,
    )


def check_hub_id(prop: str, model_id: str) -> None:
    """Raise ValidationError unless ``model_id`` reads as a Hub id (``<organization>/<model>``,
    not a URL); a deploy-time token passes."""
    if not isinstance(model_id, str) or (
        not is_unresolved(model_id) and (not model_id or " " in model_id)
    ):
        raise ValidationError(
            prop,
            model_id,
            "not a Hugging Face model id",
            f'pass "<organization>/<model>", e.g. "{ungated_example()}"',
        )
    if not is_unresolved(model_id):
        _refuse_hub_url(prop, model_id)


def refuse_gated_without_token(prop: str, model_id: str, fix: str) -> None:
    """Raise ValidationError when the catalog says ``model_id``'s Hub repository is gated
    (``catalog/hub_access.py``): its download without a token fails at deploy. An id the
    catalog does not know is allowed."""
    gate = hub_gate(model_id) if not is_unresolved(model_id) else None
    if gate is not None and gate.gated:
        raise ValidationError(
            prop,
            model_id,
            "a gated Hugging Face repository: the container's download without a token is "
            f"refused (401) and the model fails at deploy ({gate.source})",
            fix,
        )


TOKEN_FIX = (
    "accept the model's conditions on the Hub, store a read token of that account in Secrets "
    "Manager and pass token_secret=secretsmanager.Secret.from_secret_name_v2(scope, "
    "'HuggingFaceToken', '<secret name>'); or copy the weights to S3 once and serve them with "
    "ModelSource.from_s3"
)
"""How to serve a gated Hub model (``ModelSource.from_hugging_face``'s token)."""


@typed_props
class ModelSource:
    """The model weights a serving container loads.

    - ``from_hugging_face("meta-llama/Meta-Llama-3-8B-Instruct", token_secret=...)``: the
      container downloads from the Hugging Face Hub at start (needs internet access);
    - ``from_s3(bucket, "llama-3-8b/")``: uncompressed weights under an S3 prefix, which
      SageMaker copies to ``/opt/ml/model`` (fastest to load, no archive to unpack);
    - ``from_s3_tarball(bucket, "llama-3-8b/model.tar.gz")``: a ``.tar.gz`` archive.
    """

    def __init__(
        self,
        kind: ModelSourceKind,
        *,
        model_id: str | None = None,
        token_secret: secretsmanager.ISecret | None = None,
        bucket: s3.IBucket | None = None,
        key: str | None = None,
        jumpstart: JumpStartModel | None = None,
        accept_eula: bool = False,
        instance_type: str | None = None,
    ) -> None:
        self.kind = kind
        """How the weights reach the container."""
        self.model_id = model_id
        """The Hugging Face model id, for Hugging Face sources."""
        self.token_secret = token_secret
        """The Secrets Manager secret holding a Hugging Face token, if any (readable in the
        model's environment through DescribeModel: see :meth:`from_hugging_face`)."""
        self.bucket = bucket
        """The S3 bucket, for S3 sources."""
        self.key = key
        """The S3 prefix (ending in ``/``) or object key, for S3 sources."""
        self.jumpstart = jumpstart
        """The JumpStart model, for JumpStart sources."""
        self.accept_eula = accept_eula
        """Whether you accepted the JumpStart model's licence (``ModelAccessConfig``)."""
        self.instance_type = instance_type
        """The instance type whose JumpStart image and environment are used (JumpStart)."""

    def serving_problem(
        self, instance_type: InstanceType, tensor_parallel_degree: int | None
    ) -> tuple[str, str] | None:
        """Why weights from this source cannot be served on ``instance_type`` at
        ``tensor_parallel_degree`` (None: the model's default), as (reason, fix); None when
        they can. Plain weights serve anywhere; artifacts built for one layout (an
        optimization job's compiled engines or pre-sharded weights) say otherwise."""
        return None

    @staticmethod
    def from_hugging_face(
        model_id: str, *, token_secret: secretsmanager.ISecret | None = None
    ) -> ModelSource:
        """A Hugging Face Hub model id; ``token_secret`` (a Secrets Manager secret whose value
        is the token) for gated models; default no token. A repository the catalog knows as
        gated (``catalog/hub_access.py``: Meta Llama, Gemma, Mistral 7B, Falcon-180B) without
        ``token_secret`` is a ValidationError; an id the catalog does not know is allowed, and a
        missing token then shows only at deploy.

        The token reaches the container through a CloudFormation dynamic reference, never as a
        literal in the template, but SageMaker stores it as the model's ``HF_TOKEN``
        environment variable: anyone allowed ``sagemaker:DescribeModel`` (or
        ``DescribeInferenceComponent`` for a component's container) can read it in plain text,
        and it stays there until the model is deleted. To keep the token out of SageMaker, copy
        the weights to S3 once (with the token, outside the deployment) and serve them with
        :meth:`from_s3`; with the weights in S3 the model also runs with
        ``network_isolation=True`` (no internet access at all), which a Hub download cannot.
        If the Hub is a must, use a read-only, fine-grained token for the one repository and
        rotate it."""
        check_hub_id("ModelSource.from_hugging_face(model_id)", model_id)
        if token_secret is None:
            refuse_gated_without_token(
                "ModelSource.from_hugging_face(model_id)", model_id, TOKEN_FIX
            )
        return ModelSource(
            ModelSourceKind.HUGGING_FACE, model_id=model_id, token_secret=token_secret
        )

    @staticmethod
    def from_s3(bucket: s3.IBucket, prefix: str) -> ModelSource:
        """Uncompressed weights under ``prefix`` (which ends in ``/``) in ``bucket``."""
        if not is_unresolved(prefix) and (not prefix.endswith("/") or prefix.startswith("/")):
            raise ValidationError(
                "ModelSource.from_s3(prefix)",
                prefix,
                "an S3 prefix of uncompressed weights must end with '/' and not start with '/'",
                f"pass {prefix.strip('/') + '/'!r}",
            )
        return ModelSource(ModelSourceKind.S3_PREFIX, bucket=bucket, key=prefix)

    @staticmethod
    def from_s3_tarball(bucket: s3.IBucket, key: str) -> ModelSource:
        """A ``.tar.gz`` archive of the weights at ``key`` in ``bucket``."""
        if not is_unresolved(key) and not key.endswith(".tar.gz"):
            raise ValidationError(
                "ModelSource.from_s3_tarball(key)",
                key,
                "SageMaker unpacks only .tar.gz model archives",
                "pass the key of a .tar.gz archive, or use ModelSource.from_s3 for a prefix "
                "of uncompressed weights",
            )
        return ModelSource(ModelSourceKind.S3_TARBALL, bucket=bucket, key=key)

    @staticmethod
    def from_jumpstart(
        model_id: str,
        *,
        version: str | None = None,
        accept_eula: bool = False,
        instance_type: str | InstanceType | None = None,
    ) -> ModelSource:
        """A SageMaker JumpStart text-generation model by id (``catalog/jumpstart.py``): its
        serving image in the stack's region, JumpStart's container environment and the weights
        in JumpStart's regional bucket (``ModelDataSource``); the model's image comes from it,
        so ``Model`` takes no ``image``.

        :param version: the model version; default (and only accepted) the catalog's.
        :param accept_eula: True to accept the model's licence (``ModelAccessConfig.AcceptEula``);
            a gated model without it is a ValidationError naming the licence. Default False.
        :param instance_type: the type (or its name) whose JumpStart image and environment are
            used; default JumpStart's default type for the model.
        """
        model = jumpstart_model(model_id, version)
        if model.eula is not None and accept_eula is not True:
            raise ValidationError(
                "ModelSource.from_jumpstart(accept_eula)",
                accept_eula,
                f"{model_id} is gated by its licence ({model.eula} in JumpStart's bucket), "
                "which must be accepted to deploy it",
                "review the licence and pass accept_eula=True",
            )
        given = instance_type.name if isinstance(instance_type, InstanceType) else instance_type
        chosen = given or model.default_instance_type
        if chosen not in model.instance_types:
            model.image_uri(model.regions[0], chosen)  # raises: JumpStart does not host it
        return ModelSource(
            ModelSourceKind.JUMPSTART,
            jumpstart=model,
            accept_eula=bool(accept_eula) and model.eula is not None,
            instance_type=chosen,
        )

    def image_for(self, region: str) -> ContainerImage:
        """A JumpStart source's serving image in ``region`` (a literal region: JumpStart
        publishes per region); raises ValidationError where the model is not offered."""
        if self.jumpstart is None or self.instance_type is None:
            raise ValidationError(
                "ModelSource.image_for",
                self.kind.value,
                "only a JumpStart source brings a serving image",
                "pass image= (a ContainerImage) to the Model",
            )
        if not isinstance(region, str) or is_unresolved(region):
            raise ValidationError(
                "region",
                region,
                "a JumpStart model's image and weights are resolved per region at synth time",
                "give the stack an explicit region: Stack(..., env=Environment(region=...))",
            )
        return ContainerImage.from_uri(self.jumpstart.image_uri(region, self.instance_type))

    @property
    def spec(self) -> ModelSpec | None:
        """The architecture the source names: a well-known Hugging Face id's or a JumpStart
        id's preset; None otherwise."""
        if self.jumpstart is not None:
            return self.jumpstart.spec
        return ModelSpec.from_hugging_face_id(self.model_id) if self.model_id else None

    @property
    def needs_internet(self) -> bool:
        """True when the container downloads the weights itself (Hugging Face Hub)."""
        return self.kind is ModelSourceKind.HUGGING_FACE

    @property
    def s3_uri(self) -> str | None:
        """``s3://bucket/key`` for S3 sources, None otherwise."""
        if self.bucket is None:
            return None
        return f"s3://{self.bucket.bucket_name}/{self.key}"

    def bind(
        self,
        role: iam.IRole | None,
        region: str | None = None,
        token_variable: str = HUB_TOKEN_VARIABLE,
    ) -> BoundModelSource:
        """Render the container settings and grant ``role`` read access to exactly this source
        (a JumpStart source needs the stack's ``region``; a Hub token goes in the image's
        ``token_variable``, ``catalog.containers.hub_token_variable``)."""
        if self.kind is ModelSourceKind.JUMPSTART:
            return self._bind_jumpstart(role, region)
        if self.kind is ModelSourceKind.HUGGING_FACE:
            assert self.model_id is not None
            environment = {"HF_MODEL_ID": self.model_id}
            if self.token_secret is not None:
                environment[token_variable] = self.token_secret.secret_value.unsafe_unwrap()
            return BoundModelSource(environment=environment)
        assert self.bucket is not None and self.key is not None
        if role is not None:
            self._grant_read(role)
        # SageMaker unpacks either source into /opt/ml/model, and the containers must be told
        # so: TGI's sagemaker-entrypoint.sh exits at start when HF_MODEL_ID is unset ("HF_MODEL_ID
        # must be set"), and LMI reads the same variable as option.model_id.
        environment = {"HF_MODEL_ID": MODEL_DIRECTORY}
        if self.kind is ModelSourceKind.S3_TARBALL:
            return BoundModelSource(environment=environment, model_data_url=self.s3_uri)
        return BoundModelSource(
            environment=environment,
            model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                    s3_uri=self.s3_uri or "",
                    s3_data_type="S3Prefix",
                    compression_type="None",
                )
            ),
        )

    def _bind_jumpstart(self, role: iam.IRole | None, region: str | None) -> BoundModelSource:
        """JumpStart's environment for the instance type, and its weights in the regional
        bucket: an uncompressed prefix as ``ModelDataSource`` (with ``ModelAccessConfig``
        where the licence applies), a ``.tar.gz`` as ``ModelDataUrl``."""
        model, instance_type = self.jumpstart, self.instance_type
        assert model is not None and instance_type is not None and region is not None
        self.image_for(region)  # refuses a region where the model is not offered
        bucket, key = model.bucket(region), model.artifact_key
        if role is not None:
            _grant_jumpstart_read(role, f"arn:{partition(region)}:s3:::{bucket}", key)
        environment = model.environment_for(instance_type)
        uri = f"s3://{bucket}/{key}"
        if key.endswith(".tar.gz"):
            return BoundModelSource(environment=environment, model_data_url=uri)
        access = (
            sagemaker.CfnModel.ModelAccessConfigProperty(accept_eula=True)
            if self.accept_eula
            else None
        )
        return BoundModelSource(
            environment=environment,
            model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                    s3_uri=uri,
                    s3_data_type="S3Prefix",
                    compression_type="None",
                    model_access_config=access,
                )
            ),
        )

    def _grant_read(self, role: iam.IRole) -> None:
        assert self.bucket is not None and self.key is not None
        object_pattern = self.key + "*" if self.kind is ModelSourceKind.S3_PREFIX else self.key
        iam.Grant.add_to_principal(
            grantee=role,
            actions=["s3:GetObject"],
            resource_arns=[self.bucket.arn_for_objects(object_pattern)],
        )
        if self.kind is ModelSourceKind.S3_PREFIX:
            acknowledge_wildcard_resources(
                role,
                [self.bucket.arn_for_objects(object_pattern)],
                "Reads the objects under exactly the model's S3 prefix: uncompressed weights "
                "are many files, named by the model's authors.",
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"],
                    resources=[self.bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [object_pattern]}},
                )
            )
        if self.bucket.encryption_key is not None:
            self.bucket.encryption_key.grant_decrypt(role)


def _grant_jumpstart_read(role: iam.IRole, bucket_arn: str, key: str) -> None:
    """Read exactly the model's weights in JumpStart's bucket (objects under its prefix, or its
    archive), and list only that prefix."""
    objects = f"{bucket_arn}/{key}*" if key.endswith("/") else f"{bucket_arn}/{key}"
    role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[objects]))
    if key.endswith("/"):
        acknowledge_wildcard_resources(
            role,
            [objects],
            "Reads the objects under exactly the JumpStart model's prefix in JumpStart's "
            "regional bucket: uncompressed weights are many files.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [key + "*"]}},
            )
        )

"""A SageMaker model: a serving container, the weights it loads and how it serves them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from aws_cdk import Annotations, Arn, ArnComponents, ArnFormat, CfnTag, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..catalog.containers import (
    HUB_TOKEN_VARIABLE,
    LEGACY_HUB_TOKEN_VARIABLE,
    hub_token_variable,
)
from ..catalog.instance_types import AcceleratorKind, InstanceType, closest_instance_types
from ..catalog.jumpstart import (
    MODEL_ID_TAG,
    MODEL_VERSION_TAG,
    SERVING_ALIASES,
    merge_serving_environment,
)
from ..catalog.model_specs import ModelSpec
from ..prop_types import typed_props
from .availability import require_hosting
from .execution_role import check_grants_land, create_execution_role, depend_on_role_policy
from .fit_check import check_fit
from .fixed_names import claim_fixed_name
from .images import ContainerFamily, ContainerImage, pull_statements_known_now
from .model_source import BoundModelSource, ModelSource, ModelSourceKind
from .nag import batched_acknowledgments
from .networking import ContainerNetwork, place_in_vpc
from .plan_metadata import add_plan_metadata
from .serving_options import ServingOptions
from .speculative_decoding import SpeculativeDecoding
from .synth_cache import node_path, region_of, remember, stack_of
from .validation import (
    ValidationError,
    arn_resource_name,
    check_sagemaker_name,
    is_unresolved,
)

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_ec2 as ec2


def merge_environment(
    rendered: Mapping[str, str], passthrough: Mapping[str, str] | None, prop: str
) -> dict[str, str]:
    """Add pass-through variables to rendered ones; a name set twice, or a Hugging Face token
    written as a literal, is a ValidationError."""
    merged = dict(rendered)
    for name, value in (passthrough or {}).items():
        _refuse_literal_token(name, value, prop)
        if name in merged:
            raise ValidationError(
                f"{prop}[{name!r}]",
                value,
                f"{name} is already set by the model source or the typed serving options "
                f"(to {merged[name]!r})",
                f"drop {name} from {prop} and use the typed option, or drop the typed option",
            )
        merged[name] = value
    return dict(sorted(merged.items()))


HUB_TOKEN_VARIABLES = (HUB_TOKEN_VARIABLE, LEGACY_HUB_TOKEN_VARIABLE)
"""The variables the serving containers read a Hugging Face token from
(``catalog.containers.hub_token_variable``)."""


def _refuse_literal_token(name: str, value: str, prop: str) -> None:
    """A Hugging Face token given as a literal in a pass-through environment lands in the
    template in plain text (and in every synthesized copy of it): refused, with the secret
    route as the fix. A deploy-time token or a CloudFormation dynamic reference is fine. The
    value is not shown."""
    if name.upper() not in HUB_TOKEN_VARIABLES or is_unresolved(value):
        return
    if str(value).startswith("{{resolve:"):
        return
    raise ValidationError(
        f"{prop}[{name!r}]",
        "<a literal token, not shown>",
        "a token written here is stored in plain text in the synthesized template",
        "keep it in Secrets Manager and pass ModelSource.from_hugging_face(model_id, "
        "token_secret=secret), which renders a dynamic reference instead",
    )


MAX_ENVIRONMENT_LENGTH = 1024
"""The longest key or value of a container's environment: SageMaker API reference,
``ContainerDefinition.Environment`` ("The maximum length of each key and value in the
Environment map is 1024 bytes") and ``InferenceComponentContainerSpecification.Environment``
("Each key and value ... can have length of up to 1024")."""


MAX_ENVIRONMENT_ENTRIES = 100
"""The most entries of a container's environment: botocore's SageMaker model,
``EnvironmentMap`` (``max: 100``), the shape of ``ContainerDefinition.Environment``."""
ENVIRONMENT_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
"""What an environment name must match in full: botocore's SageMaker model,
``EnvironmentKey`` (``pattern: [a-zA-Z_][a-zA-Z0-9_]*``)."""


def check_environment_lengths(environment: Mapping[str, str], prop: str) -> None:
    """Raise ValidationError for a rendered environment SageMaker refuses: more than
    ``MAX_ENVIRONMENT_ENTRIES`` entries (the library's own variables counted), a name that is
    not a shell-style identifier (``ENVIRONMENT_NAME``: no ``-``, no leading digit, not
    empty), or a key or value longer than ``MAX_ENVIRONMENT_LENGTH`` bytes (a deploy-time
    token, such as a resolved secret, is the service's to check)."""
    if len(environment) > MAX_ENVIRONMENT_ENTRIES:
        raise ValidationError(
            prop,
            f"{len(environment)} entries (with the variables the source and serving options "
            "render)",
            f"SageMaker takes at most {MAX_ENVIRONMENT_ENTRIES} environment entries "
            "(botocore's SageMaker model, EnvironmentMap)",
            "drop the variables the container does not need, or ship the settings as a file "
            "in the model artifact (serving.properties, a config file)",
        )
    for name in environment:
        if is_unresolved(name) or (isinstance(name, str) and ENVIRONMENT_NAME.fullmatch(name)):
            continue
        raise ValidationError(
            f"{prop}[{str(name)[:40]!r}]",
            name,
            "SageMaker takes environment names of letters, digits and underscores that do not "
            "start with a digit (botocore's SageMaker model, EnvironmentKey: "
            "[a-zA-Z_][a-zA-Z0-9_]*)",
            "rename the variable, e.g. "
            f"{_identifier(str(name))!r}, and read that name in the container",
        )
    for name, value in environment.items():
        for what, text in (("name", name), ("value", value)):
            if not isinstance(text, str) or is_unresolved(text):
                continue
            size = len(text.encode())
            if size > MAX_ENVIRONMENT_LENGTH:
                raise ValidationError(
                    f"{prop}[{name[:40]!r}]",
                    f"a {what} of {size} bytes",
                    f"SageMaker takes environment names and values of at most "
                    f"{MAX_ENVIRONMENT_LENGTH} bytes (SageMaker API reference, Environment)",
                    "shorten it, or ship the long setting as a file in the model artifact "
                    "(serving.properties, a config file) and point the variable at it",
                )


def _identifier(name: str) -> str:
    """``name`` made a valid environment name: other characters as ``_``, ``_`` before a
    leading digit (``MY-VAR`` -> ``MY_VAR``, ``1VAR`` -> ``_1VAR``, empty -> ``_``)."""
    cleaned = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


@typed_props
class ModelBase(Construct):
    """What endpoints and components consume of a model, created here or imported."""

    model_name: str
    """The SageMaker model name."""
    model_arn: str
    """The SageMaker model ARN."""
    role: iam.IRole | None = None
    """The execution role, when known (grants for KMS and data capture go to it)."""
    image: ContainerImage | None = None
    """The serving container, when known."""
    serving: ServingOptions | None = None
    """The typed serving options, when known."""
    environment: Mapping[str, str] | None = None
    """The container environment as rendered into the template, when known."""
    speculative_decoding: SpeculativeDecoding | None = None
    """The draft model, when known."""
    spec: ModelSpec | None = None
    """The architecture, when known."""
    source: ModelSource | None = None
    """Where the weights come from, when known."""

    def check_placement(
        self, instance_type: InstanceType, accelerators: int | None, prop: str
    ) -> None:
        """An imported model's container is unknown: note that the checks are skipped."""
        Annotations.of(self).add_info(
            f"Placement and sizing checks skipped for {prop} ({instance_type.name}): the model "
            f"{self.node.path} is imported, so its container and architecture are unknown."
        )


class _ImportedModel(ModelBase):
    def __init__(
        self, scope: Construct, id: str, *, name: str, arn: str, role: iam.IRole | None
    ) -> None:
        super().__init__(scope, id)
        self.model_name = name
        self.model_arn = arn
        self.role = role
        if role is not None:
            check_grants_land(self, role, "role")


def import_model_by_name(
    scope: Construct, id: str, model_name: str, *, role: iam.IRole | None = None
) -> ModelBase:
    """An existing SageMaker model by name (in the stack's account and region).

    :param role: the model's execution role, if grants (an endpoint's KMS key, data capture)
        should reach it; default none (those grants are then yours to add).
    """
    check_sagemaker_name("model_name", model_name)
    arn = Stack.of(scope).format_arn(
        service="sagemaker", resource="model", resource_name=arn_resource_name(model_name)
    )
    return _ImportedModel(scope, id, name=model_name, arn=arn, role=role)


def import_model_by_arn(
    scope: Construct, id: str, model_arn: str, *, role: iam.IRole | None = None
) -> ModelBase:
    """An existing SageMaker model by ARN; its name is the ARN's resource name (SageMaker
    writes ARNs in lower case and matches names case-insensitively).

    :param role: the model's execution role, if grants should reach it; default none.
    """
    parts = Arn.split(model_arn, ArnFormat.SLASH_RESOURCE_NAME)
    if parts.resource_name is None or (
        not is_unresolved(parts.resource) and parts.resource != "model"
    ):
        raise ValidationError(
            "model_arn",
            model_arn,
            "not a SageMaker model ARN",
            "pass arn:<partition>:sagemaker:<region>:<account>:model/<name>",
        )
    check_sagemaker_name("model_arn (name)", parts.resource_name)
    _check_model_arn_is_here(scope, model_arn, parts)
    return _ImportedModel(scope, id, name=parts.resource_name, arn=model_arn, role=role)


def _check_model_arn_is_here(scope: Construct, model_arn: str, parts: ArnComponents) -> None:
    """Only the ARN's name is kept (``ProductionVariant.ModelName`` takes a name, which
    SageMaker looks up in the endpoint's own account and region: SageMaker API reference,
    ``CreateEndpointConfig``), so a model of another service, region or account would be
    looked up as a different model: refused where resolved."""
    stack = Stack.of(scope)
    for what, found, here in (
        ("service", parts.service, "sagemaker"),
        ("region", parts.region, stack.region),
        ("account", parts.account, stack.account),
    ):
        if found is None or is_unresolved(found) or is_unresolved(here) or found == here:
            continue
        raise ValidationError(
            "model_arn",
            model_arn,
            f"its {what} is {found}, but an endpoint serves only SageMaker models of its own "
            f"account and region ({what} {here}): only the name is kept, and SageMaker would "
            "look it up here",
            "create the model in this stack's account and region (or import it by name with "
            "Model.from_model_name), or deploy the endpoint where the model is",
        )


def _check_serving_inputs(
    image: ContainerImage,
    source: ModelSource | None,
    serving: ServingOptions | None,
    environment: Mapping[str, str] | None,
    speculative_decoding: SpeculativeDecoding | None,
    network_isolation: bool,
) -> None:
    """The serving options and the draft model against the image; a Hugging Face source
    (downloaded at start) with network isolation is a ValidationError."""
    if serving is not None:
        serving.validate(image)
    if speculative_decoding is not None:
        speculative_decoding.validate(image, environment, network_isolation=network_isolation)
    if network_isolation and source is not None and source.needs_internet:
        raise ValidationError(
            "network_isolation",
            True,
            "a Hugging Face model source downloads weights at start, which network isolation "
            "forbids",
            "load the weights from S3 (ModelSource.from_s3) or disable network_isolation",
        )


@typed_props
class Model(ModelBase):
    """A SageMaker model (``AWS::SageMaker::Model``) built from an image and a model source.

    Typed serving options (``LmiOptions``, ``TgiOptions``) are validated against the image and
    rendered as the container's environment; ``environment`` passes anything else through. The
    execution role is created least-privilege (its logs, exactly this image's repository,
    exactly this model's S3 location) unless ``role`` is given, in which case the same grants
    are added to it.
    """

    from_model_name = staticmethod(import_model_by_name)
    from_model_arn = staticmethod(import_model_by_arn)

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        image: ContainerImage | None = None,
        source: ModelSource | None = None,
        serving: ServingOptions | None = None,
        environment: Mapping[str, str] | None = None,
        role: iam.IRole | None = None,
        model_name: str | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        network_isolation: bool = False,
        spec: ModelSpec | None = None,
        speculative_decoding: SpeculativeDecoding | None = None,
    ) -> None:
        """
        :param image: the serving container; default the JumpStart source's image (required
            for any other source).
        :param source: the weights; default none (the image or ``environment`` provides them).
            ``ModelSource.from_jumpstart`` also gives the image and JumpStart's environment.
        :param serving: typed serving options for the image's family; default none.
        :param environment: extra container variables; default none. A name also set by
            ``source`` or ``serving`` is an error.
        :param role: execution role; default a new least-privilege role.
        :param model_name: the SageMaker model name; default generated by CloudFormation.
        :param vpc: run the container in this VPC; default none (SageMaker-managed network).
        :param vpc_subnets: subnets within ``vpc``; default the private subnets.
        :param security_groups: security groups; default one new group with no inbound rules.
        :param network_isolation: forbid the container any network access; default False.
            A Hugging Face source needs the network, so the two together are an error.
        :param spec: the model's architecture, for synth-time fit checks; default inferred
            from a well-known Hugging Face id or the preset a JumpStart id names, else none
            (the checks are skipped).
        :param speculative_decoding: a draft model for speculative decoding (LMI images);
            default none. SageMaker's own draft is rejected with custom inference code and
            on inference components.
        """
        super().__init__(scope, id)
        remember(self, scope, id)
        with batched_acknowledgments():  # one cdk-nag call per role
            require_hosting(self, "region of the stack")
            check_sagemaker_name("model_name", model_name)
            claim_fixed_name(self, "model", "model_name", model_name)
            image = image_of(self, image, source)
            _check_serving_inputs(
                image, source, serving, environment, speculative_decoding, network_isolation
            )
            self.image: ContainerImage = image
            """The serving container."""
            self.source = source
            """Where the weights come from, if given."""
            self.serving = serving
            """The typed serving options, if given."""
            self.speculative_decoding = speculative_decoding
            """The draft model for speculative decoding, if given."""
            self.network_isolation = network_isolation
            """Whether the container is denied network access."""
            self.spec = spec or (source.spec if source is not None else None)
            """The model's architecture, when given or inferred; sizing checks need it."""
            self.role: iam.IRole = role or self._new_execution_role()
            """The role SageMaker assumes to run this model."""
            if role is not None:
                check_grants_land(self, role, "role")
            bound_source = (
                source.bind(
                    self.role,
                    region_of(stack_of(self)),
                    token_variable=hub_token_variable(image.family, image.release),
                )
                if source
                else None
            )
            self.environment: dict[str, str] = self._container_environment(
                bound_source, environment
            )
            """The container environment, as rendered into the template."""
            self.image_uri = image.bind(self, self.role)
            """The resolved image URI (a token for region-agnostic stacks)."""
            network = place_in_vpc(
                self,
                vpc=vpc,
                vpc_subnets=vpc_subnets,
                security_groups=security_groups,
                role=self.role,
                downloads_from_hub=source is not None
                and source.kind is ModelSourceKind.HUGGING_FACE,
            )
            self.security_groups: list[ec2.ISecurityGroup] = (
                network.security_groups if network else []
            )
            """The security groups of the model's network interfaces (empty without a VPC)."""
            self.resource = self._model_resource(model_name, bound_source, network)
            """The ``AWS::SageMaker::Model`` resource."""
            depend_on_role_policy(self.resource, self.role)
            add_plan_metadata(
                self.resource,
                image=image,
                spec=self.spec,
                image_uri=self.image_uri,
                environment=self.environment,
            )
            self.model_name: str = self.resource.attr_model_name
            """The SageMaker model name."""

    def _new_execution_role(self) -> iam.IRole:
        """A least-privilege execution role; a Hugging Face (or no) source without a draft
        model is granted the image's pull before anything else (in the same order as before)."""
        source = self.source
        pull_first = (
            source is None or source.kind is ModelSourceKind.HUGGING_FACE
        ) and self.speculative_decoding is None
        return create_execution_role(
            self,
            "ExecutionRole",
            description=f"SageMaker execution role of {node_path(self)}",
            statements=pull_statements_known_now(self.image, self) if pull_first else (),
        )

    def _container_environment(
        self, bound_source: BoundModelSource | None, passthrough: Mapping[str, str] | None
    ) -> dict[str, str]:
        """The source's, the serving options' and the draft model's variables, with the
        pass-through ``environment``; each key and value within SageMaker's length limit, and
        the draft model's token checked against the result."""
        rendered = self._serving_environment(bound_source, self.serving)
        if self.speculative_decoding is not None:
            rendered.update(self.speculative_decoding.bind(self.role))
        merged = merge_environment(rendered, passthrough, "environment")
        check_environment_lengths(merged, "environment")
        if self.speculative_decoding is not None:
            self.speculative_decoding.check_token(merged)
        return merged

    def _model_resource(
        self,
        model_name: str | None,
        bound_source: BoundModelSource | None,
        network: ContainerNetwork | None,
    ) -> sagemaker.CfnModel:
        """The ``AWS::SageMaker::Model``: one container in single-model mode."""
        vpc_config = (
            sagemaker.CfnModel.VpcConfigProperty(
                security_group_ids=network.security_group_ids, subnets=network.subnet_ids
            )
            if network
            else None
        )
        return sagemaker.CfnModel(
            self,
            "Resource",
            execution_role_arn=self.role.role_arn,
            model_name=model_name,
            tags=jumpstart_tags(self.source),
            enable_network_isolation=self.network_isolation or None,
            vpc_config=vpc_config,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=self.image_uri,
                mode="SingleModel",
                environment=self.environment or None,
                model_data_url=bound_source.model_data_url if bound_source else None,
                model_data_source=bound_source.model_data_source if bound_source else None,
            ),
        )

    def _serving_environment(
        self, bound_source: BoundModelSource | None, serving: ServingOptions | None
    ) -> dict[str, str]:
        """The source's variables with the serving options': the options win for the keys they
        set; over a JumpStart environment, ``merge_serving_environment``'s rule, each JumpStart
        variable replaced noted in a synth info message."""
        rendered = dict(bound_source.environment) if bound_source else {}
        decided = serving.environment(self.image) if serving is not None else {}
        if self.source is None or self.source.kind is not ModelSourceKind.JUMPSTART:
            return {**rendered, **decided}
        merged, replaced = merge_serving_environment(rendered, decided)
        for name, value in replaced.items():
            Annotations.of(self).add_info(
                f"JumpStart's {name}={value!r} is replaced by the serving options' "
                f"{SERVING_ALIASES.get(name, name)}={merged.get(SERVING_ALIASES.get(name, name))!r}"
            )
        return merged

    @cached_property
    def model_arn(self) -> str:  # type: ignore[override]
        """The SageMaker model ARN (read from the template on first use: a jsii round trip
        that most stacks never need)."""
        return self.resource.ref

    def _tgi_neuron_cores(self) -> int | None:
        """The NeuronCores a TGI-NeuronX container shards over (``HF_NUM_CORES``, optimum-neuron's
        ``tgi_env.py``), when the environment states them as a literal number."""
        if self.image is None or self.image.family is not ContainerFamily.TGI_NEURONX:
            return None
        cores = self.environment.get("HF_NUM_CORES")
        if isinstance(cores, str) and not is_unresolved(cores) and cores.isdigit():
            return int(cores)
        return None

    def check_placement(
        self, instance_type: InstanceType, accelerators: int | None, prop: str
    ) -> None:
        """Raise ValidationError when this model cannot run with ``accelerators`` devices of
        ``instance_type`` (wrong accelerator kind, or a tensor-parallel degree above them); a
        type the catalog does not know is a warning (``note_unknown_instance_type``)."""
        note_unknown_instance_type(self, instance_type, prop)
        if self.image is not None:
            check_image_on_instance(self.image, instance_type, prop)
        jumpstart = self.source.jumpstart if self.source is not None else None
        if jumpstart is not None and self.source is not None and self.source.instance_type:
            problem = jumpstart.placement_problem(self.source.instance_type, instance_type.name)
            if problem is not None:
                raise ValidationError(prop, instance_type.name, *problem)
        degree = self.serving.accelerators_per_copy if self.serving else None
        neuron_cores = self._tgi_neuron_cores()
        if degree is None and neuron_cores is not None and accelerators is not None:
            check_degree_on_accelerators(
                neuron_cores, accelerators, instance_type, prop, "environment['HF_NUM_CORES']"
            )
        if self.source is not None:
            problem = self.source.serving_problem(instance_type, degree)
            if problem is not None:
                raise ValidationError(prop, instance_type.name, *problem)
        if degree is not None and accelerators is not None:
            check_degree_on_accelerators(
                degree, accelerators, instance_type, prop, "serving.tensor_parallel_degree"
            )
        check_fit(
            self,
            spec=self.spec,
            environment=self.environment,
            instance_type=instance_type,
            accelerators=accelerators,
            prop=prop,
            engine=self.image.engine_profile.name if self.image is not None else None,
        )


def check_degree_on_accelerators(
    degree: int, accelerators: int, instance_type: InstanceType, where: str, prop: str
) -> None:
    """Raise ValidationError when a copy sharded ``degree`` ways does not fit on
    ``accelerators`` devices of ``instance_type``. On a GPU a rank is a GPU; on Inferentia2 and
    Trainium the Neuron libraries' degree counts NeuronCores, two per chip
    (``Accelerator.neuron_cores``): djl-serving's TransformersNeuronX tuning guide runs
    ``tensor_parallel_degree=2`` on the one chip of an inf2.xlarge."""
    ranks = accelerators * instance_type.tensor_parallel_ranks_per_device
    if degree <= ranks:
        return
    if instance_type.is_neuron:
        accelerator = instance_type.accelerator
        assert accelerator is not None
        raise ValidationError(
            prop,
            degree,
            f"shards each copy over {degree} NeuronCores but {where} provides {accelerators} "
            f"{accelerator.name} chips of {accelerator.tensor_parallel_ranks} NeuronCores "
            f"({ranks} NeuronCores, {instance_type.name})",
            f"lower the tensor-parallel degree to at most {ranks} (it counts NeuronCores), or "
            "give the model more chips (a larger instance type or more accelerators per copy)",
        )
    raise ValidationError(
        prop,
        degree,
        f"shards each copy over {degree} accelerators but {where} provides {accelerators} "
        f"({instance_type.name})",
        f"lower the tensor-parallel degree to at most {accelerators}, or give the model "
        "more accelerators (a larger instance type or more accelerators per copy)",
    )


def jumpstart_tags(source: ModelSource | None) -> list[CfnTag] | None:
    """The tags SageMaker Studio gives a model deployed from JumpStart (id and version)."""
    if source is None or source.jumpstart is None:
        return None
    return [
        CfnTag(key=MODEL_ID_TAG, value=source.jumpstart.model_id),
        CfnTag(key=MODEL_VERSION_TAG, value=source.jumpstart.version),
    ]


def image_of(
    scope: Construct, image: ContainerImage | None, source: ModelSource | None
) -> ContainerImage:
    """The model's image: the one given, else a JumpStart source's for the stack's region."""
    if image is not None:
        if source is not None and source.kind is ModelSourceKind.JUMPSTART:
            raise ValidationError(
                "image",
                image,
                "a JumpStart model source brings its own serving image (JumpStart's tested "
                "image for the region)",
                "drop image, or serve the weights another way (ModelSource.from_s3)",
            )
        return image
    if source is not None and source.kind is ModelSourceKind.JUMPSTART:
        return source.image_for(region_of(stack_of(scope)))
    raise ValidationError(
        "image",
        None,
        "a model needs a serving image",
        "pass image=ContainerImage.lmi(...) (or another factory), or use "
        "source=ModelSource.from_jumpstart(...), which brings its image",
    )


def note_unknown_instance_type(scope: Construct, instance_type: InstanceType, prop: str) -> None:
    """A warning on ``scope`` when ``instance_type`` is neither in the catalog nor given its
    accelerators (``InstanceType.of(name, accelerator=...)``): its placement, fit and price
    checks are skipped, and a typo (``ml.g5.3xlarge``) would only show at deploy."""
    if instance_type.is_known or instance_type.accelerator is not None:
        return
    close = closest_instance_types(instance_type.name)
    meant = f" (did you mean {' or '.join(close)}?)" if close else ""
    Annotations.of(scope).add_warning_v2(
        "cdk-sagemaker-llm:unknown-instance-type",
        f"{prop} {instance_type.name} is not in the library's instance catalog{meant}: its "
        "accelerator, placement, fit and price checks are skipped. State its accelerators with "
        "InstanceType.of(name, accelerator=..., accelerator_count=...) if it is a new type.",
    )


def check_image_on_instance(image: ContainerImage, instance_type: InstanceType, prop: str) -> None:
    """Raise ValidationError when an image built for one accelerator kind, or one CPU
    architecture, meets another."""
    _check_cpu_architecture(image, instance_type, prop)
    if not (instance_type.is_known or instance_type.accelerators_known):
        return  # a name alone: its accelerators are unknown (stated ones are checked)
    if image.accelerator is AcceleratorKind.AWS_NEURON and not instance_type.is_neuron:
        raise ValidationError(
            prop,
            instance_type.name,
            f"the {image.family.value} image runs on AWS Inferentia/Trainium, not on this type",
            "use an ml.inf2.* or ml.trn1.* instance type, or a GPU image",
        )
    if image.accelerator is AcceleratorKind.NVIDIA_GPU and not instance_type.is_gpu:
        cpu_build = image.family.facts.cpu_build_suffix
        raise ValidationError(
            prop,
            instance_type.name,
            f"the {image.family.value} image needs NVIDIA GPUs, which this type lacks",
            "use a GPU instance type (ml.g5, ml.g6, ml.g6e, ml.p4d, ml.p5), "
            + (
                f"or the image's CPU build (tag {image.tag}{cpu_build})"
                if cpu_build
                else "or a Neuron image on Inferentia/Trainium"
            ),
        )


def _check_cpu_architecture(image: ContainerImage, instance_type: InstanceType, prop: str) -> None:
    """A container runs only on the CPU architecture it is built for: an x86_64 image on an
    Arm host (Grace, Graviton) never starts, nor an arm64 image on an x86_64 host."""
    host, built = instance_type.cpu_architecture, image.cpu_architecture
    if host is None or built is None or host is built:
        return
    raise ValidationError(
        prop,
        instance_type.name,
        f"its CPUs are {host.value} but the image {image!r} is built for {built.value}, so the "
        "container cannot start",
        f"use an image built for {host.value} (ContainerImage.from_uri(uri, "
        f"cpu_architecture=CpuArchitecture.{host.name}) for your own), or an instance type "
        f"with {built.value} CPUs",
    )

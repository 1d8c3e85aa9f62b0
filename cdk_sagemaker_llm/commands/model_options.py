"""Command-line options that name a model: a preset, a Hugging Face id, a SageMaker JumpStart
id, or a custom spec from its ``config.json`` facts (shared by ``size``, ``predict`` and
``recommend``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from ..catalog.containers import image_facts_of_uri
from ..catalog.hub_access import hub_url_id, is_url, ungated_example
from ..catalog.instance_types import CATALOG, InstanceType, closest_instance_types
from ..catalog.jumpstart import JUMPSTART_MODELS, closest_jumpstart_ids
from ..catalog.model_specs import PRESETS, KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from ..planning.calibration import EngineRelease
from ..planning.engine_profiles import EngineProfile, resolve_profile

CUSTOM_SPEC_FLAGS = "--parameters, --layers, --attention-heads, --head-dim and --max-context"
"""The flags that describe a model no preset covers."""


class FlagSection(Protocol):
    """Where flags are added: an ``argparse.ArgumentParser`` or one of its argument groups."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        """Add one flag (``argparse``'s own ``add_argument``)."""
        ...


def add_model_arguments(
    parser: argparse.ArgumentParser, section: FlagSection | None = None
) -> None:
    """Add ``--model`` and ``--dtype`` to ``section`` (an argument group of ``parser``;
    default ``parser`` itself) and the custom-spec flags to their own group of ``parser``
    (argparse deprecates a group within a group, so only the parser adds groups)."""
    flags = parser if section is None else section
    flags.add_argument(
        "--model",
        help=f"a preset ({', '.join(sorted(PRESETS))}), a well-known Hugging Face id or a "
        "SageMaker JumpStart text-generation model id (its architecture, and its serving "
        "image as the default --engine); with the custom-spec flags, the name of the custom "
        "model",
    )
    custom = parser.add_argument_group(
        "custom model spec",
        f"describe a model no preset covers ({CUSTOM_SPEC_FLAGS} are required; read them from "
        "its config.json)",
    )
    custom.add_argument("--parameters", type=float, help="total parameters, e.g. 7.24e9")
    custom.add_argument("--layers", type=int, help="num_hidden_layers")
    custom.add_argument("--attention-heads", type=int, help="num_attention_heads")
    custom.add_argument(
        "--kv-heads", type=int, help="num_key_value_heads (default: the attention heads)"
    )
    custom.add_argument("--head-dim", type=int, help="hidden_size / num_attention_heads")
    custom.add_argument("--max-context", type=int, help="max_position_embeddings")
    custom.add_argument("--experts", type=int, help="mixture of experts: num_local_experts")
    custom.add_argument(
        "--experts-per-token", type=int, help="mixture of experts: num_experts_per_tok"
    )
    custom.add_argument(
        "--active-parameters", type=float, help="mixture of experts: parameters one token uses"
    )
    flags.add_argument(
        "--dtype", default="fp16", help="fp32, fp16, bf16, fp8, int8 or int4 (AWQ); default fp16"
    )


def add_max_batch_size_argument(parser: FlagSection) -> None:
    """Add ``--max-batch-size`` (the serving engine's request cap per copy) to ``parser``."""
    parser.add_argument(
        "--max-batch-size",
        type=int,
        help="the server's request cap per copy; default the engine's (vLLM/LMI 256, TGI a "
        "KV-token budget)",
    )


def add_kv_cache_precision_argument(parser: FlagSection) -> None:
    """Add ``--kv-cache-precision`` (``KvCachePrecision``: how the engine stores the KV cache)
    to ``parser``; ``kv_cache_precision`` reads it."""
    parser.add_argument(
        "--kv-cache-precision",
        default="auto",
        help="how the engine stores the KV cache: auto (the activation precision, the default) "
        "or fp8 (one byte per element: about twice the sequences fit and a decode step reads "
        "half the KV bytes; vLLM --kv-cache-dtype fp8, TensorRT-LLM's FP8 KV cache); fp8 needs "
        "an accelerator with FP8 (g6, g6e, p5)",
    )


def kv_cache_precision(args: argparse.Namespace) -> KvCachePrecision:
    """``--kv-cache-precision`` as a ``KvCachePrecision`` (ValidationError on an unknown
    name)."""
    return KvCachePrecision.of(args.kv_cache_precision)


WORKLOAD_FLAGS = "--input-tokens + --output-tokens"
"""The flags of a workload's tokens per request (a ``workload`` error names them)."""

_SPEC_FLAGS = {
    "spec.parameters": "--parameters",
    "spec.layers": "--layers",
    "spec.attention_heads": "--attention-heads",
    "spec.kv_heads": "--kv-heads",
    "spec.head_dim": "--head-dim",
    "spec.max_context": "--max-context",
    "spec.experts_per_token": "--experts-per-token",
    "spec.active_parameters_per_token": "--active-parameters",
}
"""The custom-spec flag of each ``ModelSpec`` field its checks name."""


def _custom(args: argparse.Namespace) -> ModelSpec:
    missing = [
        flag
        for flag, value in (
            ("--layers", args.layers),
            ("--attention-heads", args.attention_heads),
            ("--head-dim", args.head_dim),
            ("--max-context", args.max_context),
        )
        if value is None
    ]
    if missing:
        raise ValidationError(
            "custom model spec",
            ", ".join(missing),
            "missing: a custom model needs every architecture fact",
            f"pass {CUSTOM_SPEC_FLAGS} (and --kv-heads for grouped-query attention)",
        )
    experts = args.experts or 1
    try:
        return ModelSpec(
            name=args.model or "custom",
            parameters=args.parameters,
            layers=args.layers,
            attention_heads=args.attention_heads,
            kv_heads=args.kv_heads or args.attention_heads,
            head_dim=args.head_dim,
            max_context=args.max_context,
            experts=experts,
            experts_per_token=args.experts_per_token or (2 if experts > 1 else 1),
            active_parameters_per_token=args.active_parameters,
        )
    except ValidationError as error:
        flag = _SPEC_FLAGS.get(str(error.prop))
        if flag is None:
            raise
        raise ValidationError(flag, error.value, error.problem, error.fix) from error


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The spec the options name; ValidationError naming the flags to fix otherwise."""
    if args.parameters is not None:
        return _custom(args)
    if not args.model:
        raise ValidationError(
            "--model",
            None,
            "a model is required",
            "pass --model with a preset or Hugging Face id, or describe the model with "
            + CUSTOM_SPEC_FLAGS,
        )
    found = ModelSpec.from_hugging_face_id(args.model)
    if found is not None:
        return found
    key = str(args.model).strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    jumpstart = JUMPSTART_MODELS.get(str(args.model).strip())
    if jumpstart is not None:
        if jumpstart.spec is None:
            raise ValidationError(
                "--model",
                args.model,
                "a JumpStart model whose architecture the library has no preset for",
                f"describe it with {CUSTOM_SPEC_FLAGS} (from its config.json) and name it with "
                "--model",
            )
        return jumpstart.spec
    if is_url(str(args.model)):
        raise _url_error(str(args.model))
    close = closest_jumpstart_ids(str(args.model))
    raise ValidationError(
        "--model",
        args.model,
        "neither a preset, a Hugging Face id nor a JumpStart id the catalog knows",
        (f"did you mean the JumpStart id {', '.join(close)}? Or use" if close else "use")
        + f" one of {', '.join(sorted(PRESETS))}, or describe the model with {CUSTOM_SPEC_FLAGS}",
    )


def _url_error(model: str) -> ValidationError:
    """``--model`` given a page's URL: the id a Hub model page names, else how to write one."""
    named = hub_url_id(model)
    if named is None:
        fix = (
            "pass a preset or the <organization>/<model> id its Hub page shows (e.g. "
            f"{ungated_example()}), or describe the model with {CUSTOM_SPEC_FLAGS}"
        )
    elif ModelSpec.from_hugging_face_id(named) is not None:
        fix = f"pass the id the URL names: --model {named}"
    else:
        fix = (
            f"pass the id the URL names, --model {named}, with {CUSTOM_SPEC_FLAGS} (the "
            "catalog has no preset for it; read them from its config.json)"
        )
    return ValidationError("--model", model, "a URL, not a model id", fix)


def jumpstart_engine(args: argparse.Namespace) -> EngineRelease | None:
    """A JumpStart ``--model``'s serving image as its family and release (the image of
    JumpStart's default instance type in its first region: the same release everywhere, as the
    catalog records it), else None. JumpStart serves that image, so its release is taken as it
    is, even one the container catalog does not list (TGI 2.0.3)."""
    jumpstart = JUMPSTART_MODELS.get(str(args.model or "").strip())
    if jumpstart is None:
        return None
    region = jumpstart.regions[0]
    family, release, _ = image_facts_of_uri(
        jumpstart.image_uri(region, jumpstart.default_instance_type)
    )
    return None if family is None else EngineRelease(family, release)


def precision(args: argparse.Namespace) -> Precision:
    """The ``--dtype`` option as a Precision."""
    return Precision.of(args.dtype)


def int_list(text: str) -> list[int]:
    """``1,2,4`` as ``[1, 2, 4]`` (argparse type; argparse names the flag in its error). An
    empty item (``1,,2``, a trailing comma) is an error, not skipped."""
    if any(not part.strip() for part in text.split(",")):
        raise argparse.ArgumentTypeError(
            f"{text!r} has an empty item: pass positive integers separated by single commas, "
            "such as 1,2,4,8"
        )
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers"
        ) from error
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"{text!r}: pass positive integers such as 1,2,4,8")
    return values


def catalog_instance_type(flag: str, name: str) -> InstanceType:
    """``name`` as the catalog's instance type. The command line cannot state a type's
    accelerators (``InstanceType.of(name, accelerator=...)`` in code can), so a name the catalog
    does not know (a typo such as ``ml.g5.2xlargee``) is a ValidationError naming ``flag``, the
    name and the closest catalog names: nothing on it could be predicted."""
    InstanceType.of(name)  # the ml.<family>.<size> form first
    known = CATALOG.get(name)
    if known is not None:
        return known
    close = closest_instance_types(name)
    raise ValidationError(
        flag,
        name,
        "not an instance type the catalog knows, so its accelerators and their performance are "
        "unknown and nothing on it can be predicted",
        f"did you mean {', '.join(close)}?"
        if close
        else "use an accelerated type the catalog knows (e.g. ml.g5.2xlarge, ml.g6e.2xlarge)",
    )


def check_tensor_parallel_degree(instance_type: InstanceType, degree: object) -> None:
    """``--tensor-parallel-degree`` against the instance's accelerators: a degree beyond them,
    below 1 or not an integer (a results file's) is a ValidationError naming the flag, the value,
    the count and the fix."""
    if degree is None:
        return
    count = instance_type.accelerator_devices
    kind = "Neuron devices" if instance_type.is_neuron else "GPUs"
    dividing = ", ".join(str(d) for d in range(1, count + 1) if count % d == 0)
    if not isinstance(degree, int) or isinstance(degree, bool) or degree < 1:
        raise ValidationError(
            "--tensor-parallel-degree",
            degree,
            "must be a positive integer (accelerators per copy)",
            f"pass a degree of {dividing} for {instance_type.name}, or leave it out for the "
            "recommended one",
        )
    if degree > count:
        raise ValidationError(
            "--tensor-parallel-degree",
            degree,
            f"{instance_type.name} has {count} {kind}; a copy cannot span more than that",
            f"pass a degree of {dividing}, or an instance type with at least {degree} {kind}",
        )


def flag_error(
    error: ValidationError, args: argparse.Namespace, aliases: Mapping[str, str] | None = None
) -> ValidationError:
    """``error`` naming the command-line flag a user typed instead of the library's prop
    (``--max-ms-per-token``, not ``max_ms_per_token``): ``aliases`` for props whose flag is
    named otherwise (``{"optimization": "--optimizations"}``), else the flag of the same name
    when the command has one; other props (a calibration file's field) stay as they are."""
    prop = str(error.prop)
    flag = (aliases or {}).get(prop)
    if flag is None and prop in vars(args) and prop != "handler":
        flag = "--" + prop.replace("_", "-")
    if flag is None:
        return error
    # check_range's default fix ("set max_batch_size within that range") names the prop too.
    fix = error.fix.replace(f"set {prop} within", f"set {flag} within")
    return ValidationError(flag, error.value, error.problem, fix)


def add_engine_memory_share_argument(parser: FlagSection) -> None:
    """``--engine-memory-share``: the share of the memory the serving container allocates
    (on a parser or an argument group)."""
    parser.add_argument(
        "--engine-memory-share",
        type=float,
        help="the share of the memory the engine takes, as its container will be configured: "
        "vLLM's gpu_memory_utilization (of the whole memory), LMI TensorRT-LLM's "
        "kv_cache_free_gpu_mem_fraction (of what the weights leave), TGI's "
        "cuda_memory_fraction; default the --engine profile's (vLLM 0.9)",
    )


def configured_engine(
    value: float | None,
    engine: EngineRelease | EngineProfile | None,
    neuron: bool | None,
    flag: str = "--engine-memory-share",
) -> EngineRelease | EngineProfile | None:
    """``engine`` allocating ``value`` (``flag``, which names it in errors and reasons) of
    the memory (the release's ``kv_cache_memory``, or the profile's); unchanged without it.
    Without an engine the default one on the accelerator (``neuron``) takes it; where the
    accelerator is not one (``neuron`` None: ``recommend`` searches both) it needs
    ``--engine``."""
    if value is None:
        return engine
    if engine is None and neuron is None:
        raise ValidationError(
            flag,
            value,
            "sets the share of the container that will serve, and no --engine names it",
            "pass --engine too, e.g. --engine lmi:0.33.0",
        )
    profile = resolve_profile(engine, bool(neuron))
    share = profile.batching.kv_cache_memory.set_to(value, flag, flag)
    if isinstance(engine, EngineRelease):
        return replace(engine, kv_cache_memory=share)
    return profile.with_kv_cache_memory(share)

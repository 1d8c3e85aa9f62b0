"""``cdk-sagemaker-llm calibrate``: turn a benchmark's ``results.json`` (a local file or an
``s3://`` URI, e.g. an ``EndpointBenchmark``'s ``ResultsS3Uri``) into a calibration file that
``predict --calibration``, ``recommend --calibration`` and ``LlmService(calibration=...)`` use.

The shared flags ``--calibration`` and ``--engine`` of ``predict`` and ``recommend`` are here
too (``add_calibration_arguments``, ``load_calibration``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..catalog.containers import parse_container_release
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from ..planning.calibration import CALIBRATION_FORMAT, Calibration, EngineRelease
from ..planning.calibration_fit import calibrate, deployment_of
from ..planning.efficiency import efficiency_of
from ..planning.engine_profiles import PROFILE_NAMES, profile_on, resolve_profile
from ..planning.performance import Layout
from .aws_environment import CREDENTIALS_HINT
from .model_options import (
    add_engine_memory_share_argument,
    add_kv_cache_precision_argument,
    check_tensor_parallel_degree,
    configured_engine,
    kv_cache_precision,
)

RESULTS_FILE = "results.json"


def register(subparsers: Any) -> None:
    """Add the ``calibrate`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "calibrate",
        help="turn a benchmark's results.json into a calibration file for predict/recommend",
        description="Fit the performance model's efficiency factors to a benchmark's "
        "results.json and write a calibration file (JSON, versioned) keyed by engine, "
        "instance type, tensor-parallel degree and model. RESULTS is a path or an s3:// URI "
        "(an EndpointBenchmark's ResultsS3Uri, or its run folder ending in /). What the "
        "results' deployment section does not state, pass with the flags; a flag that "
        "contradicts it is an error. Exit 0 when written, 2 on bad input.",
    )
    parser.add_argument("results", metavar="RESULTS", help="results.json path or s3:// URI")
    parser.add_argument("--out", required=True, help="calibration file to write")
    parser.add_argument("--model", help="the benchmarked model: a preset or Hugging Face id")
    parser.add_argument("--instance-type", help="the benchmarked instance type")
    parser.add_argument("--tensor-parallel-degree", type=int, help="of the benchmarked copies")
    parser.add_argument(
        "--copies", type=int, help="copies serving during the benchmark (whole endpoint)"
    )
    parser.add_argument(
        "--engine",
        help="the benchmarked container: FAMILY[:VERSION], e.g. tgi:3.3.6 or lmi:0.31.0, with "
        "a release the container catalog lists (FAMILY alone: release unknown)",
    )
    parser.add_argument("--dtype", help="weights precision benchmarked; default fp16")
    # The benchmarked server's, where its results do not state them (a deploy-time benchmark's do).
    add_kv_cache_precision_argument(parser)
    add_engine_memory_share_argument(parser)
    parser.add_argument("--region", help="region of the S3 bucket (s3:// RESULTS)")
    parser.set_defaults(handler=run)


def add_calibration_arguments(parser: argparse.ArgumentParser) -> None:
    """``--calibration FILE`` and ``--engine FAMILY[:VERSION]`` (predict, recommend)."""
    parser.add_argument(
        "--calibration",
        help="calibration file from `cdk-sagemaker-llm calibrate` (it is checked against "
        "--engine; another model gets only its engine/hardware-level factors)",
    )
    parser.add_argument(
        "--engine",
        help="the container that will serve, FAMILY[:VERSION] with a release the container "
        "catalog lists (e.g. tgi:3.3.6; FAMILY alone: release unknown), or an engine profile"
        f" (any case: {', '.join(PROFILE_NAMES)}); it chooses the performance profile and "
        "is checked against --calibration; "
        "default: the calibrated engine (profile lmi-vllm-v1)",
    )


def engine_option(text: str | None, flag: str = "--engine") -> EngineRelease | None:
    """``--engine`` as an EngineRelease (None when not given): ``FAMILY[:VERSION]`` with a
    release the container catalog lists (``catalog.containers.parse_container_release``)."""
    if text is None:
        return None
    family, version = parse_container_release(flag, text)
    return EngineRelease(family.value, version)


def load_calibration(path: str | None) -> Calibration | None:
    """The ``--calibration`` file (None when not given)."""
    if path is None:
        return None
    return _named_by_flag(path, lambda: Calibration.from_file(path))


def calibration_of(document: Any, path: str) -> Calibration:
    """The calibration in ``document``, already read from the ``--calibration`` file ``path``
    (errors named as ``load_calibration`` names them)."""
    return _named_by_flag(
        path, lambda: replace(Calibration.from_dict(document, where=path), file=path)
    )


def _named_by_flag(path: str, read: Callable[[], Calibration]) -> Calibration:
    try:
        return read()
    except ValidationError as error:
        # The file itself (unreadable, not a calibration) is the flag's value; a bad field
        # names the field of that file (``PATH.version``).
        prop = str(error.prop)
        if prop in ("calibration", path):
            raise ValidationError("--calibration", path, error.problem, error.fix) from error
        prop = f"--calibration {prop if path in prop else f'{path}: {prop}'}"
        raise ValidationError(prop, error.value, error.problem, error.fix) from error


def read_results(source: str, region: str | None = None) -> tuple[dict[str, Any], str]:
    """The results document at ``source`` (path or ``s3://bucket/key``; a key ending in ``/``
    is the run's folder and ``results.json`` is read from it) and its name."""
    if source.startswith("s3://"):
        bucket, _, key = source[len("s3://") :].partition("/")
        if not bucket or not key:
            raise ValidationError(
                "RESULTS",
                source,
                "an S3 location is s3://BUCKET/KEY",
                "pass the benchmark's ResultsS3Uri, e.g. s3://bucket/endpoint-benchmarks/run/"
                "results.json",
            )
        if key.endswith("/"):
            key += RESULTS_FILE
        body = _s3_body(bucket, key, region)
        name = f"s3://{bucket}/{key}"
    else:
        try:
            body = Path(source).read_bytes()
        except OSError as error:
            raise ValidationError(
                "RESULTS", source, f"cannot be read: {error}", "pass the benchmark's results.json"
            ) from error
        name = source
    try:
        document = json.loads(body)
    except ValueError as error:
        raise ValidationError(
            "RESULTS", name, f"is not JSON: {error}", "pass the benchmark's results.json"
        ) from error
    if not isinstance(document, dict):
        raise ValidationError(
            "RESULTS", name, "is not a results document", "pass the benchmark's results.json"
        )
    if document.get("format") == CALIBRATION_FORMAT:
        raise ValidationError(
            "RESULTS",
            name,
            "is already a calibration file",
            "pass it to predict/recommend --calibration; calibrate reads a benchmark's "
            "results.json",
        )
    mode = document.get("mode", "concurrency")
    if mode != "concurrency" or document.get("open_loop") is not None:
        raise ValidationError(
            "RESULTS",
            name,
            f'is an open-loop sweep ("mode": {json.dumps(mode)}: levels sent at request '
            "rates); its levels' concurrency is the peak in flight, not a closed-loop "
            "concurrency the model's levels can be fitted to",
            "calibrate needs a concurrency sweep: run benchmark with --concurrency (e.g. "
            "--concurrency 1,2,4,8,16) instead of --request-rate and pass its results",
        )
    return document, name


def _s3_body(bucket: str, key: str, region: str | None) -> bytes:
    """GetObject, with boto3 imported only here (a plain install has no boto3)."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
    except ModuleNotFoundError as error:
        raise ValidationError(
            "RESULTS",
            f"s3://{bucket}/{key}",
            "reading from S3 needs boto3, which a plain install leaves out",
            "pip install 'cdk-sagemaker-llm[benchmark]', or download the file and pass its path",
        ) from error
    try:
        s3 = boto3.client("s3", region_name=region)
        return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except NoCredentialsError as error:
        raise ValidationError(
            "RESULTS", f"s3://{bucket}/{key}", "no AWS credentials found", CREDENTIALS_HINT
        ) from error
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        raise ValidationError(
            "RESULTS",
            f"s3://{bucket}/{key}",
            f"cannot be read: {code or error}",
            "pass the ResultsS3Uri the benchmark reported, with s3:GetObject on it"
            + (" (and --region for the bucket's region)" if code in ("PermanentRedirect",) else ""),
        ) from error
    except BotoCoreError as error:
        raise ValidationError(
            "RESULTS", f"s3://{bucket}/{key}", f"cannot be read: {error}", "check --region"
        ) from error


MISMATCH_FIX = "drop {flag} (the results know what was benchmarked) or pass the right results"
"""``calibrate``'s fix for a flag that contradicts the results ({flag}: the flag)."""


def _merge(
    stated: Mapping[str, Any], key: str, flag: str, given: Any, name: str, fix: str
) -> Any:  # the flag fills a gap; contradicting the results is an error
    found = stated.get(key)
    if given is None:
        return found
    if found is not None and str(found).lower() != str(given).lower():
        raise ValidationError(flag, given, f"{name} says {key} {found}", fix.format(flag=flag))
    return given


def merge_flags(
    document: Mapping[str, Any],
    name: str,
    *,
    model: str | None = None,
    instance_type: str | None = None,
    tensor_parallel_degree: int | None = None,
    copies: int | None = None,
    engine: str | EngineRelease | None = None,
    dtype: str | None = None,
    engine_memory_share: float | None = None,
    kv_cache: KvCachePrecision | None = None,
    fix: str = MISMATCH_FIX,
) -> dict[str, Any]:
    """What the results' ``deployment`` section states (``deployment_of``), each gap filled by
    its flag: ``model``, ``instance_type``, ``tensor_parallel_degree``, ``engine`` (an
    EngineRelease), ``precision``, ``copies``, ``engine_memory_share`` (the share of the
    memory the benchmarked engine took) and ``kv_cache_precision`` (a ``KvCachePrecision``;
    ``kv_cache`` AUTO, the flag's default, counts as not given); None where neither says. A
    flag that contradicts the results is a ValidationError naming the flag, its value and
    what ``name`` says, with ``fix`` (``{flag}``: the flag)."""
    stated = deployment_of(document)
    merged = {
        "model": _merge(stated, "model", "--model", model, name, fix),
        "instance_type": _merge(
            stated, "instance_type", "--instance-type", instance_type, name, fix
        ),
        "tensor_parallel_degree": _merge(
            stated,
            "tensor_parallel_degree",
            "--tensor-parallel-degree",
            tensor_parallel_degree,
            name,
            fix,
        ),
    }
    stated_engine = stated.get("engine")
    engine_value = engine if isinstance(engine, EngineRelease) else engine_option(engine)
    if stated_engine is not None:
        recorded = EngineRelease.from_dict(stated_engine, f"{name}: deployment.engine")
        if engine_value is not None and engine_value != recorded:
            raise ValidationError(
                "--engine",
                engine if isinstance(engine, str) else engine_value.describe(),
                f"{name} says engine {recorded.describe()}",
                fix.format(flag="--engine"),
            )
        engine_value = recorded
    merged["engine"] = engine_value
    merged["precision"] = _merge(stated, "precision", "--dtype", dtype, name, fix)
    merged["copies"] = _merge(stated, "copies", "--copies", copies, name, fix)
    merged["engine_memory_share"] = _merge(
        stated, "engine_memory_share", "--engine-memory-share", engine_memory_share, name, fix
    )
    given = None if kv_cache in (None, KvCachePrecision.AUTO) else kv_cache.value
    stored = _merge(stated, "kv_cache_precision", "--kv-cache-precision", given, name, fix)
    merged["kv_cache_precision"] = None if stored is None else KvCachePrecision.of(str(stored))
    return merged


def benchmarked_engine(
    merged: Mapping[str, Any], hardware: InstanceType, given: float | None, name: str
) -> EngineRelease:
    """The merged deployment's engine (``merge_flags``), with the share of the memory it took
    where the results (``name``) or the flag (``given``) state one: the fit's KV cache is
    what it leaves."""
    flag = "--engine-memory-share" if given is not None else f"{name}: engine_memory_share"
    share = merged["engine_memory_share"]
    configured = configured_engine(share, merged["engine"], hardware.is_neuron, flag)
    assert isinstance(configured, EngineRelease), "a release configured stays a release"
    return configured


def model_of_results(stated: Mapping[str, Any], name: str) -> ModelSpec:
    """The benchmarked model: the deployment's ``model_spec`` (``ModelSpec.to_metadata()``,
    custom models) when it names this model, else a preset or well-known Hugging Face id."""
    recorded = stated.get("model_spec")
    if isinstance(recorded, Mapping) and recorded.get("name") == name:
        try:
            return ModelSpec.from_metadata(dict(recorded))
        except (KeyError, TypeError, ValueError) as error:
            raise ValidationError(
                "deployment.model_spec", recorded, f"is malformed ({error})", "pass --model"
            ) from error
    found = ModelSpec.from_hugging_face_id(name)
    return found if found is not None else ModelSpec.preset(name)


def calibration_from_results(
    document: Mapping[str, Any],
    name: str,
    *,
    model: str | None = None,
    instance_type: str | None = None,
    tensor_parallel_degree: int | None = None,
    copies: int | None = None,
    engine: str | None = None,
    dtype: str | None = None,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
    engine_memory_share: float | None = None,
) -> Calibration:
    """Fit a Calibration to a results document; the keyword arguments (the command's flags)
    fill what its ``deployment`` section does not state. ``kv_cache`` is how the benchmarked
    server stored the KV cache (``--kv-cache-precision``) and ``engine_memory_share`` the
    share of the memory its engine took (``--engine-memory-share``; default the engine
    profile's), where the section does not state them (a deploy-time benchmark's does, where
    its model's environment set them)."""
    merged = merge_flags(
        document,
        name,
        model=model,
        instance_type=instance_type,
        tensor_parallel_degree=tensor_parallel_degree,
        copies=copies,
        engine=engine,
        dtype=dtype,
        engine_memory_share=engine_memory_share,
        kv_cache=kv_cache,
    )
    stated = deployment_of(document)
    model_name, type_name = merged["model"], merged["instance_type"]
    degree, engine_value = merged["tensor_parallel_degree"], merged["engine"]
    precision_name = merged["precision"] or "fp16"
    count = 1 if merged["copies"] is None else merged["copies"]
    missing = [
        flag
        for flag, value in (
            ("--model", model_name),
            ("--instance-type", type_name),
            ("--engine", engine_value),
        )
        if value is None
    ]
    if missing:
        raise ValidationError(
            ", ".join(missing),
            "not stated",
            f"{name} does not say which {'/'.join(m.lstrip('-') for m in missing)} it measured, "
            "and a calibration is keyed by engine, hardware, degree and model",
            f"pass {' and '.join(missing)} (e.g. --model llama-3-8b --instance-type "
            "ml.g5.2xlarge --engine tgi:3.3.6)",
        )
    spec = model_of_results(stated, str(model_name))
    try:
        hardware = InstanceType.of(str(type_name))
    except ValidationError as error:
        # The flag's value, or the file's: say which, as the degree's error does.
        prop = (
            "--instance-type" if instance_type is not None else f"{name}: deployment.instance_type"
        )
        raise ValidationError(prop, type_name, error.problem, error.fix) from error
    if (
        tensor_parallel_degree is None
        and degree is not None
        and (not isinstance(degree, int) or isinstance(degree, bool) or degree < 1)
    ):
        raise ValidationError(
            f"{name}: deployment.tensor_parallel_degree",
            degree,
            "must be a positive integer",
            "pass the results the benchmark wrote (it records the degree as a number)",
        )
    check_tensor_parallel_degree(hardware, degree)
    degree = int(degree or 1)
    if not isinstance(count, int) or count < 1:
        raise ValidationError("--copies", count, "must be a positive integer", "pass e.g. 1")
    profile_on(engine_value, hardware, "--engine")  # an engine not run on it: an error
    configured = benchmarked_engine(merged, hardware, engine_memory_share, name)
    # The fit needs the copies sharing the load; how they sit on instances does not matter.
    layout = Layout(hardware, degree, 1, count)
    return calibrate(
        document,
        spec,
        layout,
        Precision.of(str(precision_name)),
        source=name,
        engine=configured,
        kv_cache_precision=merged["kv_cache_precision"] or KvCachePrecision.AUTO,
    )


def run(args: argparse.Namespace) -> int:
    """Write the calibration file; exit 0, or 2 on bad input."""
    try:
        document, name = read_results(args.results, args.region)
        calibration = calibration_from_results(
            document,
            name,
            model=args.model,
            instance_type=args.instance_type,
            tensor_parallel_degree=args.tensor_parallel_degree,
            copies=args.copies,
            engine=args.engine,
            dtype=args.dtype,
            kv_cache=kv_cache_precision(args),
            engine_memory_share=args.engine_memory_share,
        )
        calibration.to_file(args.out)
    except ValidationError as error:
        if error.prop == "path":  # Calibration.to_file's argument is --out here
            error = ValidationError("--out", error.value, error.problem, error.fix)
        if error.prop == "kv_cache_precision":
            error = ValidationError("--kv-cache-precision", error.value, error.problem, error.fix)
        if error.prop == "layout":  # what the flags (or the results) state together
            flags = "--model / --instance-type / --tensor-parallel-degree / --dtype"
            if args.engine_memory_share is not None:
                flags += " / --engine-memory-share"
            error = ValidationError(flags, error.value, error.problem, error.fix)
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {calibration.describe()}")
    uncalibrated = efficiency_of(
        resolve_profile(calibration.engine, InstanceType.of(calibration.instance_type).is_neuron)
    )
    if calibration.efficiency == uncalibrated:
        print(
            "warning: the fit came no closer to these levels than the engine profile's own "
            "factors (squared log error of ms/token, tokens/s and TTFT): the calibration keeps "
            "the profile's",
            file=sys.stderr,
        )
    for note in calibration.fit_notes():
        print(f"warning: {note}", file=sys.stderr)
    return 0

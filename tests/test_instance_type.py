"""InstanceType: the catalog of accelerated types and the escape hatch."""

from __future__ import annotations

import pytest
from conftest import cloudformation_schema

from cdk_sagemaker_llm import Accelerator, AcceleratorKind, InstanceType, ValidationError
from cdk_sagemaker_llm.catalog.instance_types import CATALOG, closest_instance_types


def test_named_constants_carry_accelerator_facts() -> None:
    g5 = InstanceType.G5_12XLARGE
    assert (g5.name, g5.accelerator_count, g5.vcpus, g5.memory_mib) == (
        "ml.g5.12xlarge",
        4,
        48,
        196_608,
    )
    assert g5.accelerator is not None and g5.accelerator.memory_mib == 22_888
    assert g5.accelerator_memory_mib == 4 * 22_888
    assert g5.is_gpu and not g5.is_neuron and g5.has_local_nvme_storage
    assert InstanceType.G6E_48XLARGE.accelerator_count == 8
    assert (
        InstanceType.G6E_XLARGE.accelerator is not None
        and InstanceType.G6E_XLARGE.accelerator.memory_mib == 45_776
    )
    assert InstanceType.P4DE_24XLARGE.accelerator_memory_mib == 8 * 81_920
    assert (
        InstanceType.P5_48XLARGE.accelerator is not None
        and InstanceType.P5_48XLARGE.accelerator.memory_bandwidth_gbps == 3_350
    )
    inf2 = InstanceType.INF2_48XLARGE
    assert inf2.accelerator is not None and inf2.accelerator.kind is AcceleratorKind.AWS_NEURON
    assert inf2.accelerator_count == 12 and inf2.is_neuron and not inf2.has_local_nvme_storage
    assert InstanceType.TRN1_32XLARGE.accelerator_count == 16
    assert InstanceType.G5_12XLARGE.family == "g5"


def test_of_returns_catalog_entry_or_bare_type() -> None:
    assert InstanceType.of("ml.g5.12xlarge") is InstanceType.G5_12XLARGE
    other = InstanceType.of("ml.c7i.4xlarge")
    assert other.name == "ml.c7i.4xlarge" and not other.is_known
    # Unknown hardware is not reported as zero accelerators: the count is unknown.
    assert other.accelerator_count is None and not other.accelerators_known
    assert other.accelerator_memory_mib == 0
    assert str(other) == "ml.c7i.4xlarge"


def test_new_families_from_public_specs() -> None:
    g4dn = InstanceType.G4DN_12XLARGE
    assert (g4dn.accelerator_count, g4dn.vcpus, g4dn.memory_mib, g4dn.local_nvme_gb) == (
        4,
        48,
        192 * 1024,
        900,
    )
    assert g4dn.accelerator is Accelerator.T4 and Accelerator.T4.bf16_tflops is None
    assert g4dn.interconnect == "PCIe Gen3"
    p5e = InstanceType.P5E_48XLARGE
    assert p5e.accelerator is Accelerator.H200 and p5e.accelerator_count == 8
    assert Accelerator.H200.memory_bandwidth_gbps == 4_800
    assert InstanceType.P5EN_48XLARGE.accelerator is Accelerator.H200
    b200 = InstanceType.of("ml.p6-b200.48xlarge")
    assert b200 is InstanceType.P6_B200_48XLARGE and b200.family == "p6-b200"
    assert b200.accelerator is Accelerator.B200 and b200.accelerator_count == 8
    assert (b200.interconnect, b200.interconnect_gbps) == ("NVLink", 1_800)
    assert Accelerator.B200.fp16_tflops == Accelerator.B200.bf16_tflops == 2_250
    trn2 = InstanceType.TRN2_48XLARGE
    assert trn2.accelerator is Accelerator.TRAINIUM2 and trn2.accelerator_count == 16
    assert trn2.is_neuron and trn2.has_local_nvme_storage
    assert InstanceType.P5_4XLARGE.accelerator_count == 1
    assert InstanceType.P5_4XLARGE.interconnect is None  # one GPU: nothing to talk to
    assert not InstanceType.INF2_XLARGE.has_local_nvme_storage
    assert InstanceType.INF2_XLARGE.local_nvme_gb == 0


def test_every_catalog_type_is_a_sagemaker_hosting_type() -> None:
    """botocore's ProductionVariantInstanceType enum lists the types SageMaker hosts."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    hosted = set(model.shape_for("ProductionVariantInstanceType").enum)
    assert set(CATALOG) <= hosted


def test_stating_the_accelerators_of_an_unknown_type() -> None:
    stated = InstanceType.of("ml.new.48xlarge", accelerator=Accelerator.H100, accelerator_count=8)
    assert stated.accelerators_known and stated.is_gpu and not stated.is_known
    assert stated.accelerator_memory_mib == 8 * Accelerator.H100.memory_mib
    assert InstanceType.of("ml.new.48xlarge").with_accelerators(Accelerator.H100, 8) == stated
    cpu = InstanceType.of("ml.c7i.4xlarge", accelerator_count=0)
    assert cpu.accelerators_known and cpu.accelerator_count == 0 and cpu.accelerator is None


@pytest.mark.parametrize(
    ("accelerator", "count", "prop"),
    [
        (None, 8, "accelerator"),
        (Accelerator.H100, 0, "accelerator_count"),
        (Accelerator.H100, None, "accelerator_count"),
        (Accelerator.H100, True, "accelerator_count"),
    ],
)
def test_inconsistent_stated_accelerators_are_rejected(
    accelerator: Accelerator | None, count: int | None, prop: str
) -> None:
    # (a bool is a wrong type: the factory's own type check names it InstanceType.of(...))
    with pytest.raises(
        ValidationError, match=rf"(ml.new.48xlarge {prop}|InstanceType.of\({prop}\))="
    ):
        InstanceType.of("ml.new.48xlarge", accelerator=accelerator, accelerator_count=count)


def test_a_catalog_type_keeps_its_own_accelerators() -> None:
    assert InstanceType.of("ml.g5.12xlarge", accelerator_count=4) is InstanceType.G5_12XLARGE
    with pytest.raises(
        ValidationError, match=r"the catalog knows ml\.g5\.12xlarge: 4 x NVIDIA A10G"
    ):
        InstanceType.of("ml.g5.12xlarge", accelerator_count=8)


@pytest.mark.parametrize("name", ["g5.12xlarge", "ml.g5", "", "ml.g5.12xlarge.extra"])
def test_of_rejects_malformed_names(name: str) -> None:
    with pytest.raises(ValidationError, match="instance_type="):
        InstanceType.of(name)


def test_blackwell_families_from_aws_and_nvidia_figures() -> None:
    """g7, g7e, p6-b300 and p6e-gb200: EC2's DescribeInstanceTypes figures (vCPUs, host memory,
    GPUs, usable GPU memory, NVMe), the vendors' bandwidth and FLOPS where published."""
    g7 = InstanceType.G7_12XLARGE
    assert (g7.vcpus, g7.memory_mib, g7.accelerator_count, g7.local_nvme_gb) == (
        48,
        192 * 1024,
        2,
        1_900,
    )
    assert g7.accelerator is Accelerator.RTX_PRO_4500_SERVER and g7.interconnect == "PCIe Gen5"
    assert InstanceType.G7_8XLARGE.accelerator_count == 1  # 1 GPU, not 2
    g7e = InstanceType.G7E_48XLARGE
    assert (g7e.vcpus, g7e.memory_mib, g7e.accelerator_count, g7e.local_nvme_gb) == (
        192,
        2_048 * 1024,
        8,
        15_200,
    )
    assert g7e.accelerator_memory_mib == 8 * 98_304 and g7e.has_local_nvme_storage
    assert InstanceType.G7E_12XLARGE.accelerator_count == 2
    b300 = InstanceType.P6_B300_48XLARGE
    assert b300 is InstanceType.of("ml.p6-b300.48xlarge") and b300.family == "p6-b300"
    assert (b300.vcpus, b300.memory_mib, b300.accelerator_count) == (192, 4_096 * 1024, 8)
    assert b300.accelerator is Accelerator.B300 and Accelerator.B300.memory_mib == 275_040
    assert (b300.interconnect, b300.interconnect_gbps) == ("NVLink", 1_800)
    gb200 = InstanceType.P6E_GB200_36XLARGE
    assert (gb200.vcpus, gb200.memory_mib, gb200.accelerator_count) == (144, 960 * 1024, 4)
    assert gb200.accelerator is Accelerator.GB200 and gb200.family == "p6e-gb200"
    assert Accelerator.B300.performance_known and Accelerator.GB200.performance_known


@pytest.mark.parametrize(
    ("accelerator", "missing"),
    [
        (Accelerator.RTX_PRO_4500_SERVER, "memory bandwidth and dense FP16"),
        (Accelerator.RTX_PRO_6000_SERVER, "dense FP16/BF16 tensor TFLOPS"),
    ],
)
def test_figures_the_vendor_does_not_publish_are_unknown_not_guessed(
    accelerator: Accelerator, missing: str
) -> None:
    assert accelerator.fp16_tflops is None and not accelerator.performance_known
    assert accelerator.unpublished is not None and missing in accelerator.unpublished
    with pytest.raises(ValidationError, match="cannot be predicted on NVIDIA RTX PRO"):
        accelerator.require_performance("instance_type", "ml.g7e.2xlarge")
    assert Accelerator.RTX_PRO_6000_SERVER.memory_bandwidth_gbps == 1_597  # published


def test_every_catalog_type_is_in_cloudformations_list() -> None:
    """CloudFormation's AWS::SageMaker::EndpointConfig schema (as cfn-lint ships it) lists the
    instance types a template may name: a catalog type it lacked could not be deployed."""
    schema = cloudformation_schema("AWS::SageMaker::EndpointConfig")
    listed = set(schema["definitions"]["ProductionVariant"]["properties"]["InstanceType"]["enum"])
    assert set(CATALOG) <= listed


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("ml.g5.2xlrge", "ml.g5.2xlarge"), ("ml.g5.2xlargee", "ml.g5.2xlarge"),
     ("ml.p5.48xlrage", "ml.p5.48xlarge"), ("ml.inf2.xlarg", "ml.inf2.xlarge")],
)  # fmt: skip
def test_one_did_you_mean_for_an_instance_type_serves_constructs_and_commands(
    typed: str, meant: str
) -> None:
    """The construct's warning, the commands' errors and plan's ``--price`` each used their own
    cutoff, so one typo got three answers: they all ask ``closest_instance_types`` now."""
    assert closest_instance_types(typed)[0] == meant
    assert closest_instance_types("ml.c7i.xlarge") == []  # a CPU type is no typo of a GPU one
    assert closest_instance_types("ml.x9.big", also=["ml.x9.bigg"]) == ["ml.x9.bigg"]

"""InstanceType: the catalog of accelerated types and the escape hatch."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm import AcceleratorKind, InstanceType, ValidationError


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
    assert other.name == "ml.c7i.4xlarge" and not other.is_known and other.accelerator_count == 0
    assert str(other) == "ml.c7i.4xlarge"


@pytest.mark.parametrize("name", ["g5.12xlarge", "ml.g5", "", "ml.g5.12xlarge.extra"])
def test_of_rejects_malformed_names(name: str) -> None:
    with pytest.raises(ValidationError, match="instance_type="):
        InstanceType.of(name)

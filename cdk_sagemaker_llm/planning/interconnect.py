"""How the accelerators of one instance talk to each other for tensor parallelism
(``Interconnect``): the links an all-reduce measurement covers (``MEASURED_LINKS``: NVLink on
A100 and H100, PCIe Gen4), each with its sources, and the link a layout's all-reduces take
(``interconnect_of``): the one the catalog states for the instance type
(``InstanceType.interconnect``), measured or scaled from a measured link of its kind, across
CPU sockets where a PCIe group is wider than one socket's GPUs."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..catalog.instance_types import InstanceType


@dataclass(frozen=True)
class Interconnect:
    """How the accelerators of one instance talk to each other for tensor parallelism."""

    name: str
    bandwidth_gbps: float
    """Achievable all-reduce bus bandwidth per device, GB/s."""
    latency_us: float
    """Fixed cost of one small all-reduce over 2 devices, microseconds; it grows with
    1 + log2(devices) (tree/low-latency all-reduce algorithms take log2(devices) rounds)."""
    source: str
    link: tuple[str, float] | None = None
    """The link this models, as the catalog states it (``InstanceType.interconnect`` and
    ``interconnect_gbps``); None for a link the catalog leaves unstated."""
    measured: bool = True
    """False when no all-reduce measurement of this link exists and its figures are scaled
    from a measured link of the same kind (say so; calibrate)."""
    peer_all_reduce_latency_us: float | None = None
    """Fixed cost of one small all-reduce by an engine's own peer-to-peer kernel over this link
    (vLLM's custom all-reduce: each rank reads its peers' buffers through NVLink in one shot,
    so the cost stays flat in the devices), microseconds; None where no measurement of it on
    this link exists (the NCCL figures apply)."""
    peer_all_reduce_source: str | None = None
    """Where ``peer_all_reduce_latency_us`` comes from."""

    @property
    def nvlink(self) -> bool:
        """Whether the catalog states NVLink between the accelerators (``link``; an engine's
        own peer-to-peer all-reduce can replace NCCL's there). An unstated link is not."""
        return self.link is not None and self.link[0] == "NVLink"

    def unmeasured_note(self) -> str:
        """What a link's figures lack, in words: empty for a measured link."""
        return "" if self.measured else " (unmeasured link: no all-reduce measurement)"

    def all_reduce_s(
        self,
        devices: int,
        message_bytes: float,
        transfer_scale: float = 1.0,
        peer_kernel: bool = False,
    ) -> float:
        """Seconds of one ring all-reduce of ``message_bytes`` over ``devices`` devices:
        latency x (1 + log2 devices) / 2 + 2 (devices - 1) / devices x bytes / bandwidth
        (the transfer term times ``transfer_scale``: what an engine reaches of nccl-tests'
        bandwidth, an engine profile's ``all_reduce_scale``). With ``peer_kernel`` (an engine
        whose own all-reduce replaces NCCL's on this link) a message of at most
        ``PEER_ALL_REDUCE_MAX_BYTES`` pays ``peer_all_reduce_latency_us`` instead, where the
        link has that measurement."""
        if devices <= 1:
            return 0.0
        latency = self.latency_us * 1e-6 * (1 + math.log2(devices)) / 2
        peer = self.peer_all_reduce_latency_us
        if peer_kernel and peer is not None and message_bytes <= PEER_ALL_REDUCE_MAX_BYTES:
            latency = peer * 1e-6
        transfer = 2 * (devices - 1) / devices * message_bytes / (self.bandwidth_gbps * 1e9)
        return latency + transfer * transfer_scale


PEER_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024
"""The largest message vLLM's custom all-reduce takes (``CustomAllreduce`` ``max_size`` 8,192 x
1,024 bytes, vllm/distributed/device_communicators/custom_all_reduce.py); a larger one (a long
prefill chunk's activations) goes to NCCL."""


VLLM_CUSTOM_ALL_REDUCE_SOURCE = (
    "vLLM's custom all-reduce measured in isolation, without CUDA graphs (so an upper bound on "
    "what a captured decode step pays), at 512 B-32 KB per rank: {figures} (sgl-project/sglang "
    "pull request {pull}, the 'vllm' column)"
)


NVLINK_A100 = Interconnect(
    "NVLink 3 (NVSwitch)",
    230,
    28,
    "A100 NVLink 600 GB/s bidirectional (NVIDIA A100 datasheet), ~230 GB/s all-reduce bus "
    "bandwidth (nccl-tests); 28 us per all-reduce at TP2 (42 at TP4, 56 at TP8) fits NVIDIA NeMo's "
    "published Llama-2-7B latencies on A100 SXM4 at TP 1/2/4/8 (234/172/144/137 ms for 128 in, "
    "20 out, batch 1)",
    peer_all_reduce_latency_us=13.5,
    peer_all_reduce_source=VLLM_CUSTOM_ALL_REDUCE_SOURCE.format(
        figures="A100, 13.0 / 13.5 / 14.0 us at TP 2 / 4 / 8 for 512 B, 11.3-13.5 us at TP 2 / 4 "
        "up to 32 KB",
        pull="2688",
    ),
)


NVLINK_H100 = Interconnect(
    "NVLink 4 (NVSwitch)",
    370,
    20,
    "H100 SXM NVLink 900 GB/s bidirectional (NVIDIA H100 datasheet), ~370 GB/s all-reduce bus "
    "bandwidth (nccl-tests); latency scaled from the A100 fit",
    peer_all_reduce_latency_us=9.0,
    peer_all_reduce_source=VLLM_CUSTOM_ALL_REDUCE_SOURCE.format(
        figures="H100, 8.5-10.1 us at TP 2 / 4 / 8 up to 4 KB, 8.7 / 9.2 / 11.8 us at 32 KB",
        pull="2904",
    ),
)


PCIE_GEN4 = Interconnect(
    "PCIe Gen4 x16",
    20,
    21,
    "A10G, L4 and L40S talk over PCIe Gen4 x16 (32 GB/s each way, NVIDIA datasheets; no NVLink "
    "on g5/g6/g6e): about 20 GB/s achievable all-reduce bandwidth; a small all-reduce takes "
    "~42 us over 8 PCIe GPUs (nccl-tests all_reduce_perf, 8-byte message, 8 x RTX 4090 on "
    "PCIe: 42.1 us; NVIDIA/nccl issue #1530), ~21 us at TP2 by the (1 + log2 TP) / 2 law; "
    "approximate, calibrate",
)


PCIE_GEN4_CROSS_SOCKET = Interconnect(
    "PCIe Gen4 x16 across CPU sockets",
    10,
    21,
    "the 8-GPU PCIe instances (g5/g6/g6e.48xlarge: 192 vCPUs, two CPU sockets) hang four GPUs "
    "off each socket; a tensor-parallel group of more than four crosses the inter-socket link, "
    "where NCCL's ring stages through host memory: about half the single-socket PCIe "
    "bandwidth (NCCL issues: nccl-tests #74, A40 on dual AMD EPYC, PCIe P2P across sockets "
    "slower than within one; nccl #1639, 8 PCIe GPUs reach less bus bandwidth than 4); "
    "approximate, calibrate",
)


NEURONLINK = Interconnect(
    "NeuronLink v2",
    100,
    20,
    "Inferentia2/Trainium chips are linked by NeuronLink v2 (AWS inf2/trn1 product pages: "
    "192 GB/s per chip on inf2); no all-reduce measurement: figures approximate, calibrate "
    "with a benchmark",
    measured=False,
)


MEASURED_LINKS: dict[tuple[str, float], Interconnect] = {
    ("NVLink", 600.0): NVLINK_A100,
    ("NVLink", 900.0): NVLINK_H100,
    ("PCIe Gen4", 64.0): PCIE_GEN4,
}
"""The links an all-reduce measurement exists for, by the (kind, peer GB/s) the catalog states
(``InstanceType.interconnect``, ``interconnect_gbps``): a catalog link of the same kind at
another bandwidth is scaled from the closest of these."""


PCIE_GPUS_PER_SOCKET = 4
"""GPUs per CPU socket on the PCIe instances: the 8-GPU sizes have two sockets (192 vCPUs,
EC2 G5/G6/G6e instance-type pages), the 4-GPU sizes one."""


CROSS_SOCKET_SHARE = PCIE_GEN4_CROSS_SOCKET.bandwidth_gbps / PCIE_GEN4.bandwidth_gbps
"""What a PCIe all-reduce keeps of its bandwidth across CPU sockets (the Gen4 measurement)."""


def interconnect_of(instance_type: InstanceType, tensor_parallel_degree: int = 1) -> Interconnect:
    """The interconnect tensor parallelism of ``tensor_parallel_degree`` uses on
    ``instance_type``: the link the catalog states (``InstanceType.interconnect``), with the
    all-reduce figures measured on it, or scaled from a measured link of the same kind by the
    stated bandwidth (``measured`` False); on PCIe, a group wider than one CPU socket's GPUs
    crosses sockets."""
    if instance_type.is_neuron:
        return NEURONLINK
    crosses = tensor_parallel_degree > PCIE_GPUS_PER_SOCKET
    if instance_type.interconnect is None or instance_type.interconnect_gbps is None:
        assumed = PCIE_GEN4_CROSS_SOCKET if crosses else PCIE_GEN4
        return replace(
            assumed,
            link=None,
            measured=False,
            source="the catalog states no link for this type (accelerators you stated): "
            f"assumed {assumed.name}; {assumed.source}",
        )
    stated = (instance_type.interconnect, instance_type.interconnect_gbps)
    crosses = crosses and stated[0].startswith("PCIe")
    if crosses and stated in MEASURED_LINKS and MEASURED_LINKS[stated] is PCIE_GEN4:
        return replace(PCIE_GEN4_CROSS_SOCKET, link=stated)
    link = MEASURED_LINKS.get(stated) or _scaled_link(stated)
    if not crosses:
        return replace(link, link=stated)
    return replace(
        link,
        name=f"{link.name} across CPU sockets",
        bandwidth_gbps=link.bandwidth_gbps * CROSS_SOCKET_SHARE,
        source=f"{link.source}; across CPU sockets {CROSS_SOCKET_SHARE:.0%} of it "
        f"({PCIE_GEN4_CROSS_SOCKET.source})",
        link=stated,
        measured=False,
    )


def _scaled_link(stated: tuple[str, float]) -> Interconnect:
    """A link no all-reduce measurement covers: the closest measured link of its kind (PCIe
    Gen4 for another kind), its bandwidth scaled by the stated peer bandwidth."""
    kind, gbps = stated
    same_kind = [link for link in MEASURED_LINKS if link[0] == kind] or [("PCIe Gen4", 64.0)]
    closest = min(same_kind, key=lambda link: abs(math.log(gbps / link[1])))
    base = MEASURED_LINKS[closest]
    return Interconnect(
        f"{kind} ({gbps:g} GB/s)",
        base.bandwidth_gbps * gbps / closest[1],
        base.latency_us,
        f"not measured: {base.name}'s all-reduce figures scaled by the stated peer bandwidth "
        f"({gbps:g} vs {closest[1]:g} GB/s; catalog/instance_types.py), latency kept; "
        "calibrate with a benchmark",
        measured=False,
        peer_all_reduce_latency_us=base.peer_all_reduce_latency_us,
        peer_all_reduce_source=base.peer_all_reduce_source,
    )

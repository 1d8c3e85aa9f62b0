"""Predicted speed-up of speculative decoding (EAGLE, a draft model) over plain decoding, by
concurrency, per instance type: the shape to compare with published measurements
(docs/guides/capacity-planning.md, "Speculative decoding").

Run: ``python benchmarks/speculation_sweep.py [--model llama-3-8b]``.
Prints, per layout, the ratio plain ms/token / optimized ms/token at each concurrency of one
copy (``predict`` with the default engine profile), and the break-even batch per copy.
"""

from __future__ import annotations

import argparse

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.planning.optimizations import Optimization
from cdk_sagemaker_llm.planning.performance import Layout, predict
from cdk_sagemaker_llm.planning.speculation import Speculation
from cdk_sagemaker_llm.planning.workload import Workload

LLAMA_3_2_1B = ModelSpec(
    "llama-3.2-1b", 1.24e9, 16, 32, 8, 64, 131_072, ("meta-llama/Llama-3.2-1B",)
)
"""Llama 3.2 1B (its Hugging Face config: 16 layers, 32 heads, 8 KV heads of 64), a draft
for Llama 3 8B (same tokenizer family)."""
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
LAYOUTS_70B = [
    (InstanceType.P4D_24XLARGE, 8),
    (InstanceType.P5_48XLARGE, 4),
    (InstanceType.P5_48XLARGE, 8),
]
LAYOUTS = [
    (InstanceType.G5_2XLARGE, 1),
    (InstanceType.G5_12XLARGE, 1),
    (InstanceType.G5_12XLARGE, 4),
    (InstanceType.P4D_24XLARGE, 1),
    (InstanceType.P5_48XLARGE, 1),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="llama-3-8b")
    parser.add_argument("--input-tokens", type=int, default=512)
    parser.add_argument("--output-tokens", type=int, default=256)
    args = parser.parse_args()
    spec = ModelSpec.preset(args.model)
    workload = Workload(input_tokens=args.input_tokens, output_tokens=args.output_tokens)
    options = {
        "eagle": Optimization.speculative_decoding(Speculation.eagle()),
        "draft": Optimization.speculative_decoding(Speculation.draft_model(LLAMA_3_2_1B)),
    }
    print("concurrency".ljust(24) + "".join(f"{c:>7}" for c in CONCURRENCY))
    layouts = LAYOUTS_70B if spec.parameters > 3e10 else LAYOUTS
    for instance_type, degree in layouts:
        layout = Layout(instance_type, degree, 1)
        plain = predict(spec, layout, workload, CONCURRENCY)
        for name, optimization in options.items():
            fast = predict(spec, layout, workload, CONCURRENCY, optimization=optimization)
            ratios = [
                p.ms_per_token / f.ms_per_token
                for p, f in zip(plain.levels, fast.levels, strict=True)
            ]
            label = f"{instance_type} TP{degree} {name}"
            print(label.ljust(24) + "".join(f"{r:7.2f}" for r in ratios))
            stops = [a for a in fast.assumptions if "stops paying" in a or "pays up to" in a]
            print(
                "    "
                + (stops[0].split(": ", 1)[-1] if stops else "")
                + f" (max concurrency {fast.max_concurrency})"
            )


if __name__ == "__main__":
    main()

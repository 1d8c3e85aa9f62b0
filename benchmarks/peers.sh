#!/usr/bin/env bash
# Side by side with the peer tools: AIPerf, GuideLLM and vLLM's `bench serve`, each installed
# from the package index into its own venv under benchmarks/.peers-venv/ (never the project's
# venv), and this library's `benchmark --target openai`, against one loopback simulator's
# OpenAI-compatible chat route, at 64, 256 and 512 streams, the simulator pinned to CPU 0 and
# each tool to CPU 1. benchmarks/peers_truth.py starts the simulator, runs each tool, and
# prints its p50 TTFT beside the simulator's truth, the requests held in flight, its CPU time
# per 1,000 requests and its peak memory.
#
#   bash benchmarks/peers.sh [STREAMS...]      # default: 64 256 512
#
# Needs the package index (about 6 GB for vLLM's torch and CUDA wheels) and nothing else: the
# peers count tokens with a word-level tokenizer made locally (benchmarks/peers_tokenizer.py),
# not one fetched from the Hugging Face Hub. Run `bash scripts/setup.sh` first (the project's
# .venv). Versions are pinned here and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
AIPERF_VERSION=${AIPERF_VERSION:-0.13.0}
GUIDELLM_VERSION=${GUIDELLM_VERSION:-0.8.1}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
TORCH_VERSION=${TORCH_VERSION:-2.14.0}  # what vllm 0.33.0 pins
PEERS=benchmarks/.peers-venv
for tool in aiperf guidellm vllm; do
  if [ ! -x "$PEERS/$tool/bin/python" ]; then
    python3 -m venv "$PEERS/$tool"
  fi
done
"$PEERS/aiperf/bin/pip" install -q "aiperf==$AIPERF_VERSION"
"$PEERS/guidellm/bin/pip" install -q "guidellm==$GUIDELLM_VERSION"
# vLLM's full requirements are a GPU serving stack (flashinfer, CUDA kernels, ...). The client
# `vllm bench serve` needs vllm itself, torch (vllm/__init__ imports it) and the modules its CLI
# imports on the way; nothing here runs on a GPU.
"$PEERS/vllm/bin/pip" install -q --no-deps "vllm==$VLLM_VERSION"
"$PEERS/vllm/bin/pip" install -q "torch==$TORCH_VERSION" aiohttp numpy tqdm regex pillow \
  "transformers>=5.16.1,<5.21.0" "tokenizers>=0.23.2" "huggingface_hub>=1.31.0" pybase64 cbor2 \
  psutil pyzmq requests openai openai-harmony msgspec cloudpickle cachetools uvloop py-cpuinfo \
  fastapi uvicorn prometheus_client partial-json-parser xgrammar llguidance watchfiles orjson \
  einops
for tool in aiperf guidellm vllm; do
  echo "$tool $("$PEERS/$tool/bin/pip" show "$tool" | awk '/^Version/ {print $2}')"
done
"$PEERS/aiperf/bin/python" benchmarks/peers_tokenizer.py "$PEERS/tokenizer"
if [ "$#" -eq 0 ]; then set -- 64 256 512; fi
.venv/bin/python benchmarks/peers_truth.py --peers "$PEERS" --tokenizer "$PEERS/tokenizer" "$@"

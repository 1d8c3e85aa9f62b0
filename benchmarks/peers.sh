#!/usr/bin/env bash
# Side by side with the peer tools: AIPerf, GuideLLM and vLLM's `bench serve`, each installed
# from the package index into its own venv under benchmarks/.peers-venv/ (never the project's
# venv), and this library's `benchmark --target openai`, against one loopback simulator's
# OpenAI-compatible chat route, at 1, 64 and 256 streams. benchmarks/peers_truth.py starts the
# simulator, runs each tool, and prints its p50 TTFT beside the simulator's truth.
#
#   bash benchmarks/peers.sh [STREAMS...]      # default: 1 64 256
#
# Needs network access (the package index, and the tokenizer the peers count tokens with:
# TOKENIZER, default gpt2, from the Hugging Face Hub). Versions are pinned here and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
AIPERF_VERSION=${AIPERF_VERSION:-0.13.0}
GUIDELLM_VERSION=${GUIDELLM_VERSION:-0.8.1}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
export TOKENIZER=${TOKENIZER:-gpt2}
PEERS=benchmarks/.peers-venv
for tool in aiperf guidellm vllm; do
  if [ ! -x "$PEERS/$tool/bin/python" ]; then
    python3 -m venv "$PEERS/$tool"
  fi
done
"$PEERS/aiperf/bin/pip" install -q "aiperf==$AIPERF_VERSION"
"$PEERS/guidellm/bin/pip" install -q "guidellm==$GUIDELLM_VERSION"
"$PEERS/vllm/bin/pip" install -q "vllm==$VLLM_VERSION"  # the client only: `vllm bench serve`
for tool in aiperf guidellm vllm; do
  echo "$tool $("$PEERS/$tool/bin/pip" show "$tool" | awk '/^Version/ {print $2}')"
done
if [ "$#" -eq 0 ]; then set -- 1 64 256; fi
.venv/bin/python benchmarks/peers_truth.py --peers "$PEERS" "$@"

"""A discrete-event simulation of each serving engine's continuous-batching scheduler over the
performance model's step costs (``planning.performance.CopyModel``), as Vidur (Agrawal et al.,
"Vidur: A Large-Scale Simulation Framework for LLM Inference", MLSys 2024) does over profiled
operator costs: one event loop (``loop``), one policy per engine (``tgi``, ``vllm``,
``trtllm``, ``neuronx``), chosen from an engine profile's own fields (``selection``)."""

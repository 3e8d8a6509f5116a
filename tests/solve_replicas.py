"""The replicas the per-call solver tests run on: dense and MoE, tensor, pipeline and attention-DP parallel, MTP,
across servers; each built by :func:`aisize.serving.estimate` at 1,000 / 300 tokens."""

from __future__ import annotations

from aisize import serving
from aisize.serving.estimate import replica_of

REPLICAS = {
    "dense 8B, TP 1": dict(model="llama-3-8b", accelerator="h100-sxm", tensor_parallel=1),
    "dense 70B, TP 4, FP8": dict(model="llama-3-70b", accelerator="h100-sxm", tensor_parallel=4,
                                 weight_precision="fp8", kv_precision="fp8"),
    "405B, PP 2": dict(model="llama-3.1-405b", accelerator="h100-sxm", tensor_parallel=8, pipeline_parallel=2,
                       weight_precision="fp8", engine="vllm"),
    "MoE, MTP, attention DP": dict(model="deepseek-v3", accelerator="h200-sxm", tensor_parallel=8, attention_dp=8,
                                   weight_precision="fp8", speculative_method="mtp", speculative_tokens=2),
    "MoE across servers": dict(model="deepseek-r1", accelerator="h100-sxm", tensor_parallel=16, expert_parallel=16,
                               attention_dp=16, weight_precision="fp8", engine="sglang", concurrency=64),
}


def replica(name: str):
    """The :class:`~aisize.serving.replica.Replica` of ``REPLICAS[name]`` (at 1 request/s where no concurrency)."""
    kw = dict(REPLICAS[name])
    kw.setdefault("input_tokens", 1000)
    kw.setdefault("output_tokens", 300)
    if "concurrency" not in kw:
        kw["requests_per_s"] = 1.0
    return replica_of(serving.estimate(kw.pop("model"), kw.pop("accelerator"), **kw))

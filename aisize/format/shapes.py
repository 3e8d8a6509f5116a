"""Shapes as text: a serving replica's split (TP, PP, attention DP), a disaggregated service's pools and a
training layout, each in one wording on every surface."""

from __future__ import annotations

from aisize.format.quantities import count


def parallelism(tensor_parallel: int, pipeline_parallel: int = 1, attention_dp: int = 1) -> str:
    """One replica's split: "TP 4", "TP 1 × PP 2", "TP 8 (attention DP 8)"; its GPUs are TP × PP."""
    text = f"TP {tensor_parallel}" + (f" × PP {pipeline_parallel}" if pipeline_parallel > 1 else "")
    return text + (f" (attention DP {attention_dp})" if attention_dp > 1 else "")


def pool_shapes(service) -> tuple[str, str] | None:
    """A disaggregated service's pools, short: ("10 × TP 1 × PP 2", "3 × TP 4"); None when it is not one."""
    p = service.pools
    if service.serving_mode != "disaggregated" or p is None or not p.feasible:
        return None
    prefill = p.prefill_shape
    return (f"{count(p.prefill_replicas)} × " + parallelism(p.prefill_tensor_parallel, p.prefill_pipeline_parallel,
                                                           prefill.attention_dp if prefill is not None else 1),
            f"{count(p.decode_replicas)} × " + parallelism(p.decode_tensor_parallel, p.decode_pipeline_parallel,
                                                          p.decode_attention_dp))


def layout(lay, *, recompute: bool = True) -> str:
    """A training layout in one wording on every surface, its parts multiplying to its GPUs:
    "TP2 PP1 CP2 DP2 ZeRO-3 mb1" (EP where experts spread, the schedule's chunks where stages interleave),
    then "recompute none" (a :class:`~aisize.plan.training` layout: tensor_parallel, pipeline_parallel,
    context_parallel, data_parallel, expert_parallel, zero_stage, micro_batch, recompute)."""
    cp = getattr(lay, "context_parallel", 1)
    ep = getattr(lay, "expert_parallel", 1)
    vs = getattr(lay, "virtual_stages", 1)
    text = (f"TP{lay.tensor_parallel} PP{lay.pipeline_parallel}" + (f"x{vs}" if lay.pipeline_parallel > 1 and vs > 1
                                                                   else "")
            + f" CP{cp} DP{lay.data_parallel}" + (f" EP{ep}" if ep > 1 else "")
            + f" ZeRO-{lay.zero_stage} mb{lay.micro_batch}")
    return text + (f" recompute {lay.recompute}" if recompute else "")


def serving_shape(service) -> str:
    """How a service's GPUs are laid out, adding up to its GPUs: "13 replicas × TP 4", or, disaggregated,
    "10 prefill replicas × TP 1 × PP 2 + 3 decode replicas × TP 4" (an :class:`aisize.plan.InferencePlan`)."""
    pools = pool_shapes(service)
    if pools is not None:
        (n_p, split_p), (n_d, split_d) = (text.split(" × ", 1) for text in pools)
        return (f"{n_p} prefill replica{'' if n_p == '1' else 's'} × {split_p} + "
                f"{n_d} decode replica{'' if n_d == '1' else 's'} × {split_d}")
    n = service.replicas
    return f"{count(n)} replica{'' if n == 1 else 's'} × " + parallelism(
        service.tensor_parallel, service.pipeline_parallel, service.attention_dp)

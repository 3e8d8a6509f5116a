"""The report's inference section: replica shapes and fleets, SLOs under load, disaggregated pools, memory.

Every figure comes from the plan (:class:`aisize.plan.InferencePlan`) or from
:mod:`aisize.serving` (the latency curve and the configuration search); nothing
is recomputed here.
"""

from __future__ import annotations

from aisize import charts
from aisize import format as F
from aisize.plan import context as plan_context
from aisize.plan import latency_curve
from aisize.plan.frontier import configuration_search
from aisize.report.context import ReportContext
from aisize.report.markup import (DASH, Html, block, count, duration, figure, gib, note, pct, per_s, rate, sig,
                                  table, yes_no)
from aisize.validation.serving import family_summary


def _shape(i) -> str:
    # the plan's one wording, adding up to the GPUs (both pools when disaggregated): every surface writes it
    return F.serving_shape(i) + ("" if i.tp_searched else " (given)")


def inference(ctx: ReportContext) -> Html:
    """Per service: shape, fleet, SLOs under the planned load, disaggregated pools, memory and charts."""
    p = ctx.plan
    fleet = [[i.name, i.serving_mode, _shape(i), f"{i.estimate.weight_precision}/{i.estimate.kv_precision}"
              if i.estimate else DASH, f"{count(i.batch)} / {count(i.max_batch)}",
              sig(i.output_tokens_per_s_per_replica), count(i.replicas), count(i.gpus), count(i.servers)]
             for i in p.inference]
    fleet_t = table(["Service", "Mode", "Shape", "Weights / KV", "Batch mean / max",
                     "Capacity / replica [output tokens/s]", "Replicas", "GPUs", "Servers"], fleet,
                    # a disaggregated shape names both pools: it wraps
                    caption="Serving plan: replica shape and fleet", css="numeric wrap3")
    slo = [[i.name, f"{i.requests_per_s:g}/s", pct(i.utilisation), duration(i.ttft_seconds),
            duration(i.ttft_p95_seconds), duration(i.ttft_p99_seconds), duration(i.tpot_seconds),
            duration(i.tpot_p95_seconds), duration(i.tpot_p99_seconds),
            f"{duration(i.ttft_target_seconds)} / {duration(i.tpot_target_seconds)} ({i.slo_statistic})",
            yes_no(i.ttft_met and i.tpot_met, "met", "missed")] for i in p.inference]
    slo_t = table(["Service", "Load", "Util.", "TTFT mean", "TTFT p95", "TTFT p99", "TPOT mean", "TPOT p95",
                   "TPOT p99", "Targets TTFT / TPOT", "SLOs"], slo, caption="Latency under the planned load",
                  css="numeric")
    mem = [[i.name, gib(i.weights_bytes), gib(i.kv_bytes_per_user), gib(i.memory_per_gpu_bytes["total_bytes"]),
            gib(i.gpu_memory_bytes), yes_no(i.fits), gib(i.host_memory_needed_bytes), yes_no(i.host_memory_fits)]
           for i in p.inference]
    mem_t = table(["Service", "Weights (model)", "KV cache / request", "Memory / GPU", "GPU memory", "Fits",
                   "Host RAM need / server", "Fits"], mem, caption="Memory", css="numeric")
    cal = plan_context.serving_calibration(ctx.scenario.policies)
    acc, load = family_summary("serving", cal), family_summary("serving-load", cal)
    chosen = ctx.scenario.policies.serving_calibration
    which = (f"calibration {cal.name}, from {chosen.file}, selected by the scenario" if chosen
             else f"calibration {cal.name}, aisize's default")
    hardware = plan_context.resolve(ctx.scenario.hardware)
    out = [block(fleet_t, note(
        "Shape: replicas × TP GPUs per pipeline stage × PP stages (stages may span servers); ADP: attention "
        "data-parallel groups of an MoE model, its experts spread over all the stage's GPUs; a disaggregated "
        "service shows both pools, and its batch and capacity are a decode replica's. The shape "
        "and replica count are the fewest GPUs that keep the TTFT and TPOT targets at the planned load. "
        "Capacity is the replica's output tokens/s with every request waiting (max throughput).")),
        block(slo_t, note(
            f"Continuous batching under Poisson arrivals: iteration-level roofline ({which}), Little's law for the "
            f"batch, M/G/c admission and the prompts' wait for "
            f"the token budget. The knee (where mean request latency doubles) is at "
            + ", ".join(f"{per_s(i.knee_requests_per_s)} for {i.name}" for i in p.inference)
            + f". With this calibration, against {acc['cases']} published TensorRT-LLM max-throughput runs the "
            f"model lands "
            f"{acc['within']} within 15 % (median error {F.points(acc['median_abs_error_pct'])} %), against "
            f"{load['cases']} runs at a fixed concurrency {load['within']} (TPOT {load['tpot_within']}; median "
            f"{F.points(load['median_abs_error_pct'])} %); see the accuracy appendix.")),
        block(mem_t)]
    pools = [i for i in p.inference if i.pools is not None and i.pools.feasible]
    if pools:
        rows = [[i.name, i.serving_mode, *F.pool_shapes(i), count(i.pools.prefill_gpus),
                 count(i.pools.decode_gpus), gib(i.pools.kv_bytes_per_request), duration(i.pools.kv_transfer_s),
                 rate(i.pools.kv_link_bytes_per_s), pct(i.pools.kv_link_utilisation)] for i in pools]
        out.append(block(table(["Service", "Chosen mode", "Prefill pool", "Decode pool", "Prefill GPUs",
                                "Decode GPUs", "KV / request", "KV transfer", "KV traffic", "Prefill NIC load"],
                               rows, caption="Disaggregated prefill and decode pools", css="numeric"),
                         note("Prefill and decode on separate GPUs (DistServe, Splitwise): each request's KV "
                              "cache travels from its prefill GPUs over their scale-out NICs.")))
    for i in p.inference:
        out.append(block(figure(charts.memory_breakdown(i.memory_per_gpu_bytes, i.gpu_memory_bytes,
                                                        title=f"{i.name}: memory per GPU"),
                                f"{i.name}: weights, KV cache at the planned batch and runtime memory "
                                "on one GPU, against the GPU's memory.")))
        # a disaggregated service's curve is its pools' (plan.latency_curve), the model of its figures, as the app
        # draws it; it had none here
        pools = i.serving_mode == "disaggregated" and i.pools_estimate is not None and i.pools_estimate.feasible
        if pools or (i.estimate is not None and i.estimate.feasible):
            out.append(block(figure(charts.serving_latency(latency_curve(i, 40), i.ttft_target_seconds,
                                                           i.tpot_target_seconds, i.requests_per_s,
                                                           title=f"{i.name}: TTFT and TPOT vs load "
                                                                 f"({F.serving_shape(i)})"),
                                    f"{i.name}: mean and p95 latencies as the request rate rises, with the "
                                    "targets (red) and the planned load (grey).")))
        if i.estimate is not None and i.estimate.feasible:
            out.append(block(_frontier(i, hardware.scaleout_bytes_per_s)))
    return Html("".join(out))


def _frontier(i, scaleout_bytes_per_s) -> Html:
    """The configuration search's frontier for the service's model, GPU, lengths and targets."""
    r = configuration_search(i, scaleout_bytes_per_s)
    caption = (f"{i.name}: {r.configurations:,} configurations (shapes × batches × token budgets, aggregated and "
               f"disaggregated); the line is the frontier of those that fit, grey points those meeting the targets.")
    if not len(r.frontier):
        return note(f"{i.name}: no configuration fits the GPU.")
    return figure(charts.serving_frontier(r.frontier, r.feasible, title=f"{i.name}: tokens/s per GPU vs per user"),
                  caption)

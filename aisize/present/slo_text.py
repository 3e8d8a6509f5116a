"""Why a service misses its targets, in words: the one sentence every surface (findings, the Inference tab, JSON)
shows for an :class:`aisize.plan.slo_reason.SloReason`, worded from its typed parts alone."""

from __future__ import annotations


def unmet_targets_text(u) -> str:
    """The planner's miss (:class:`aisize.plan.slo_reason.UnmetTargets`): the nearest shape at the screen's count
    and the TTFT and TPOT it reaches beside their targets (ms: TTFT to 1 ms, TPOT to 0.1 ms)."""
    stat = u.statistic
    return (f"none of the {u.shapes_tried} best shapes the screen found meets the targets as estimated, with up to "
            f"{u.top_up_steps} steps of {u.top_up_share:.0%} more replicas; at the screen's count, {u.replicas} x "
            f"TP {u.tensor_parallel}"
            + (f" x PP {u.pipeline_parallel}" if u.pipeline_parallel > 1 else "")
            + (f" (attention DP {u.attention_dp})" if u.attention_dp > 1 else "")
            + f", reaches TTFT {stat} {u.ttft_seconds * 1e3:,.0f} ms (target {u.ttft_target_seconds * 1e3:,.0f} ms) "
            f"and TPOT {stat} {u.tpot_seconds * 1e3:,.1f} ms (target {u.tpot_target_seconds * 1e3:,.1f} ms)")


def slo_reason_text(reason) -> str:
    """Why a service's targets are not met (an :class:`aisize.plan.slo_reason.SloReason`, or None: ""): the
    refusal of disaggregated pools, then the aggregated fleet's refusal or miss, joined by "; "."""
    if reason is None:
        return ""
    fleet = reason.screen_refusal or (unmet_targets_text(reason.unmet) if reason.unmet is not None else "")
    pools = f"disaggregated: {reason.pools_refusal}" if reason.pools_refusal is not None else ""
    return "; ".join(r for r in (pools, fleet) if r)


__all__ = ["slo_reason_text", "unmet_targets_text"]

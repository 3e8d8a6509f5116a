"""Why a service's plan does not meet its TTFT and TPOT targets, as typed values (issue 47 item 4: the planner
writes no sentences). :func:`aisize.present.slo_text.slo_reason_text` words them, once, for every surface.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnmetTargets:
    """The screen found shapes that meet the targets, but none does as the plan estimates it
    (aisize.plan.replica_count): the shape that comes nearest, at the screen's replica count, with its figures."""

    shapes_tried: int  # the screen's best shapes sized again with the full estimate
    top_up_steps: int  # replicas added a step at a time, at most this many steps ...
    top_up_share: float  # ... each this share (0-1) of the fleet
    replicas: int  # the screen's count of the nearest shape
    tensor_parallel: int
    pipeline_parallel: int
    attention_dp: int
    statistic: str  # p95 | p99 | mean: what the targets bound
    ttft_seconds: float  # the nearest shape's, at the statistic
    ttft_target_seconds: float
    tpot_seconds: float
    tpot_target_seconds: float


@dataclass(frozen=True)
class SloReason:
    """Why a service's targets are not met as planned, by part: the refusals are serving's own error words
    (aisize.serving), carried as they are; the planner's part is typed (:class:`UnmetTargets`)."""

    # aisize.serving.disaggregated.size_pools's refusal of prefill and decode pools (None: none asked or refused)
    pools_refusal: str | None = None
    screen_refusal: str = ""  # aisize.serving.sizing.choose_fleet's: no replica shape holds the model or meets ...
    unmet: UnmetTargets | None = None  # the screen found shapes; the plan's estimate misses with the nearest


__all__ = ["SloReason", "UnmetTargets"]

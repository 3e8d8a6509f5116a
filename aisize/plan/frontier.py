"""The configuration search of a planned service: every shape, batch and token budget for its model, GPU,
lengths and targets (:func:`aisize.serving.search`), read by the report's frontier chart.

The planner runs it, with the planned service's own model, engine and calibration, so no surface builds a
search of its own from other inputs (issue 47: the report ran ``serving.search`` itself).
"""

from __future__ import annotations

from aisize import serving
from aisize.plan.inference import InferencePlan


def configuration_search(p: InferencePlan, scaleout_bytes_per_s: float):
    """:class:`aisize.serving.SearchResult` for the service ``p`` as planned (its estimate's model record,
    accelerator, formats, engine and calibration; the TTFT/TPOT targets at its SLO statistic) on a fabric of
    ``scaleout_bytes_per_s`` per GPU. Raises ValueError where the plan has no estimate (nothing fits)."""
    e = p.estimate
    if e is None:
        raise ValueError(f"{p.name}: no replica fits, so there is no configuration to search")
    return serving.search(e.model_record, e.accelerator_record or e.accelerator, input_tokens=e.input_tokens,
                          output_tokens=e.output_tokens, ttft_target_s=p.ttft_target_seconds,
                          tpot_target_s=p.tpot_target_seconds, statistic=p.slo_statistic,
                          weight_precisions=(e.weight_precision,), kv_precisions=(e.kv_precision,),
                          scaleout_bytes_per_s=scaleout_bytes_per_s,
                          engine=e.engine_record or serving.ENGINES[e.engine],
                          calibration=e.calibration_record or serving.CALIBRATION)

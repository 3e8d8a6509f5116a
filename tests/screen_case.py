"""The sizing screen's case shared by the solver tests: Llama 3 70B in bf16 on H100 under vLLM, up to four 8-GPU
servers, a rate-given service with TTFT and TPOT targets, every solve and screen cache cleared first."""

from __future__ import annotations

from aisize import models, serving
from aisize.serving import latency as L
from aisize.serving import sizing
from aisize.serving.calibration import CALIBRATION


def cold_shapes():
    """(arch, engine, candidate shapes) of the case, with the screen's and the solves' caches cleared."""
    arch, engine = models.resolve("llama-3-70b"), serving.ENGINES["vllm"]
    dev = serving.hardware.device("h100-sxm", "bf16", "bf16")
    shapes = sizing.candidate_shapes(arch, dev, scaleout_bytes_per_s=50e9, gpus_per_server=8, max_servers=4,
                                     engine=engine)
    sizing._shape_grid.cache_clear()
    sizing._slo_rates.cache_clear()
    L._clear()
    return arch, engine, shapes


def choose(arch, engine, shapes):
    """``sizing.choose_fleet`` of the case: 2,000/300 tokens at 100 requests/s, TTFT 0.5 s and TPOT 40 ms."""
    return sizing.choose_fleet(arch, "h100-sxm", weight_precision="bf16", kv_precision="bf16", input_tokens=2000,
                               output_tokens=300, requests_per_s=100.0, ttft_target_s=0.5, tpot_target_s=0.04,
                               shapes=shapes, engine=engine, calibration=CALIBRATION)

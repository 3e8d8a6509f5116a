"""The MoE decode step shared by the MoE-layer time tests: 4, 64 and 256 sequences at a 2,000-token context on 8
GPUs with experts over all 8, and a model's costs in one expert format with an FP8 KV cache."""

import numpy as np

from aisize import models
from aisize.serving.costs import model_costs, weight_formats

STEP = dict(decode_sequences=np.array([4.0, 64.0, 256.0]), decode_context=2000.0, prefill_tokens=0.0,
            prefill_prompts=0.0, prompt_tokens=1000.0, gpus=8.0, expert_parallel=8.0)


def costs_of(model: str, fmt: str):
    return model_costs(models.resolve(model), weight_formats(fmt), "fp8")

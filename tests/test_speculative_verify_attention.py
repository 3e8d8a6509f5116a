"""A speculative verify pass of an MLA model reads each sequence's latent KV cache once from the measured kernels.

MLA decode kernels pack a sequence's k + 1 query tokens with its query heads over the one latent head
(FlashMLA's ``get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)``), so with ``attention_source="kernels"``
the verify is the generation-MLA table at the sequences' batch with (k + 1) x the heads per GPU, not
AIConfigurator's batch x (k + 1) (``aisize/serving/speculative.py`` [7, 8]; docs/calibration-mtp.md).
"""

import numpy as np
import pytest

from aisize import models, serving
from aisize.serving import kernel_attention
from aisize.serving.estimate import replica_of
from aisize.serving.iteration import iteration_time
from aisize.serving.speculative import verify_attention_lookup

CONTEXT = 7834.0  # a 7,373-token prompt half-way through 922 output tokens


@pytest.fixture(scope="module")
def replica():
    est = serving.estimate("deepseek-r1", "h200-sxm", tensor_parallel=8, weight_precision="fp8", kv_precision="fp8",
                           input_tokens=7373, output_tokens=922, concurrency=16, engine="trtllm",
                           speculative_method="mtp", speculative_tokens=3,
                           calibration=serving.CALIBRATION.with_(attention_source="kernels"))
    return replica_of(est)


def test_the_lookup_packs_verify_tokens_as_heads_for_mla_only():
    assert verify_attention_lookup(models.resolve("deepseek-r1"), 16.0, 4.0, 8) == (16.0, 2.0)
    assert verify_attention_lookup(models.resolve("deepseek-r1"), 16.0, 1.0, 8) == (16.0, 8)
    assert verify_attention_lookup(models.resolve("llama-3.1-70b"), 16.0, 4.0, 8) == (64.0, 8)


def test_the_verify_reads_the_table_at_the_sequences_batch(replica):
    rep = replica
    assert rep.speculation.verify_tokens == 4 and rep.rates.kernel_attention is not None
    it = iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=16.0, decode_context=CONTEXT,
                        prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=7373.0, speculation=rep.speculation,
                        **rep.shape.kwargs())
    once, ok = kernel_attention.decode_seconds(rep.costs, *rep.rates.kernel_attention, 16.0, CONTEXT, 2.0, np.nan)
    batch_x4, ok4 = kernel_attention.decode_seconds(rep.costs, *rep.rates.kernel_attention, 64.0, CONTEXT, 8.0,
                                                    np.nan)
    assert bool(ok) and bool(ok4)
    assert float(it.decode_attention_seconds) == pytest.approx(float(once), rel=1e-12)
    # 64 heads over 16 caches read once: well under 16 heads over 64 caches (H200 TensorRT-LLM table)
    assert float(once) < 0.6 * float(batch_x4)

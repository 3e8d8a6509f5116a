"""Layout search: grid consistency, searched rows equal estimate() of the same layout, bad input."""

import numpy as np
import pytest

from aisize import catalog
from aisize.models import from_hf_config
from aisize.training import estimate, layout_grid, search_layouts
from aisize.units import GB

H100 = catalog.accelerators["h100-sxm"]
# meta-llama/Meta-Llama-3-70B config.json
LLAMA3_70B = from_hf_config({
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
    "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256,
    "max_position_embeddings": 8192, "tie_word_embeddings": False, "rms_norm_eps": 1e-5})


def _flat(grid, name):
    return np.broadcast_to(getattr(grid, name), grid.shape)[grid.valid]


def test_grid_is_consistent_with_cp_and_interleaving():
    g = layout_grid(64, heads=64, layers=80, global_batch=128, seq_len=8192, scaleup_domain=8)
    tp, pp, cp, dp, mb = (_flat(g, n) for n in ("tp", "pp", "cp", "dp", "micro_batch"))
    v, sched = _flat(g, "virtual_stages"), _flat(g, "schedule")
    assert g.count == tp.size > 1000
    assert (tp * pp * cp * dp == 64).all() and (64 % tp == 0).all() and (tp <= 8).all()
    assert (8192 % cp == 0).all() and (cp > 1).any()
    assert (128 % (mb * dp) == 0).all()
    inter = sched == 1
    assert inter.any() and (pp[inter] >= 2).all() and ((80 // pp[inter]) % v[inter] == 0).all()
    assert (v[~inter] == 1).all()


def test_grid_over_several_gpu_counts_and_sequences():
    g = layout_grid([64, 128], heads=64, layers=80, global_batch=[128, 256], seq_len=[4096, 8192],
                    scaleup_domain=8)
    n, s = _flat(g, "gpus"), _flat(g, "seq_len")
    assert set(n) == {64, 128} and set(s) == {4096, 8192}


def test_search_rows_equal_estimate_of_the_same_layout():
    df = search_layouts(LLAMA3_70B, H100, 64, global_batch=128, seq_len=4096, top=5)
    assert len(df) == 5 and df.step_seconds.is_monotonic_increasing
    assert (df.total_bytes <= 0.95 * H100.memory_visible_bytes).all()
    for r in df.itertuples():
        pp = r.pp > 1
        e = estimate(LLAMA3_70B, H100, gpus=64, tensor_parallel=r.tp, pipeline_parallel=r.pp, context_parallel=r.cp,
                     schedule=r.schedule, virtual_stages=r.virtual_stages if r.schedule == "interleaved-1f1b" else None,
                     micro_batch=r.micro_batch * r.microbatches if pp else r.micro_batch,
                     pipeline_microbatches=r.microbatches if pp else None, global_batch=128, seq_len=4096,
                     recompute=r.recompute, recompute_layers=r.recompute_layers if r.recompute == "full" else None,
                     zero_stage=r.zero_stage, compiled=True)
        assert e.step_seconds == pytest.approx(r.step_seconds)
        assert e.peak_memory_bytes == pytest.approx(r.total_bytes)
        assert e.mfu == pytest.approx(r.mfu)
    assert 0.2 < df.mfu.iloc[0] < 0.8


def test_moe_search_folds_experts_and_tries_partial_recompute():
    # expert TP and a share of each chunk's layers under full recompute are axes of the grid; the
    # rows equal estimate() of the same layout
    df = search_layouts("qwen3-30b-a3b", "b200", 16, global_batch=256, seq_len=4096, framework="megatron",
                        precision="fp8", top=200)
    assert set(df.expert_tensor_parallel) >= {1} and (df.ep > 1).any()
    full = df[df.recompute == "full"]
    assert len(full) and (full.recompute_layers >= 1).all()
    for r in df.head(3).itertuples():
        pp = r.pp > 1
        e = estimate("qwen3-30b-a3b", "b200", gpus=16, tensor_parallel=r.tp, pipeline_parallel=r.pp,
                     context_parallel=r.cp, expert_parallel=r.ep, expert_tensor_parallel=r.expert_tensor_parallel,
                     schedule=r.schedule, virtual_stages=r.virtual_stages if r.schedule == "interleaved-1f1b" else None,
                     micro_batch=r.micro_batch * r.microbatches if pp else r.micro_batch,
                     pipeline_microbatches=r.microbatches if pp else None, global_batch=256, seq_len=4096,
                     recompute=r.recompute, recompute_layers=r.recompute_layers if r.recompute == "full" else None,
                     zero_stage=r.zero_stage, framework="megatron", precision="fp8", compiled=True)
        assert e.step_seconds == pytest.approx(r.step_seconds)
        assert e.peak_memory_bytes == pytest.approx(r.total_bytes)


def test_search_with_megatron_and_lora():
    df = search_layouts(LLAMA3_70B, H100, 64, global_batch=128, seq_len=4096, framework="megatron", top=3)
    assert set(df.zero_stage) <= {0, 1}
    # LoRA on Llama-3-70B fits one 8-GPU server (the XE9680 seed case) where full training does not
    assert search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096).empty
    lora = search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096, lora_rank=16, top=3)
    assert len(lora) == 3
    with pytest.raises(ValueError, match="qlora"):
        search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096, qlora=True)


def test_ranking_does_not_depend_on_top():
    a = search_layouts(LLAMA3_70B, H100, 64, global_batch=128, seq_len=4096, top=1)
    b = search_layouts(LLAMA3_70B, H100, 64, global_batch=128, seq_len=4096, top=20)
    assert a.iloc[0].equals(b.iloc[0])


def test_search_finds_context_parallel_for_long_sequences():
    df = search_layouts("llama-3-8b", H100, 64, global_batch=8, seq_len=131072, top=3, precision="fp8")
    assert len(df) and (df.cp > 1).all()


@pytest.mark.parametrize("kwargs, name", [
    (dict(gpus=0), "gpus"), (dict(recomputes=("none", "most")), "recomputes"),
    (dict(micro_batches=[0, 1]), "micro_batches"), (dict(global_batch=-1), "global_batch"),
    (dict(schedules=("gpipe",)), "schedules"), (dict(virtual_stages=(1,)), "virtual_stages"),
    (dict(seq_len=0), "seq_len"),
])
def test_bad_input(kwargs, name):
    args = dict(gpus=8, heads=64, layers=80, global_batch=64, seq_len=4096, scaleup_domain=8) | kwargs
    with pytest.raises(ValueError, match=name):
        layout_grid(**args)


def test_search_bad_precision():
    with pytest.raises(ValueError, match="precision"):
        search_layouts(LLAMA3_70B, H100, 8, global_batch=8, seq_len=4096, precision="int3")


def test_no_consistent_layout_is_a_clear_error():
    # 8,464 GPUs = 2^4 x 23^2; TP (divides 64 heads), PP (<= 80 layers) and CP cannot take the 23^2,
    # so DP keeps it and never divides the 2,048-sequence batch.
    with pytest.raises(ValueError, match="global_batch=2048 is not allowed for gpus=8464"):
        search_layouts("llama-3-70b", H100, 8464, global_batch=2048, seq_len=8192, context_parallel=(1,),
                       scaleout_bytes_per_s=50e9)


def test_memory_limit_respected_units():
    df = search_layouts("llama-3-8b", H100, 8, global_batch=64, seq_len=4096, headroom=0.5, top=50)
    assert (df.total_bytes <= 0.5 * H100.memory_visible_bytes).all() and len(df)
    assert GB == 1e9

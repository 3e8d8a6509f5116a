"""Layout search: grid consistency, vectorized results equal the scalar functions, bad input."""

import numpy as np
import pytest

from aisize.models import from_hf_config
from aisize.catalog.records import Accelerator
from aisize.layout import layout_grid, search_layouts
from aisize.memory import transformer_training_memory
from aisize.step_time import step_time
from aisize.units import GB

# H100 SXM datasheet figures (reference/gpu_specs.csv): 80 GB, 989.5 TFLOP/s dense bf16, NVLink 900 GB/s
# both directions, 8 GPUs per NVLink domain (HGX H100), 700 W.
H100 = Accelerator(id="h100-test", name="H100 SXM", vendor="NVIDIA", form_factor="SXM5", memory_type="HBM3",
                   memory_label="80 GB", memory_bytes=80 * GB, memory_visible_bytes=None,
                   memory_bandwidth_bytes_per_s=3.35e12, fp32_flops_per_s=67e12, tf32_flops_per_s=494.5e12,
                   fp16_flops_per_s=989.5e12, bf16_flops_per_s=989.5e12, fp8_flops_per_s=1979e12,
                   int8_flops_per_s=1979e12, fp4_flops_per_s=None, scaleup_link="nvlink-4",
                   scaleup_bidirectional_bytes_per_s=900e9, scaleup_domain=8, pcie_gen=5, tdp_watts=700,
                   source="NVIDIA H100 datasheet", note=None)
# meta-llama/Meta-Llama-3-70B config.json
LLAMA3_70B = from_hf_config({
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
    "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256,
    "max_position_embeddings": 8192, "tie_word_embeddings": False, "rms_norm_eps": 1e-5})
NIC = 400e9 / 8  # one NDR 400 Gb/s NIC per GPU, per direction [B/s]


def test_grid_is_consistent():
    g = layout_grid(64, heads=64, layers=80, global_batch=128, scaleup_domain=8)
    assert (g["tp"] * g["pp"] * g["dp"] == 64).all()
    assert (64 % g["tp"] == 0).all() and (80 % g["pp"] == 0).all() and (g["tp"] <= 8).all()
    assert (128 % (g["micro_batch"] * g["dp"]) == 0).all()
    assert len({tuple(r) for r in np.column_stack(list(g.values()))}) == g["tp"].size  # no duplicates


def test_search_matches_scalar_functions():
    df = search_layouts(LLAMA3_70B, H100, 64, global_batch=128, seq_len=4096, scaleout_bytes_per_s=NIC,
                        framework="zero", top=5)
    assert len(df) == 5 and df.step_seconds.is_monotonic_increasing
    assert (df.total_bytes <= 0.95 * 80 * GB).all()
    best = df.iloc[0]
    mem = transformer_training_memory(
        LLAMA3_70B, seq_len=4096, micro_batch=int(best.micro_batch), tp=int(best.tp), pp=int(best.pp),
        dp=int(best.dp), sequence_parallel=True, recompute=best.recompute, zero_stage=int(best.zero_stage),
        num_microbatches=128 // (int(best.micro_batch) * int(best.dp)))
    assert best.total_bytes == pytest.approx(mem.total_bytes)
    st = step_time(active_params=70.55e9, total_params=70.55e9, layers=80, hidden=8192, seq_len=4096,
                   global_batch=128, micro_batch=int(best.micro_batch), tp=int(best.tp), pp=int(best.pp),
                   dp=int(best.dp), recompute=best.recompute, sequence_parallel=True,
                   zero_stage=int(best.zero_stage), peak_flops_per_s=989.5e12, scaleup_bytes_per_s=450e9,
                   scaleout_bytes_per_s=NIC)
    assert best.step_seconds == pytest.approx(st.step_seconds, rel=0.01)
    assert 0.2 < best.mfu < 0.6


def test_lora_search_matches_scalar_lora_memory():
    # LoRA on Llama-3-70B fits one 8-GPU server (the XE9680 seed case) where full training does not.
    assert search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096,
                          scaleout_bytes_per_s=NIC).empty
    df = search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096, scaleout_bytes_per_s=NIC,
                        lora_rank=16, top=3)
    best = df.iloc[0]
    mem = transformer_training_memory(
        LLAMA3_70B, seq_len=4096, micro_batch=int(best.micro_batch), tp=int(best.tp), pp=int(best.pp),
        dp=int(best.dp), sequence_parallel=True, recompute=best.recompute, zero_stage=int(best.zero_stage),
        num_microbatches=64 // (int(best.micro_batch) * int(best.dp)), lora_rank=16)
    assert best.total_bytes == pytest.approx(mem.total_bytes)
    with pytest.raises(ValueError, match="qlora"):
        search_layouts(LLAMA3_70B, H100, 8, global_batch=64, seq_len=4096, scaleout_bytes_per_s=NIC, qlora=True)


def test_nothing_fits_gives_empty_frame():
    df = search_layouts(LLAMA3_70B, H100, 1, global_batch=8, seq_len=4096, scaleout_bytes_per_s=NIC)
    assert df.empty


@pytest.mark.parametrize("kwargs, name", [
    (dict(gpus=0), "gpus"), (dict(recomputes=("none", "most")), "recomputes"),
    (dict(micro_batches=[0, 1]), "micro_batches"), (dict(global_batch=-1), "global_batch"),
])
def test_bad_input(kwargs, name):
    args = dict(gpus=8, heads=64, layers=80, global_batch=64, scaleup_domain=8) | kwargs
    with pytest.raises(ValueError, match=name):
        layout_grid(**args)


def test_search_bad_precision():
    with pytest.raises(ValueError, match="precision"):
        search_layouts(LLAMA3_70B, H100, 8, global_batch=8, seq_len=4096, scaleout_bytes_per_s=NIC,
                       precision="int3")


def test_no_consistent_layout_is_a_clear_error():
    # 8,464 GPUs = 2^4 x 23^2; TP (divides 64 heads) and PP (divides 80 layers) cannot take the
    # 23^2, so DP = 8,464 / (TP x PP) keeps it and never divides the 2,048-sequence batch.
    from aisize import catalog
    from aisize.layout import search_layouts

    with pytest.raises(ValueError, match="global_batch=2048 is not allowed for gpus=8464"):
        search_layouts(catalog.transformers["llama-3-70b"], catalog.accelerators["h100-sxm"], 8464,
                       global_batch=2048, seq_len=8192, scaleout_bytes_per_s=50e9)

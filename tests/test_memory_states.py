"""Model-state memory against the ZeRO paper, framework docs, accelerate and the LoRA/QLoRA papers."""

import pytest

from aisize.memory import lora_adapter_params, model_states
from aisize.precision import bits_per_element, bytes_per_element
from aisize.units import GB, GiB, MiB

PSI, ND = 7.5e9, 64  # ZeRO paper Figure 1 example


@pytest.mark.parametrize("stage, printed_gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, printed_gb):
    # Rajbhandari et al. 2020, arXiv:1910.02054, Figure 1: exact to the printed digits.
    got = model_states(PSI, zero_stage=stage, dp=ND).total_bytes / GB
    assert round(got, 1 if stage else 0) == printed_gb


def test_megatron_18_bytes_and_distributed_optimizer():
    # Megatron-LM distributed-optimizer doc: 18 B/param, 6 + 12/d with the distributed optimizer.
    assert model_states(1e9, framework="megatron").total_bytes == pytest.approx(18e9)
    assert model_states(1e9, framework="megatron", zero_stage=1, dp=8).total_bytes == pytest.approx(6e9 + 12e9 / 8)


def test_deepspeed_estimators():
    # DeepSpeed stage_1_and_2.py: gpu_mem = 2N + 18N/N_d; stage3.py: 18N/N_d (+ largest layer, a buffer).
    assert model_states(1e9, framework="deepspeed", zero_stage=2, dp=16).total_bytes == pytest.approx(2e9 + 18e9 / 16)
    assert model_states(1e9, framework="deepspeed", zero_stage=3, dp=16).total_bytes == pytest.approx(18e9 / 16)


def test_fsdp_full_shard_16_over_n():
    # PyTorch FSDP FULL_SHARD with bf16 MixedPrecision: fp32 params, fp32 grads, Adam m and v sharded.
    assert model_states(1e9, framework="fsdp", zero_stage=3, dp=8).total_bytes == pytest.approx(16e9 / 8)


@pytest.mark.parametrize("opt, master_plus_state", [("adamw", 12), ("sgd", 8), ("adam8bit", 6), ("lion", 8),
                                                     ("adafactor", 4)])
def test_optimizer_bytes(opt, master_plus_state):
    # DESIGN.md sec. 2 / precision.py sources: SGD+momentum 8 B, 8-bit Adam 6 B, Lion 8 B (with the master copy).
    s = model_states(1.0, optimizer=opt)
    assert s.master_weights_bytes + s.optimizer_moments_bytes == pytest.approx(master_plus_state)


def test_gpt2_zero_section_3():
    # ZeRO sec. 3.1: GPT-2 1.5B has 3 GB of fp16 weights and needs at least 24 GB of model states.
    s = model_states(1.5e9, precision="fp16")
    assert s.weights_bytes / GB == pytest.approx(3.0)
    assert s.total_bytes / GB == pytest.approx(24.0)


def test_accelerate_bert_base_fp32_adam():
    # accelerate estimate-memory (model_size_estimator.md): bert-base-cased fp32 413.18 MB -> Adam 1.61 GB
    # (binary units, "4 x model size"); our fp32 AdamW is weights 4 + grads 4 + moments 8 = 4x.
    params = 413.18 * MiB / 4
    assert round(model_states(params, precision="fp32").total_bytes / GiB, 2) == 1.61


def test_lora_gpt3_350gb():
    # Hu et al. 2021 (LoRA), sec. 4.2: GPT-3 175B training VRAM 1.2 TB -> 350 GB with LoRA (r=4 on q, v).
    adapters = lora_adapter_params(4, 96, [(12288, 12288), (12288, 12288)])
    s = model_states(adapters, frozen_params=175e9, frozen_dtype="fp16")
    assert s.total_bytes / GB == pytest.approx(350, rel=0.02)


def test_qlora_65b_on_48gb():
    # Dettmers et al. 2023 (QLoRA), abstract: finetune a 65B model on a single 48 GB GPU; NF4 + double
    # quantization is 4.127 bits per parameter (sec. 3).
    assert bits_per_element("nf4") == pytest.approx(4 + 0.127)
    adapters = lora_adapter_params(64, 80, [(8192, 8192)] * 4 + [(8192, 22016)] * 3)
    s = model_states(adapters, frozen_params=65.2e9, frozen_dtype="nf4")
    assert 33e9 < s.total_bytes < 48e9


def test_offload_moves_optimizer_to_host():
    # ZeRO-Offload (arXiv:2101.06840): the fp32 side lives in host RAM, fp16 weights stay on the GPU.
    s = model_states(1e9, zero_stage=2, dp=4, offload_optimizer=True)
    assert s.host_bytes == pytest.approx(12e9 / 4)
    assert s.total_bytes == pytest.approx(2e9 + 2e9 / 4)
    p = model_states(1e9, zero_stage=3, dp=4, offload_optimizer=True, offload_params=True)
    assert p.total_bytes == 0 and p.host_bytes == pytest.approx(16e9 / 4)


def test_block_scaled_formats():
    # OCP MX v1.0 (MXFP4 4.25 bit), NVIDIA NVFP4 (4.5 bit), GPTQ/AWQ group-128 (4.125 / 4.25 bit).
    assert [bits_per_element(d) for d in ("mxfp4", "nvfp4", "int4-g128", "int4-g128-zp")] == [4.25, 4.5, 4.125, 4.25]
    assert bytes_per_element("bf16") == 2 and bytes_per_element("fp8") == 1


@pytest.mark.parametrize("kwargs, name", [
    ({"trainable_params": -1}, "trainable_params"), ({"trainable_params": 0}, "trainable_params"),
    ({"trainable_params": 1e9, "precision": "fp12"}, "precision"),
    ({"trainable_params": 1e9, "optimizer": "adamax"}, "optimizer"),
    ({"trainable_params": 1e9, "framework": "jax"}, "framework"),
    ({"trainable_params": 1e9, "framework": "megatron", "zero_stage": 2}, "zero_stage"),
    ({"trainable_params": 1e9, "zero_stage": 4}, "zero_stage"),
    ({"trainable_params": 1e9, "dp": 0}, "dp"),
    ({"trainable_params": 1e9, "zero_stage": 2, "offload_params": True}, "offload_params"),
])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        model_states(**kwargs)

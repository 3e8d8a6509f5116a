"""Training throughput from measurements (data/throughput.csv), calibrated FLOPs or the policy MFU,
and the time ranges of a training plan.

Published figures: NVIDIA/DeepLearningExamples (commit 729963d) PyTorch/Classification/ConvNets/
resnet50v1.5/README.md 'Training performance results' (pytorch-21.03 NGC): 8x V100-16GB AMP 8,322
images/s, 90 epochs '~5 hours'; MXNet RN50v1.5 README: 8x V100-16GB fp16 10,723 images/s;
PyTorch/Classification/ConvNets/configs.yml: resnet50 DGX1V AMP batch_size 256 per GPU.
"""

from __future__ import annotations

import json

import pytest

from aisize import catalog
from aisize.memory.activations import other_model_activation_bytes
from aisize.plan import plan
from aisize.present.export import to_json, workloads_table
from aisize.scenario import from_dict, preset, to_dict
from aisize.present.training_text import days_range_text, throughput_basis_text
from aisize.training import TRAINING_FLOPS_PER_FORWARD_FLOP, resolve_samples_per_s
from aisize.units import HOUR
from aisize.validation.ranges import mfu_range
from aisize.present.findings import finding_text

IMAGENET_TRAIN = 1_281_167  # Russakovsky et al. 2015, Table 2
IMAGENET_RECORD_BYTES = 114_660.07  # mlcommons/storage resnet50_h100.yaml record_length_bytes
PYT_V100_AMP_8 = 8322 / 8  # images/s per GPU, DeepLearningExamples PyTorch, 8x V100-16GB AMP
MX_V100_FP16_8 = 10723 / 8  # images/s per GPU, DeepLearningExamples MXNet, 8x V100-16GB fp16
V100 = catalog.accelerators["v100-sxm2-16gb"]


def _with(name: str, edit):
    d = to_dict(preset(name))
    edit(d)
    return from_dict(d)


def _job(**update):
    return lambda d: d["workloads"][0].update(**update)


@pytest.fixture(scope="module")
def weka():
    return plan(preset("hpe-weka-resnet")).training[0]


def test_throughput_table_keeps_the_published_figures():
    rows = catalog.throughput
    assert len(rows) >= 50
    for r in rows:
        assert r.model in catalog.transformers or r.model in catalog.other_models, r.id
        assert r.accelerator in catalog.accelerators, r.id
        assert r.precision in ("fp32", "tf32", "fp16", "bf16"), r.id
        assert "DeepLearningExamples" in r.source
    # per GPU = the README's total / GPUs
    assert rows["rn50-pyt-v100-16gb-fp16-8"].samples_per_gpu_per_s == pytest.approx(PYT_V100_AMP_8)
    assert rows["rn50-pyt-v100-16gb-fp16-8"].batch_per_gpu == 256
    assert rows["rn50-mx-v100-16gb-fp16-8"].samples_per_gpu_per_s == pytest.approx(MX_V100_FP16_8, rel=1e-5)
    assert rows["bert-large-pyt-a100-80gb-fp16-256-seq128"].samples_per_gpu_per_s == pytest.approx(
        138294 / 256, rel=1e-5)


def test_hpe_weka_resnet50_uses_the_measured_v100_rate(weka):
    # 32 V100 at the PyTorch 8-GPU AMP figure, exactly; storage demand follows from it
    assert weka.throughput_rule == "measured"
    assert weka.samples_per_s_per_gpu == pytest.approx(PYT_V100_AMP_8)
    basis = throughput_basis_text(weka.throughput_basis)
    assert "measured" in basis and "8x Tesla V100 SXM2 16GB" in basis
    assert "DeepLearningExamples" in weka.throughput_source
    ideal = 32 * PYT_V100_AMP_8 * IMAGENET_RECORD_BYTES  # ~3.82 GB/s
    assert weka.ideal_read_bytes_per_s == pytest.approx(ideal, rel=1e-9)
    assert weka.read_bytes_per_s == pytest.approx(0.9 * ideal, rel=1e-9)
    compute = 90 * IMAGENET_TRAIN / (32 * PYT_V100_AMP_8)
    assert weka.training_seconds == pytest.approx(compute / weka.goodput, rel=1e-9)
    # implied MFU: 1,040 x 3 x 8.18 GFLOP / 125 TFLOP/s = 20.4 %
    assert weka.mfu_assumed == pytest.approx(PYT_V100_AMP_8 * 3 * 8.18e9 / 125e12, rel=1e-9)


def test_hpe_weka_resnet50_batch_256_amp_fits_a_16gb_v100(weka):
    # DeepLearningExamples configs.yml trains resnet50 on DGX1V (V100 16 GB) with AMP at batch 256 per GPU
    assert weka.layout.micro_batch == 256 and weka.memory_fits


def test_eight_v100_take_about_the_published_five_hours():
    # README: 90 epochs on 8x V100-16GB AMP '~5 hours' (that wall time includes a validation pass
    # per epoch and start-up, which the plan does not count): aisize gives the pure training time,
    # 90 x 1,281,167 / 8,322 = 3.85 h, so within 30 % below the published figure.
    t = plan(_with("hpe-weka-resnet", _job(gpus=8))).training[0]
    hours = t.training_seconds / HOUR
    assert hours == pytest.approx(90 * IMAGENET_TRAIN / 8322 / HOUR / t.goodput, rel=1e-9)
    assert 0.7 * 5 <= hours <= 5


def test_measured_range_is_the_framework_spread_not_mfu(weka):
    # multi-GPU V100-16GB AMP measurements: PyTorch 1,040, TensorFlow 1,189, MXNet 1,340 images/s per GPU
    assert weka.days_high == pytest.approx(weka.training_days)
    assert weka.days_low == pytest.approx(weka.training_days * PYT_V100_AMP_8 / MX_V100_FP16_8, rel=1e-5)
    assert "not MFU-based" in days_range_text(weka.days_range_basis)


def test_other_models_on_v100_are_calibrated_on_resnet50():
    # ResNet-152 has no measurement: FLOPs at ResNet-50's implied MFU on the same GPU and precision
    t = plan(_with("hpe-weka-resnet", _job(model="resnet-152"))).training[0]
    r50, r152 = catalog.other_models["resnet-50"], catalog.other_models["resnet-152"]
    assert t.throughput_rule == "calibrated"
    expected = PYT_V100_AMP_8 * r50.forward_per_sample_flops / r152.forward_per_sample_flops
    assert t.samples_per_s_per_gpu == pytest.approx(expected, rel=1e-9)
    basis = throughput_basis_text(t.throughput_basis)
    assert "ResNet-50's measured efficiency" in basis and "20.4 %" in basis
    assert t.days_low < t.training_days == pytest.approx(t.days_high)


def test_bf16_on_a100_uses_the_fp16_amp_measurement():
    # A100's dense bf16 and fp16 peaks are both 312 TFLOP/s: the AMP (fp16) figure stands for bf16
    r = resolve_samples_per_s(catalog.other_models["resnet-50"], catalog.accelerators["a100-sxm-80gb"],
                              precision="bf16", gpus=8)
    assert r.rule == "measured" and r.samples_per_s_per_gpu == pytest.approx(16621 / 8, rel=1e-5)
    assert "for bf16 (same peak)" in r.basis
    single = resolve_samples_per_s(catalog.other_models["resnet-50"], catalog.accelerators["a100-sxm-80gb"],
                                   precision="bf16", gpus=1)
    assert single.samples_per_s_per_gpu == pytest.approx(2470)  # 1 GPU: the single-GPU figure


def test_no_measurement_falls_back_to_the_policy_mfu():
    r50, h100 = catalog.other_models["resnet-50"], catalog.accelerators["h100-sxm"]
    r = resolve_samples_per_s(r50, h100, precision="bf16", gpus=8, efficiency=0.3, measurements=[])
    assert r.rule == "policy-mfu" and r.source is None
    assert r.samples_per_s_per_gpu == pytest.approx(989.4e12 * 0.3 / (TRAINING_FLOPS_PER_FORWARD_FLOP * 8.18e9))
    assert r.low_samples_per_s_per_gpu == r.high_samples_per_s_per_gpu == r.samples_per_s_per_gpu


def test_scenario_throughput_overrides_everything():
    t = plan(_with("hpe-weka-resnet", _job(samples_per_s_per_gpu=500.0))).training[0]
    assert t.throughput_rule == "scenario" and t.samples_per_s_per_gpu == 500.0
    assert t.days_low == t.days_high == t.training_days


def test_llm_range_is_the_step_time_models_error_and_an_assumed_mfu_keeps_the_published_mfus():
    from aisize.plan.training import days_range
    from aisize.validation.ranges import step_time_range

    t = plan(preset("llama3-70b-pretrain")).training[0]
    assert t.throughput_rule == "step-time"  # the step-time model sets the days: its own error sets the range
    assert (t.days_low, t.days_high) == pytest.approx(step_time_range(t.training_days), rel=1e-12)
    assert t.days_low < t.training_days < t.days_high and "published runs" in days_range_text(t.days_range_basis)
    r = mfu_range(t.gpus)  # a time at an assumed MFU scales with the published MFUs
    low, high, _, _ = days_range(t.training_days, t.mfu_assumed, t.gpus, None)
    assert low == pytest.approx(t.training_days * t.mfu_assumed / r.high, rel=1e-12)
    assert high == pytest.approx(t.training_days * t.mfu_assumed / r.low, rel=1e-12)


def test_workloads_table_and_json_carry_the_range_and_basis(weka):
    p = plan(preset("hpe-weka-resnet"))
    row = workloads_table(p).iloc[0]
    assert (row.days_low, row.days, row.days_high) == (weka.days_low, weka.training_days, weka.days_high)
    assert row.throughput_basis == throughput_basis_text(weka.throughput_basis)
    data = json.loads(to_json(p))["training"][0]
    assert data["days_low"] == pytest.approx(weka.days_low, rel=1e-5)
    assert data["days_high"] == pytest.approx(weka.days_high, rel=1e-5)
    assert data["throughput_rule"] == "measured"
    assert any(f.area == "compute" and "throughput measured" in finding_text(f) for f in p.findings)


def test_measured_activations_per_sample_scale_with_batch_and_precision():
    # measured 43,759,576 B per 224 x 224 image at bf16 (tests/test_torch_cnn.py)
    r50 = catalog.other_models["resnet-50"]
    assert other_model_activation_bytes(8.18e9, 256, measured_bytes_per_sample=r50.activations_per_sample_bytes) \
        == pytest.approx(256 * 43_759_576)
    assert other_model_activation_bytes(8.18e9, 1, bytes_per_element=4.0, measured_bytes_per_sample=1e6) == 2e6


@pytest.mark.parametrize("kwargs, match", [
    (dict(precision="int3"), "precision"),
    (dict(precision="bf16"), "precision"),  # V100 publishes no bf16 peak
    (dict(precision="fp16", gpus=0), "gpus"),
    (dict(precision="fp16", efficiency=0.0), "efficiency"),
])
def test_resolve_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        resolve_samples_per_s(catalog.other_models["resnet-50"], V100, **kwargs)
    with pytest.raises(ValueError, match="measured_bytes_per_sample"):
        other_model_activation_bytes(8.18e9, 1, measured_bytes_per_sample=-1.0)


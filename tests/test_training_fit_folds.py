"""benchmarks/fit_training.py's cross-validation folds and its ``--untie-blackwell-16bit`` switch (docs/training-cv.md,
"Leave one GPU out"). No fit runs here (a fit takes minutes); the folds and the tie are checked by hand."""

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from aisize.calibrate import training as T
from aisize.training.calibration import CALIBRATION

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fit_training.py"


@pytest.fixture(scope="module")
def fit():
    spec = importlib.util.spec_from_file_location("fit_training", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_folds_are_the_published_models_and_gpus(fit):
    rows = fit.cases()
    assert len(rows) == 63  # torchtitan 19 + NeMo/Megatron-Bridge 44
    assert Counter(map(fit.gpu_of, rows)) == {"h100-sxm": 32, "gb300": 9, "gb200": 9, "b200": 8, "a100-sxm-80gb": 5}
    models = Counter(map(fit.model_of, rows))
    assert len(models) == 16 and models["llama-3-8b"] == 20


def test_untied_blackwell_16bit_is_its_own_constant(fit, monkeypatch):
    monkeypatch.setattr(T, "SPEED", T.SPEED)
    monkeypatch.setattr(T, "with_values", T.with_values)
    x = np.array([T.value(CALIBRATION, name, key) for name, key, *_ in T.SPEED])
    tied = T.with_values(CALIBRATION, x).gemm_efficiency["blackwell:16"]
    # the tie: blackwell:8 x hopper:16 / hopper:8 = 0.805 x 0.678 / 0.753 = 0.7248 (the shipped 0.725)
    assert tied == pytest.approx(0.805 * 0.678 / 0.753, rel=1e-9) and tied == pytest.approx(0.725, abs=5e-4)
    fit.untie_blackwell_16bit()
    assert T.SPEED[-1][:2] == ("gemm_efficiency", "blackwell:16")
    untied = T.with_values(CALIBRATION, np.append(x, 0.5)).gemm_efficiency
    assert untied["blackwell:16"] == 0.5 and untied["blackwell:8"] == pytest.approx(0.805)
    assert T.with_values(CALIBRATION, np.append(x, 1.7)).gemm_efficiency["blackwell:16"] == 1.0  # its upper bound

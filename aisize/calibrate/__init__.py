"""Calibrate aisize's serving model on measured runs: the public ones, or a user's own.

``runs`` reads benchmark results (aisize's reference CSV columns, ``vllm bench serve`` JSON,
SGLang ``bench_serving`` JSONL, AIPerf / genai-perf exports, InferenceX results) into
:class:`Run` records and predicts each; ``fit`` refits the calibration constants on them.
"""

from aisize.calibrate.fit import FitResult, fit, fitted_constants
from aisize.calibrate.formats import read_runs
from aisize.calibrate.runs import Prediction, Run, predict, read_table

__all__ = ["Run", "Prediction", "predict", "read_table", "read_runs", "fit", "FitResult", "fitted_constants"]

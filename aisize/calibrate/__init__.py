"""Calibrate aisize's serving model on measured runs: the public ones, or a user's own.

``runs`` reads benchmark results (aisize's reference CSV columns, ``vllm bench serve`` JSON,
SGLang ``bench_serving`` JSONL, AIPerf / genai-perf exports, InferenceX results) into
:class:`Run` records and predicts each; ``fit`` refits the calibration constants on them.
The names load on first use, so the command line's parser stays quick to import.
"""

from aisize import lazy

_EXPORTS = {"Run": "runs", "Prediction": "runs", "predict": "runs", "read_table": "runs",
            "read_runs": "formats", "fit": "fitting", "FitResult": "fitting", "fitted_constants": "fitting",
            "cross_validate": "crossval", "CrossValidation": "crossval"}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)

"""Measured kernel timings: NVIDIA's silicon measurements, distilled into committed surfaces.

Source: the ``aiconfigurator-core`` package (Apache-2.0) by NVIDIA, imported by
:mod:`aisize.kernels.importer` into ``data/kernels/`` (see docs/kernels.md for what was kept, how,
and how faithfully). Reading needs numpy only. Every function below:

* takes the GPU as an aisize accelerator id (``h200-sxm``, ``b200``, ...; the package's own system
  names such as ``h200_sxm`` are accepted too) and the serving engine (``trtllm``, ``vllm``,
  ``sglang``);
* takes categorical choices (dtype, kernel, ...) as scalars and shape parameters as numbers or numpy
  arrays (broadcast together), and returns seconds (a float for all-scalar input, else an array);
* never extrapolates: a query outside the measured range raises :class:`KernelOutOfRange` (which
  carries the boolean ``mask``), or gives NaN there with ``out_of_range="nan"`` so a caller can fall
  back to a roofline for those entries and say so.
"""

from aisize import lazy

_API = ("ENGINES", "OPS", "ITEMSIZE", "gpu_id", "available", "table", "lookup", "gemm_seconds",
        "attention_seconds", "mla_seconds", "moe_seconds", "allreduce_seconds", "collective_seconds",
        "moe_a2a_seconds")
_TABLES = ("KernelDataMissing", "KernelOutOfRange", "KernelTable", "Lookup", "data_dir", "index", "load")
_EXPORTS = {**{name: "api" for name in _API}, **{name: "tables" for name in _TABLES}}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)

"""Activation recomputation as Megatron-Core and PyTorch run it: what is re-run, and what it costs.

==================  =========================================================================
mode                what backward re-runs (and so what forward does not keep)
==================  =========================================================================
``none``            nothing
``full``            the whole forward of ``recompute_layers`` layers of each model chunk
                    (Megatron's ``recompute_method=block``; all layers by default); those
                    layers keep only their input
``selective``       framework ``fsdp``: PyTorch op-level selective checkpointing (torchtitan);
                    otherwise the Megatron modules named in ``recompute_modules`` (default
                    ``("core_attn",)``, Korthikanti et al.)
==================  =========================================================================

Megatron-Core modules (``--recompute-modules``): ``core_attn`` the attention kernel,
``layernorm`` the norms (their outputs, the inputs of the QKV and MLP GEMMs, are not kept),
``mla_up_proj`` MLA's up-projections (Q, K, V are rebuilt from the latents), ``mlp`` the dense
MLP, ``moe_act`` the experts' activation function (its output, the experts' second GEMM input,
is not kept), ``moe`` the whole MoE block (dispatch included), ``shared_experts`` the shared
experts' MLP.

References
----------
.. [1] Korthikanti et al. 2022, arXiv:2205.05198, sec. 5 (selective and full recompute).
.. [2] NVIDIA Megatron-LM ``megatron/core/transformer/transformer_config.py``
   (``recompute_granularity``, ``recompute_method``, ``recompute_num_layers``, ``recompute_modules``).
"""

from __future__ import annotations

from aisize import checks

MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
DEFAULT_MODULES = ("core_attn",)


def check_modules(recompute, modules, *, moe: bool, mla: bool) -> tuple[str, ...]:
    """The checked module names (sorted, unique); a ValueError names ``recompute_modules``."""
    if modules is None:
        return DEFAULT_MODULES if recompute == "selective" else ()
    if isinstance(modules, str):
        modules = (modules,)
    try:
        names = tuple(sorted(set(modules)))
    except TypeError:
        raise ValueError(f"recompute_modules={modules!r} is not allowed: give a tuple of names from "
                         f"{MODULES}") from None
    for name in names:
        checks.choice("recompute_modules", name, MODULES)
    if names and recompute != "selective":
        raise ValueError(f"recompute_modules={names!r} is not allowed with recompute={recompute!r}: modules are "
                         "recomputed with recompute='selective'")
    if not moe and any(n in ("moe_act", "moe", "shared_experts") for n in names):
        raise ValueError(f"recompute_modules={names!r} is not allowed: the model has no MoE layers")
    if not mla and "mla_up_proj" in names:
        raise ValueError(f"recompute_modules={names!r} is not allowed: 'mla_up_proj' needs an MLA model")
    return names


def full_share(recompute, recompute_layers, chunk_layers: int) -> float:
    """Share of a model chunk's layers that full recompute re-runs [ratio]; a ValueError names
    ``recompute_layers`` when it exceeds the chunk or comes without ``recompute='full'``."""
    if recompute_layers is None:
        return 1.0 if recompute == "full" else 0.0
    n = int(checks.scalar("recompute_layers", checks.integer("recompute_layers", recompute_layers, low=0,
                                                              high=10**5)))
    if recompute != "full":
        raise ValueError(f"recompute_layers={n} is not allowed with recompute={recompute!r}: layers are "
                         "recomputed with recompute='full'")
    if n > chunk_layers:
        raise ValueError(f"recompute_layers={n} is not allowed: a model chunk has {chunk_layers} layers "
                         "(layers / (pipeline_parallel x virtual_stages), rounded up)")
    return n / chunk_layers

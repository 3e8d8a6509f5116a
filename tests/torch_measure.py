"""Measure what a real PyTorch model allocates, for the estimate cross-checks.

Helpers for tests/test_torch_crosscheck.py (needs the ``torch`` extra):

* :func:`count_params`: unique parameters (tied weights counted once);
* :func:`state_bytes_after_step`: weights, gradients, fp32 master copy and
  optimizer state actually allocated after one optimizer step, under pure fp32,
  pure 16-bit, or mixed precision emulated the way :mod:`aisize.memory.states`
  defines each framework (16-bit model + fp32 master + fp32 moments);
* :func:`saved_activation_bytes`: bytes autograd saves for backward during one
  forward pass (``torch.autograd.graph.saved_tensors_hooks``), unique storages
  only, parameters and buffers excluded, attributed to the innermost module
  that saved them, with per-layer checkpointing for full recompute;
* :func:`kv_cache_bytes`: key and value tensors of the cache one forward pass fills
  (the tests also read the cache ``generate`` returns).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import pytest
import torch
import torch.utils.checkpoint

# Decoder layers of HF Llama ("model.layers.3") and GPT-2 ("transformer.h.3").
_LAYER = re.compile(r"^(?:model\.layers|transformer\.h)\.(\d+)(?:\.|$)")
# Which gradient copies each aisize framework profile keeps under mixed precision
# (aisize.memory.states table): (16-bit .grad kept, fp32 gradient kept).
MIXED_GRADS = {"zero": (True, False), "megatron": (False, True), "fsdp": (False, True),
               "deepspeed": (True, True)}
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def count_params(model: torch.nn.Module) -> int:
    """Parameters of ``model``, each shared (tied) tensor once [count]."""
    return sum(p.numel() for p in model.parameters())


def _storage(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def _nbytes(tensors) -> int:
    """Bytes of the unique storages behind ``tensors``."""
    return sum(dict(_storage(t) for t in tensors if t is not None).values())


@dataclass(frozen=True)
class StateBytes:
    """Model-state bytes actually allocated [B]."""

    weights: int  # the model's parameters
    gradients: int  # .grad of the model, plus kept fp32 gradients (mixed)
    master_weights: int  # fp32 master copy (mixed precision only)
    optimizer_moments: int  # optimizer state tensors except the step counters
    step_counters: int  # AdamW/Adafactor keep a 0-d fp32 'step' per parameter tensor


def _optimizer(name: str, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-3)
    raise ValueError(f"optimizer={name!r} is not allowed: adamw, sgd or adafactor")


def state_bytes_after_step(model: torch.nn.Module, input_ids: torch.Tensor, *, dtype: str,
                           optimizer: str, mixed_framework: str | None = None) -> StateBytes:
    """Run one forward/backward and one optimizer step; measure what is allocated.

    ``dtype`` is the model's storage dtype (fp32, bf16, fp16). With
    ``mixed_framework`` (a key of :data:`MIXED_GRADS`) the optimizer updates an
    fp32 master copy: the 16-bit gradients are cast to fp32 for the step, the
    master is copied back into the model, and the gradient copies the profile
    keeps stay allocated. Without it the optimizer updates the model directly.
    """
    model.to(_DTYPES[dtype]).train()
    params = list(model.parameters())
    master = [torch.nn.Parameter(p.detach().float().clone()) for p in params] if mixed_framework else []
    opt = _optimizer(optimizer, master or params)
    model(input_ids, labels=input_ids, use_cache=False).loss.backward()
    kept: list[torch.Tensor] = []
    if mixed_framework:
        keep16, keep32 = MIXED_GRADS[mixed_framework]
        for m, p in zip(master, params):
            m.grad = p.grad.float()
            if not keep16:
                p.grad = None
        opt.step()
        with torch.no_grad():
            for m, p in zip(master, params):
                p.copy_(m)
        for m in master:
            if keep32:
                kept.append(m.grad)
            m.grad = None
    else:
        opt.step()
    states = [v for st in opt.state.values() for k, v in st.items() if k != "step" and torch.is_tensor(v)]
    steps = [v for st in opt.state.values() for k, v in st.items() if k == "step"]
    return StateBytes(weights=_nbytes(params), gradients=_nbytes([p.grad for p in params] + kept),
                      master_weights=_nbytes(master), optimizer_moments=_nbytes(states),
                      step_counters=_nbytes(steps))


@dataclass
class SavedBytes:
    """Bytes saved for backward by one forward pass, by where they were saved [B]."""

    per_layer: list[int]  # saved by decoder layer i only
    shared: int  # saved by several layers: RoPE cos/sin, GPT-2's eager causal mask
    edges: int  # embeddings, final norm, output layer, loss
    by_module: dict[str, int] = field(default_factory=dict)  # innermost module name -> bytes
    tensors: list[tuple[str, tuple, str, int]] = field(default_factory=list)  # (module, shape, dtype, bytes)

    @property
    def layers(self) -> int:
        return sum(self.per_layer)

    @property
    def total(self) -> int:
        return self.layers + self.shared + self.edges

    def by_part(self, layer: int) -> dict[str, int]:
        """Bytes of layer ``layer`` by sub-module (``self_attn.q_proj``, ``mlp.act_fn``, ...)."""
        out: dict[str, int] = {}
        for name, n in self.by_module.items():
            m = _LAYER.match(name)
            if m and int(m.group(1)) == layer:
                part = name[m.end():] or "(layer)"
                out[part] = out.get(part, 0) + n
        return out


def _layer_of(name: str) -> int | None:
    m = _LAYER.match(name)
    return int(m.group(1)) if m else None


def _checkpointed(forward):
    """``forward`` under reentrant ``torch.utils.checkpoint``: it saves only its tensor
    arguments (the layer input) and recomputes the layer in backward. Keyword tensors
    (RoPE cos/sin, masks) are closed over, not saved: the model keeps them anyway."""
    def run(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(functools.partial(forward, **kwargs), *args,
                                                 use_reentrant=True)
    return run


def saved_activation_bytes(model: torch.nn.Module, input_ids: torch.Tensor, *,
                           recompute: bool = False) -> SavedBytes:
    """Bytes autograd keeps for backward after one training forward pass with the loss [B].

    Every tensor passed to a saved-tensors pack hook is reduced to its storage;
    each storage counts once (views such as GPT-2's q/k/v split share one), and
    storages of parameters and buffers are not activations. A storage belongs to
    the innermost module running when it was first saved, or to ``shared`` when
    several decoder layers save it. With ``recompute`` each decoder layer runs
    under reentrant ``torch.utils.checkpoint`` (whose ``save_for_backward`` of the
    layer input the hook sees). The model runs as in training, without a KV cache
    (``use_cache=False``: a cache would add K/V copies that training does not make).
    """
    model.train()
    fixed = {_storage(t)[0] for t in list(model.parameters()) + list(model.buffers())}
    stack: list[str] = ["(model)"]
    first: dict[int, tuple[str, int]] = {}  # storage -> (module, bytes)
    layers_of: dict[int, set[int]] = {}
    tensors: list[tuple[str, tuple, str, int]] = []

    def enter(name: str) -> None:
        stack.append(name)

    def leave(*_) -> None:  # returns None: a forward hook's return value would replace the output
        stack.pop()

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr, nbytes = _storage(t)
        if ptr in fixed or not nbytes:
            return t
        if ptr not in first:
            first[ptr] = (stack[-1], nbytes)
            tensors.append((stack[-1], tuple(t.shape), str(t.dtype).removeprefix("torch."), nbytes))
        layer = _layer_of(stack[-1])
        if layer is not None:
            layers_of.setdefault(ptr, set()).add(layer)
        return t

    handles, patched = [], []
    for name, mod in model.named_modules():
        if name:
            handles.append(mod.register_forward_pre_hook(lambda m, a, n=name: enter(n)))
            handles.append(mod.register_forward_hook(leave))
        if recompute and _LAYER.fullmatch(name + "."):
            mod.forward = _checkpointed(mod.forward)
            patched.append(mod)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(input_ids, labels=input_ids, use_cache=False)
    finally:
        for h in handles:
            h.remove()
        for mod in patched:
            del mod.forward  # back to the class's forward
    del out  # the graph (and the saved tensors) go with it; only numbers are kept
    by_module: dict[str, int] = {}
    per_layer = [0] * model.config.num_hidden_layers
    shared = edges = 0
    for ptr, (name, nbytes) in first.items():
        by_module[name] = by_module.get(name, 0) + nbytes
        layers = layers_of.get(ptr, set())
        if len(layers) > 1:
            shared += nbytes
        elif layers:
            per_layer[layers.pop()] += nbytes
        else:
            edges += nbytes
    return SavedBytes(per_layer=per_layer, shared=shared, edges=edges, by_module=by_module, tensors=tensors)


def kv_cache_bytes(model: torch.nn.Module, input_ids: torch.Tensor) -> int:
    """Bytes of the key and value tensors a forward pass with ``use_cache=True`` caches [B]."""
    model.eval()
    with torch.no_grad():
        cache = model(input_ids, use_cache=True).past_key_values
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """PyTorch on one thread for a module's tests (imported by tests/test_torch_crosscheck.py and
    tests/test_torch_cnn.py): `make test` runs a worker per core, and OpenMP threads spinning on a core another
    worker holds cost more than they give (test_torch_crosscheck.py: 98 s beside a busy worker, 7 s beside an
    idle one, 2026-12-05). Memory counts do not depend on it."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""GPU memory physics shared by training and serving: model states, activations, KV cache, runtime overheads.

The training breakdown per GPU lives in :mod:`aisize.training.memory`.
"""

from aisize.memory.activations import (RECOMPUTE, ActivationConstants, activation_constants,
                                       layer_activation_bytes, other_model_activation_bytes)
from aisize.memory.inference import (InferenceMemory, KvCapacity, inference_memory, kv_bytes_per_token,
                                     kv_capacity, mla_kv_bytes_per_token, paged_tokens,
                                     transformer_kv_bytes_per_token, weight_bytes)
from aisize.memory.states import FRAMEWORKS, ModelStates, lora_adapter_params, model_states, per_param_bytes

__all__ = ["RECOMPUTE", "ActivationConstants", "activation_constants", "layer_activation_bytes",
           "other_model_activation_bytes", "InferenceMemory", "KvCapacity",
           "inference_memory", "kv_bytes_per_token", "kv_capacity", "mla_kv_bytes_per_token", "paged_tokens",
           "transformer_kv_bytes_per_token", "weight_bytes", "FRAMEWORKS", "ModelStates",
           "lora_adapter_params", "model_states", "per_param_bytes"]

"""GPU memory: model states, activations, the training breakdown per GPU, inference memory."""

from aisize.memory.activations import (RECOMPUTE, ActivationConstants, activation_constants,
                                       layer_activation_bytes, other_model_activation_bytes,
                                       pipeline_in_flight)
from aisize.memory.inference import (InferenceMemory, KvCapacity, inference_memory, kv_bytes_per_token,
                                     kv_capacity, mla_kv_bytes_per_token, paged_tokens,
                                     transformer_kv_bytes_per_token, weight_bytes)
from aisize.memory.states import FRAMEWORKS, ModelStates, lora_adapter_params, model_states, per_param_bytes
from aisize.memory.training import (Fit, TrainingMemory, fits, max_micro_batch, other_model_training_memory,
                                    training_memory, transformer_training_memory)

__all__ = ["RECOMPUTE", "ActivationConstants", "activation_constants", "layer_activation_bytes",
           "other_model_activation_bytes", "pipeline_in_flight", "InferenceMemory", "KvCapacity",
           "inference_memory", "kv_bytes_per_token", "kv_capacity", "mla_kv_bytes_per_token", "paged_tokens",
           "transformer_kv_bytes_per_token", "weight_bytes", "FRAMEWORKS", "ModelStates",
           "lora_adapter_params", "model_states", "per_param_bytes", "Fit", "TrainingMemory", "fits",
           "max_micro_batch", "other_model_training_memory", "training_memory", "transformer_training_memory"]

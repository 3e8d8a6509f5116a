"""Runtime memory every GPU process pays, in training and in serving.

Explicit assumptions, each with where it comes from; the training and inference
breakdowns book them as their own line items.
"""

from __future__ import annotations

from aisize.units import GiB, MiB

# CUDA context and loaded kernels (cuBLAS, cuDNN, NCCL, PyTorch): the memory
# nvidia-smi shows before the first tensor; ~0.3-0.6 GiB on A100/H100 with CUDA 12
# lazy module loading (CUDA C Programming Guide, "Lazy Loading"), more without.
CUDA_CONTEXT_BYTES = 0.5 * GiB
# NCCL communicator buffers: NCCL_BUFFSIZE 4 MiB per channel and peer direction
# (NCCL environment-variable docs); ~32 such buffers per communicator in use.
NCCL_BYTES_PER_COMMUNICATOR = 32 * 4 * MiB

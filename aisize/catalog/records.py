"""Typed catalog records: one frozen dataclass per table in ``data/``.

Each dataclass is also its table's schema (see :mod:`aisize.catalog.loader`):
the first field is the id, a field's suffix names its base unit, and
``Optional`` fields may be left empty in the CSV. Every record carries the
``source`` of its figures.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerator:
    """A GPU or AI accelerator, per device. Peaks are DENSE (no 2:4 sparsity)."""

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_type: str
    memory_label: str  # the vendor's nominal label, e.g. "80 GB"
    memory_bytes: float  # physical memory capacity
    memory_visible_bytes: float | None  # what nvidia-smi / rocm-smi reports, where published
    memory_bandwidth_bytes_per_s: float
    fp32_flops_per_s: float | None  # non-tensor FP32 (Gaudi publishes none)
    tf32_flops_per_s: float | None
    fp16_flops_per_s: float | None  # dense tensor-core FP16
    bf16_flops_per_s: float | None
    fp8_flops_per_s: float | None
    int8_flops_per_s: float | None  # dense INT8 tensor ops/s
    fp4_flops_per_s: float | None
    scaleup_link: str | None  # id in links.csv
    scaleup_bidirectional_bytes_per_s: float | None  # per GPU, both directions together
    scaleup_domain: int  # GPUs that share one scale-up (NVLink/xGMI) domain
    pcie_gen: int
    tdp_watts: float
    source: str
    note: str | None
    # Added for training at scale; empty means not published (the estimate then leaves the term out).
    host_link_bidirectional_bytes_per_s: float | None = None  # GPU-host link other than PCIe (NVLink-C2C)
    sfu_exp_per_s: float | None = None  # exponentials/s of the special-function units (softmax in attention)


@dataclass(frozen=True)
class Server:
    """A GPU server (or rack-scale system) as sold."""

    id: str
    name: str
    vendor: str
    accelerator: str  # id in accelerators.csv
    gpus: int
    host_memory_bytes: float
    cpu: str
    cpu_cores: int  # physical cores, all sockets
    compute_nics: int  # scale-out (GPU fabric) NICs
    compute_nic_link: str  # id in links.csv
    storage_nics: int  # NICs for the storage / in-band network
    storage_nic_link: str | None
    local_nvme_bytes: float | None
    power_watts: float  # maximum system power
    rack_units: int | None
    source: str
    note: str | None


@dataclass(frozen=True)
class Link:
    """A link or port type. Bandwidth is per direction; the vendor's own figure is kept beside it."""

    id: str
    name: str
    kind: str  # pcie | nvlink | infinity-fabric | infiniband | ethernet
    bandwidth_per_direction_bytes_per_s: float
    vendor_figure: str  # as the vendor writes it, e.g. "900 GB/s (both directions)"
    vendor_figure_bidirectional: bool
    latency_seconds: float | None  # typical one-hop latency
    source: str
    note: str | None


@dataclass(frozen=True)
class StorageSystem:
    """A storage reference point: a whole system, a building block, a guidance figure or a drive."""

    id: str
    name: str
    kind: str  # shared-fs | building-block | guidance | local-nvme
    scope: str  # what the figures are per: system | unit | node | drive
    read_bandwidth_bytes_per_s: float
    write_bandwidth_bytes_per_s: float | None
    read_iops_per_s: float | None
    write_iops_per_s: float | None
    iops_io_size_bytes: float | None  # IO size the IOPS figures were measured at
    latency_seconds: float | None
    capacity_bytes: float | None
    rack_units: int | None
    source: str
    note: str | None


@dataclass(frozen=True)
class Transformer:
    """A transformer language model's architecture, from its published config."""

    id: str
    name: str
    family: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int  # dense MLP inner size
    ffn_type: str  # gelu | swiglu | relu
    vocab: int
    tied_embeddings: bool
    max_seq: int
    position: str  # learned | rope | alibi
    norm: str  # layernorm | rmsnorm
    bias: bool  # linear layers carry biases
    attention: str  # mha | gqa | mqa | mla
    experts: int  # routed experts per MoE layer (1 = dense)
    experts_per_token: int
    shared_experts: int
    moe_ffn_hidden: int | None  # inner size of one routed expert
    dense_layers: int  # layers with a dense MLP in an MoE model (wherever they are)
    q_lora_rank: int | None  # MLA only
    kv_lora_rank: int | None  # MLA only
    qk_rope_head_dim: int | None  # MLA only
    qk_nope_head_dim: int | None  # MLA only
    v_head_dim: int | None  # MLA only
    encoder_only: bool  # BERT-style (token-type embeddings, pooler)
    published_params: float  # the model card's parameter count
    published_active_params: float | None  # MoE: parameters active per token
    source: str
    note: str | None
    # Fields added with Hugging Face import; empty in a CSV row means the default.
    shared_ffn_hidden: int | None = None  # inner size of a layer's shared experts together
    sliding_window: int | None = None  # tokens a windowed layer attends to (its KV stops growing there)
    sliding_layers: int = 0  # layers that use the window
    window_kind: str = "sliding"  # sliding (last W tokens) | chunked (Llama 4: tokens of the same W-chunk)
    attention_bias: str | None = None  # none | qkv | qkvo; empty: as ``bias``
    qk_norm: bool = False  # RMSNorm weights on queries and keys, head_dim each (Qwen3, Gemma 3)
    norms_per_layer: int = 2  # Gemma 2/3 add norms after attention and MLP: 4
    attention_sinks: bool = False  # one learned sink logit per head (gpt-oss)
    router_bias: bool = False  # a bias per routed expert on the router (gpt-oss, DeepSeek-V3)
    shared_expert_gate: bool = False  # Qwen2-MoE: a sigmoid gate (h weights) on the shared expert
    # Hybrid Mamba-2 / attention models (Nemotron-H, Nemotron 3): which layers hold which blocks.
    attention_layers: int | None = None  # layers with self-attention (empty: all but the Mamba-2 layers)
    mamba_layers: int = 0  # layers whose mixer is a Mamba-2 (SSD) block
    ffn_layers: int | None = None  # layers with an MLP or MoE block (empty: all)
    mamba_heads: int | None = None  # Mamba-2 heads H (inner width H x P)
    mamba_head_dim: int | None = None  # P
    ssm_state_size: int | None = None  # N, the state per head and channel
    mamba_groups: int | None = None  # G, groups sharing B and C
    mamba_conv_kernel: int = 4  # causal depthwise convolution width
    mtp_layers: int = 0  # multi-token-prediction modules (trained, not in the published parameter count)

    def __post_init__(self):
        # older rows give only shared_experts: those experts have the routed experts' size
        if self.shared_ffn_hidden is None and self.shared_experts and self.moe_ffn_hidden:
            object.__setattr__(self, "shared_ffn_hidden", self.shared_experts * self.moe_ffn_hidden)


@dataclass(frozen=True)
class OtherModel:
    """A non-LLM model (vision, segmentation, recommendation) described by totals."""

    id: str
    name: str
    family: str  # cnn | unet | recsys | ...
    params: float
    forward_per_sample_flops: float  # forward pass, one sample (2 x multiply-adds)
    input_sample_bytes: float  # one input sample as the model reads it
    default_batch: int
    dataset: str  # id in datasets.csv
    source: str
    note: str | None
    # bytes autograd saves for backward per sample at 16-bit activations, MEASURED
    # (tests/torch_cnn.py); empty: aisize.memory.activations estimates it from FLOPs
    activations_per_sample_bytes: float | None = None


@dataclass(frozen=True)
class Throughput:
    """A measured training throughput: samples/s per GPU of one model on one accelerator."""

    id: str
    model: str  # id in other_models.csv or transformers.csv
    accelerator: str  # id in accelerators.csv
    precision: str  # fp32 | tf32 | fp16 (AMP, mixed fp16) | bf16
    gpus: int  # GPUs in the measurement
    samples_per_gpu_per_s: float  # the measurement's total / gpus
    framework: str
    config: str | None  # what else fixes the figure (sequence length, XLA, NHWC)
    batch_per_gpu: int | None
    source: str
    note: str | None


@dataclass(frozen=True)
class Dataset:
    """A training dataset: sample count and bytes per sample, raw and in record format."""

    id: str
    name: str
    modality: str
    samples: int
    total_bytes: float | None
    sample_bytes: float  # mean bytes per sample as distributed (e.g. one JPEG)
    record_sample_bytes: float | None  # mean bytes per sample in a record/shard format
    tokens: float | None  # text datasets: training tokens
    files: int | None
    file_format: str
    source: str
    note: str | None


@dataclass(frozen=True)
class ServingEngine:
    """A serving engine's scheduler at a named version: its defaults, read from its code.

    Limits left empty are chosen per workload: by trtllm-bench's heuristic for the bench
    scheduler, or by the KV pool for engines whose batch limit follows the memory.
    """

    id: str  # the key scenarios and estimate() use
    name: str
    version: str  # the engine release the defaults were read at
    kv_memory_fraction: float  # share of memory given to the KV pool (see kv_fraction_of_total)
    kv_fraction_of_total: bool  # the share bounds all memory (vLLM, SGLang), else the memory left after weights
    block_tokens: int  # paged-KV block (page) size [tokens]
    chunked_prefill: bool  # prompts split to fit the token budget
    reserve_full_sequence: bool  # admit a request only when blocks for its whole prompt + output are free
    max_batch_size: int | None  # sequences per iteration; empty: chosen per workload
    max_num_tokens: int | None  # tokens per iteration; empty: chosen per workload
    cuda_graph_max_batch: int | None  # decode iterations up to this many sequences replay a CUDA graph
    cuda_graph_mixed_tokens: int  # iterations with prefill work up to this many tokens are graphed too (0: none)
    overlap_scheduler: bool  # the host schedules the next iteration while the GPU runs this one
    overlap_with_speculation: bool | None  # the overlap scheduler stays on while speculating (empty: as above)
    windowed_kv: bool  # sliding/chunked-attention layers allocate only their window
    runtime_reserve_bytes: float  # CUDA context, NCCL buffers, CUDA graphs
    source: str
    note: str | None
    limits_shared_by_dp: bool = False  # batch and token limits are the replica's, split among its attention-DP ranks


@dataclass(frozen=True)
class SpeculativeAcceptance:
    """Measured acceptance lengths of a speculative-decoding method on a model or a model family.

    ``acceptance_lengths`` lists tau(k), the mean tokens one verify step emits (the target's own
    token included) with k = 1, 2, ... draft tokens, separated by semicolons.
    """

    id: str  # method:model
    method: str  # mtp | eagle3 | draft | ngram
    model: str  # a Transformer record's id, or its family, or * for any (the most specific row applies)
    acceptance_lengths: str
    source: str
    note: str | None

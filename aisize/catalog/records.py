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
    # The vendor's architecture ("hopper", "blackwell", "cdna3", ...), as the datasheet in ``source`` names it:
    # the one place serving and training read a GPU's generation from (each maps it to its calibrated set).
    architecture: str | None = None


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
    # LatentMoE (Nemotron 3 Super): routed experts work in a latent of this width, projected from and back to
    # hidden around them; empty: the experts read the hidden width (every other MoE)
    moe_latent_size: int | None = None

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
    # an iteration that prefills also advances the decoding sequences (in-flight batching); a table written before
    # the column keeps True (aisize.serving.engine.Engine.mixes_prefill)
    mixes_prefill: bool = True
    # attention-DP ranks gather and scatter the MoE layers' 16-bit hidden states with NCCL's all-gather and
    # reduce-scatter (SGLang's dp_attention.py); empty: False (aisize.serving.engine.Engine.dp_gather_nccl)
    dp_gather_nccl: bool = False
    # attention-DP ranks all-gather their own tokens by per-rank counts (NVFP4 inputs quantized) and reduce-scatter
    # the results by the same counts (TensorRT-LLM's fused_moe_cutlass.py); empty: False
    # (aisize.serving.engine.Engine.dp_exchange_by_sizes)
    dp_exchange_by_sizes: bool = False
    # TensorRT-LLM's attention_dp_config.enable_balance as its deployments set it: prompts wait until every
    # attention-DP rank has one, at most this many iterations (timeout_iters); empty or 0: off
    # (aisize.serving.engine.Engine.attention_dp_balance_iters)
    attention_dp_balance_iters: int = 0
    # expert weight formats (space-separated, e.g. "fp8") whose routed experts, spread by expert parallelism (EP > 1),
    # are timed from the engine's own measured MoE operator (aisize.serving.engine.Engine.measured_ep_moe_formats);
    # empty: the roofline, as the calibration says
    measured_ep_moe_formats: str | None = None


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


# Physical range of each hardware figure (base units): (low, high, the range in words). A row outside it (ours,
# from an overlay, a scenario) is refused by name where it is read: a bandwidth of 0 or a memory of 1e30
# would otherwise divide by zero or overflow deep in a plan and be blamed on the workload. The ends lie far
# outside the figures of any device sold (the highs 60x to 3,000x above the largest), so they stop typos, not hardware.
_MEMORY = (1e8, 1e15, "from 100 MB to 1 PB (the largest GPU memory sold, on B300, is 288 GB)")
_HOST_MEMORY = (1e8, 1e15, "from 100 MB to 1 PB (a GB300 NVL72 rack has 17 TB)")
_HBM = (1e9, 1e15, "from 1 GB/s to 1 PB/s (the fastest HBM sold, on B300, reads 8 TB/s)")
_FLOPS = (1e9, 1e18, "from 1 GFLOP/s to 1 EFLOP/s (the densest GPU sold, B300, does 15 PFLOP/s in FP4)")
_LINK = (1e8, 1e15, "from 100 MB/s to 1 PB/s (NVLink 5: 1.8 TB/s both ways)")
_WATTS = (1.0, 1e5, "from 1 W to 100 kW (B300: 1.4 kW)")
_STORAGE_RATE = (1e6, 1e14, "from 1 MB/s to 100 TB/s (the fastest system in the catalog reads 730 GB/s)")
_IOPS = (1.0, 1e12, "from 1 to 10^12 IO/s")
RANGES = {
    Accelerator: {
        "memory_bytes": _MEMORY, "memory_visible_bytes": _MEMORY, "memory_bandwidth_bytes_per_s": _HBM,
        **{f"{d}_flops_per_s": _FLOPS for d in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")},
        "scaleup_bidirectional_bytes_per_s": _LINK, "host_link_bidirectional_bytes_per_s": _LINK,
        "scaleup_domain": (1, 100_000, "from 1 to 100,000 GPUs (an NVL72 rack: 72)"),
        "pcie_gen": (1, 10, "from 1 to 10 (PCIe 6 is the newest)"), "tdp_watts": _WATTS,
        "sfu_exp_per_s": (1e9, 1e18, "from 10^9 to 10^18 exponentials/s (B200: 9.5 x 10^12)"),
    },
    Server: {
        "gpus": (1, 10_000, "from 1 to 10,000 GPUs (a GB300 NVL72 rack: 72)"),
        "host_memory_bytes": _HOST_MEMORY,
        "cpu_cores": (1, 100_000, "from 1 to 100,000 cores (a GB300 NVL72 rack: 2,592)"),
        "compute_nics": (1, 1000, "from 1 to 1,000 NICs: a server reaches the others through at least one"),
        "storage_nics": (0, 1000, "from 0 (storage over a compute NIC) to 1,000 NICs"),
        "local_nvme_bytes": (0.0, 1e17, "from 0 to 100 PB"),
        "power_watts": (1.0, 1e7, "from 1 W to 10 MW (a GB300 NVL72 rack draws about 140 kW)"),
        "rack_units": (1, 1000, "from 1 to 1,000 U"),
    },
    Link: {
        "bandwidth_per_direction_bytes_per_s": (1e6, 1e15, "from 1 MB/s to 1 PB/s per direction (NVLink 5: 900 GB/s)"),
        "latency_seconds": (0.0, 1.0, "from 0 to 1 s"),
    },
    StorageSystem: {
        "read_bandwidth_bytes_per_s": _STORAGE_RATE, "write_bandwidth_bytes_per_s": _STORAGE_RATE,
        "read_iops_per_s": _IOPS, "write_iops_per_s": _IOPS,
        "iops_io_size_bytes": (512.0, 1e9, "from 512 B to 1 GB"),
        "latency_seconds": (0.0, 10.0, "from 0 to 10 s"),
        "capacity_bytes": (1e9, 1e21, "from 1 GB to 1 ZB"),
        "rack_units": (1, 1000, "from 1 to 1,000 U"),
    },
}

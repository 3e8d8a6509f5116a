"""Published Hugging Face config.json values, typed in (the keys that set the size).

Each entry: (config dict, published total, tolerance on the total, published active or None,
where the figures come from). Configs are from https://huggingface.co/<repo>/blob/main/config.json
of the repo named in the key; totals are the Hub's safetensors parameter count where exact
(tolerance 0), else the model card's rounded figure (tolerance by its rounding).
"""

LLAMA_3_1_405B = dict(model_type="llama", hidden_size=16384, num_hidden_layers=126, num_attention_heads=128,
                      num_key_value_heads=8, intermediate_size=53248, vocab_size=128256,
                      tie_word_embeddings=False, max_position_embeddings=131072, rms_norm_eps=1e-5)
LLAMA_3_1_70B = dict(LLAMA_3_1_405B, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
                     intermediate_size=28672)
LLAMA_3_1_8B = dict(LLAMA_3_1_405B, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                    intermediate_size=14336)
QWEN2_5_7B = dict(model_type="qwen2", hidden_size=3584, num_hidden_layers=28, num_attention_heads=28,
                  num_key_value_heads=4, intermediate_size=18944, vocab_size=152064, tie_word_embeddings=False,
                  max_position_embeddings=131072, sliding_window=131072, use_sliding_window=False,
                  max_window_layers=28)
QWEN2_5_72B = dict(QWEN2_5_7B, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
                   num_key_value_heads=8, intermediate_size=29568, max_window_layers=80)
QWEN3_8B = dict(model_type="qwen3", hidden_size=4096, num_hidden_layers=36, num_attention_heads=32,
                num_key_value_heads=8, head_dim=128, intermediate_size=12288, vocab_size=151936,
                tie_word_embeddings=False, max_position_embeddings=40960, use_sliding_window=False)
QWEN3_32B = dict(QWEN3_8B, hidden_size=5120, num_hidden_layers=64, num_attention_heads=64, intermediate_size=25600)
QWEN3_235B = dict(model_type="qwen3_moe", hidden_size=4096, num_hidden_layers=94, num_attention_heads=64,
                  num_key_value_heads=4, head_dim=128, intermediate_size=12288, moe_intermediate_size=1536,
                  num_experts=128, num_experts_per_tok=8, vocab_size=151936, tie_word_embeddings=False,
                  decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=40960)
QWEN3_30B_A3B = dict(QWEN3_235B, hidden_size=2048, num_hidden_layers=48, num_attention_heads=32,
                     intermediate_size=6144, moe_intermediate_size=768)
QWEN1_5_MOE = dict(model_type="qwen2_moe", hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                   num_key_value_heads=16, intermediate_size=5632, moe_intermediate_size=1408,
                   shared_expert_intermediate_size=5632, num_experts=60, num_experts_per_tok=4,
                   vocab_size=151936, tie_word_embeddings=False, decoder_sparse_step=1,
                   max_position_embeddings=8192)
GPT_OSS_120B = dict(model_type="gpt_oss", hidden_size=2880, num_hidden_layers=36, num_attention_heads=64,
                    num_key_value_heads=8, head_dim=64, intermediate_size=2880, num_local_experts=128,
                    num_experts_per_tok=4, vocab_size=201088, sliding_window=128, attention_bias=True,
                    tie_word_embeddings=False, layer_types=["sliding_attention", "full_attention"] * 18,
                    max_position_embeddings=131072)
GPT_OSS_20B = dict(GPT_OSS_120B, num_hidden_layers=24, num_local_experts=32,
                   layer_types=["sliding_attention", "full_attention"] * 12)
_L4 = dict(model_type="llama4_text", hidden_size=5120, num_hidden_layers=48, num_attention_heads=40,
           num_key_value_heads=8, head_dim=128, intermediate_size=8192, intermediate_size_mlp=16384,
           num_experts_per_tok=1, vocab_size=202048, tie_word_embeddings=False, attention_chunk_size=8192,
           max_position_embeddings=10485760)
LLAMA4_MAVERICK = dict(model_type="llama4", text_config=dict(_L4, num_local_experts=128, interleave_moe_layer_step=2,
                                                             max_position_embeddings=1048576))
LLAMA4_SCOUT = dict(model_type="llama4", text_config=dict(_L4, num_local_experts=16, interleave_moe_layer_step=1))
DEEPSEEK_V3 = dict(model_type="deepseek_v3", num_hidden_layers=61, hidden_size=7168, num_attention_heads=128,
                   num_key_value_heads=128, intermediate_size=18432, moe_intermediate_size=2048,
                   n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=3,
                   q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                   vocab_size=129280, max_position_embeddings=163840, tie_word_embeddings=False)
DEEPSEEK_V2 = dict(model_type="deepseek_v2", num_hidden_layers=60, hidden_size=5120, num_attention_heads=128,
                   num_key_value_heads=128, intermediate_size=12288, moe_intermediate_size=1536,
                   n_routed_experts=160, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                   q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                   vocab_size=102400, max_position_embeddings=163840, tie_word_embeddings=False)
DEEPSEEK_V2_LITE = dict(DEEPSEEK_V2, num_hidden_layers=27, hidden_size=2048, num_attention_heads=16,
                        num_key_value_heads=16, intermediate_size=10944, moe_intermediate_size=1408,
                        n_routed_experts=64, q_lora_rank=None)
KIMI_K2 = dict(DEEPSEEK_V3, model_type="kimi_k2", num_attention_heads=64, num_key_value_heads=64,
               n_routed_experts=384, first_k_dense_replace=1, vocab_size=163840, max_position_embeddings=131072)
GEMMA3_27B = dict(model_type="gemma3", text_config=dict(
    model_type="gemma3_text", hidden_size=5376, intermediate_size=21504, num_hidden_layers=62,
    num_attention_heads=32, num_key_value_heads=16, head_dim=128, vocab_size=262208, sliding_window=1024,
    sliding_window_pattern=6, query_pre_attn_scalar=168, max_position_embeddings=131072))
GEMMA2_27B = dict(model_type="gemma2", hidden_size=4608, intermediate_size=36864, num_hidden_layers=46,
                  num_attention_heads=32, num_key_value_heads=16, head_dim=128, vocab_size=256000,
                  sliding_window=4096, max_position_embeddings=8192)
MISTRAL_7B_V01 = dict(model_type="mistral", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, vocab_size=32000, sliding_window=4096,
                      max_position_embeddings=32768, tie_word_embeddings=False)
MISTRAL_LARGE_2 = dict(model_type="mistral", hidden_size=12288, intermediate_size=28672, num_hidden_layers=88,
                       num_attention_heads=96, num_key_value_heads=8, vocab_size=32768, sliding_window=None,
                       max_position_embeddings=131072, tie_word_embeddings=False)
MIXTRAL_8X7B = dict(model_type="mixtral", num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                    num_key_value_heads=8, intermediate_size=14336, vocab_size=32000, max_position_embeddings=32768,
                    num_local_experts=8, num_experts_per_tok=2, sliding_window=None)
PHI3_MINI_4K = dict(model_type="phi3", hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=32, vocab_size=32064, max_position_embeddings=4096,
                    sliding_window=2047, tie_word_embeddings=False)

B = 1e9
PUBLISHED = {
    # Hub safetensors counts (exact)
    "meta-llama/Llama-3.1-405B": (LLAMA_3_1_405B, 405_853_388_800, 0.0, None, "Hub safetensors count"),
    "meta-llama/Llama-3.1-70B": (LLAMA_3_1_70B, 70_553_706_496, 0.0, None, "Hub safetensors count"),
    "meta-llama/Llama-3.1-8B": (LLAMA_3_1_8B, 8_030_261_248, 0.0, None, "Hub safetensors count"),
    "Qwen/Qwen2.5-7B": (QWEN2_5_7B, 7_615_616_512, 0.0, None, "Hub safetensors count"),
    "mistralai/Mistral-7B-v0.1": (MISTRAL_7B_V01, 7_241_732_096, 0.0, None, "Hub safetensors count"),
    "microsoft/Phi-3-mini-4k-instruct": (PHI3_MINI_4K, 3_821_079_552, 0.0, None, "Hub safetensors count"),
    # model cards and papers (rounded)
    "Qwen/Qwen2.5-72B": (QWEN2_5_72B, 72.7 * B, 0.001, None, "model card: 72.7B"),
    "Qwen/Qwen3-8B": (QWEN3_8B, 8.2 * B, 0.005, None, "model card: 8.2B, 6.95B non-embedding"),
    "Qwen/Qwen3-32B": (QWEN3_32B, 32.8 * B, 0.005, None, "model card: 32.8B, 31.2B non-embedding"),
    "Qwen/Qwen3-30B-A3B": (QWEN3_30B_A3B, 30.5 * B, 0.005, 3.3 * B, "model card: 30.5B total, 3.3B activated"),
    "Qwen/Qwen3-235B-A22B": (QWEN3_235B, 235 * B, 0.005, 22 * B, "model card: 235B total, 22B activated"),
    "Qwen/Qwen1.5-MoE-A2.7B": (QWEN1_5_MOE, 14.3 * B, 0.005, 2.7 * B, "model card: 14.3B total, 2.7B activated"),
    "openai/gpt-oss-120b": (GPT_OSS_120B, 116.83 * B, 0.0005, 5.13 * B, "model card Table 1: 116.83B, 5.13B active"),
    "openai/gpt-oss-20b": (GPT_OSS_20B, 20.91 * B, 0.0005, 3.61 * B, "model card Table 1: 20.91B, 3.61B active"),
    "meta-llama/Llama-4-Maverick-17B-128E": (LLAMA4_MAVERICK, 400 * B, 0.005, 17 * B,
                                             "model card: 400B total, 17B activated (language model; "
                                             "the card's figures round)"),
    "meta-llama/Llama-4-Scout-17B-16E": (LLAMA4_SCOUT, 109 * B, 0.015, 17 * B,
                                         "model card: 109B total, 17B activated (includes the vision "
                                         "encoder, which the record leaves out)"),
    "deepseek-ai/DeepSeek-V3": (DEEPSEEK_V3, 671 * B, 0.001, 37 * B, "report Sec. 4.2: 671B total, 37B activated"),
    "deepseek-ai/DeepSeek-V2": (DEEPSEEK_V2, 236 * B, 0.005, 21 * B, "paper: 236B total, 21B activated"),
    "deepseek-ai/DeepSeek-V2-Lite": (DEEPSEEK_V2_LITE, 15.7 * B, 0.005, 2.4 * B, "paper: 15.7B total, 2.4B activated"),
    "moonshotai/Kimi-K2-Instruct": (KIMI_K2, 1.03e12, 0.005, 32 * B, "model card: 1T total (Hub 1.03T), "
                                                                      "32B activated"),
    "google/gemma-3-27b-it": (GEMMA3_27B, 27.0 * B, 0.005, None,
                              "Gemma 3 report Table 1: 1,416M embedding + 25,600M non-embedding "
                              "(+417M vision encoder, not counted)"),
    "google/gemma-2-27b": (GEMMA2_27B, 27.2 * B, 0.005, None, "Hub safetensors: 27.2B"),
    "mistralai/Mistral-Large-Instruct-2407": (MISTRAL_LARGE_2, 123 * B, 0.005, None, "model card: 123B"),
    "mistralai/Mixtral-8x7B-v0.1": (MIXTRAL_8X7B, 46.7 * B, 0.001, 12.9 * B, "paper Sec. 2: 46.7B, 12.9B active"),
}

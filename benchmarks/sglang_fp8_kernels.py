"""DeepSeek-R1 FP8 prefill on B200: aisize's linear and routed-expert times beside SGLang's and TensorRT-LLM's
measured kernels (issue 48; docs/calibration-sglang-fp8.md).

For each layout the SGLang disaggregated and aggregated runs use (TP 8 with experts over EP 8 or split TP 8; attention
DP 8 with EP 8) and 1,024 to 16,384 tokens through one GPU's attention group per forward, it prints, in ms over all
61 layers of one forward:

- ``aisize lin`` / ``aisize moe``: the iteration's ``linear_seconds`` and ``experts_seconds`` as the shipped
  calibration gives them (``aisize.serving.iteration.iteration_time`` of a prefill-only forward, engine "sglang");
- ``SGL dg`` / ``TRT dg``: the same MLA projections, dense MLPs and shared experts (n, k per GPU as SGLang splits
  them: the fused q_a/kv_a projection replicated) from each engine's measured ``fp8_block`` GEMMs, which are DeepGEMM
  in both tables;
- ``SGL fi`` / ``TRT dg`` (MoE): 58 MoE layers from SGLang's measured ``sglang_flashinfer_trtllm_moe`` and
  TensorRT-LLM's ``deepgemm`` operators (routing ``power_law_1.01``, AIConfigurator's choice for DeepSeek); nan
  where the tokens entering the EP group pass the sweeps' 16,384.

Then each GEMM shape's and the MoE operator's achieved PFLOP/s. Run: ``python benchmarks/sglang_fp8_kernels.py``.
"""

from __future__ import annotations

import argparse

from aisize import kernels, serving
from aisize.serving.iteration import iteration_time

GPU = "b200"
H, LAYERS, MOE_LAYERS, DENSE_LAYERS = 7168, 61, 58, 3  # DeepSeek-R1 config.json
FFN, MOE_FFN, Q_LORA, KV_LORA, ROPE = 18432, 2048, 1536, 512, 64


def gemm_shapes(tp: int) -> list[tuple[int, int, int]]:
    """(n, k, layers) of one GPU's FP8 GEMMs; ``tp`` splits the 128 heads, the dense MLPs and the shared expert."""
    heads = 128 // tp
    return [(Q_LORA + KV_LORA + ROPE, H, LAYERS), (heads * 192, Q_LORA, LAYERS), (heads * 256, KV_LORA, LAYERS),
            (H, heads * 128, LAYERS), (2 * FFN // tp, H, DENSE_LAYERS), (H, FFN // tp, DENSE_LAYERS),
            (2 * MOE_FFN // tp, H, MOE_LAYERS), (H, MOE_FFN // tp, MOE_LAYERS)]


def gemm_ms(engine: str, tokens: float, tp: int) -> float:
    return 1e3 * sum(c * kernels.gemm_seconds(GPU, engine, "fp8_block", tokens, n, k, out_of_range="nan")
                     for n, k, c in gemm_shapes(tp))


def moe_ms(engine: str, kernel: str, tokens: float, tp: int, ep: int, distribution="power_law_1.01") -> float:
    return 1e3 * kernels.moe_seconds(GPU, engine, "fp8_block", tokens, H, MOE_FFN, 8, 256, tp, ep,
                                     distribution=distribution, kernel=kernel, out_of_range="nan")


def aisize_forward(tokens: int, dp: int, ep: int):
    """A prefill-only forward of one ``tokens``-token prompt per attention group (shipped calibration)."""
    rep = serving.replica("deepseek-r1", GPU, tensor_parallel=8, weight_precision="fp8", kv_precision="fp8",
                          input_tokens=tokens, output_tokens=922, concurrency=64, engine="sglang",
                          attention_dp=dp, expert_parallel=ep)
    return iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=0.0, decode_context=0.0,
                          prefill_tokens=float(dp * tokens), prefill_prompts=float(dp), prompt_tokens=float(tokens),
                          **rep.shape.kwargs())


def layouts() -> None:
    for label, dp, ep in (("TP 8, experts EP 8", 1, 8), ("TP 8, experts TP 8 (EP 1)", 1, 1),
                          ("attention DP 8, EP 8", 8, 8)):
        print(f"\n== {label}; ms per forward")
        print(f"{'tokens/GPU':>10} | {'aisize lin':>10} {'SGL dg':>7} {'TRT dg':>7} | {'aisize moe':>10} "
              f"{'SGL fi':>7} {'TRT dg':>7} | {'aisize step':>11}")
        for tokens in (1024, 2048, 4096, 8192, 16384):
            it = aisize_forward(tokens, dp, ep)
            atp, moe_tokens = 8 // dp, tokens * dp
            print(f"{tokens:>10} | {1e3 * float(it.linear_seconds):10.2f} {gemm_ms('sglang', tokens, atp):7.2f} "
                  f"{gemm_ms('trtllm', tokens, atp):7.2f} | {1e3 * float(it.experts_seconds):10.2f} "
                  f"{MOE_LAYERS * moe_ms('sglang', 'sglang_flashinfer_trtllm_moe', moe_tokens, 8 // ep, ep):7.2f} "
                  f"{MOE_LAYERS * moe_ms('trtllm', 'deepgemm', moe_tokens, 8 // ep, ep):7.2f} | "
                  f"{1e3 * float(it.seconds):11.2f}")


def rates() -> None:
    print("\n== one GEMM (fp8_block), PFLOP/s: SGLang DeepGEMM | TensorRT-LLM DeepGEMM")
    for m in (1024, 4096, 16384):
        cells = []
        for n, k, _ in gemm_shapes(8) + gemm_shapes(1)[1:4]:
            pf = [2.0 * m * n * k / kernels.gemm_seconds(GPU, e, "fp8_block", m, n, k) / 1e15
                  for e in ("sglang", "trtllm")]
            cells.append(f"{n}x{k} {pf[0]:.2f}|{pf[1]:.2f}")
        print(f"m {m}: " + "; ".join(cells))
    print("\n== one MoE layer, ms (PFLOP/s): SGLang flashinfer_trtllm | TensorRT-LLM deepgemm")
    for tp, ep in ((8, 1), (1, 8)):
        for dist in ("balanced", "power_law_1.01"):
            cells = []
            for tokens in (1024, 4096, 16384):
                flop = tokens * 8 * 3 * H * MOE_FFN * 2 / 8  # per GPU
                a = moe_ms("sglang", "sglang_flashinfer_trtllm_moe", tokens, tp, ep, dist)
                b = moe_ms("trtllm", "deepgemm", tokens, tp, ep, dist)
                cells.append(f"{tokens}: {a:.3f} ({flop / a / 1e12:.2f}) | {b:.3f} ({flop / b / 1e12:.2f})")
            print(f"TP {tp} x EP {ep} {dist:>15}: " + "; ".join(cells))


def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    layouts()
    rates()


if __name__ == "__main__":
    main()

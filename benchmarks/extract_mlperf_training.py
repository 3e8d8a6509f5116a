"""Build data/validation/training_mlperf.csv from the MLCommons MLPerf Training v5.0 / v5.1 closed results.

Reads the submitters' repositories as published (github.com/mlcommons/training_results_v5.0 at
0fdc28f, training_results_v5.1 at 441d65f4), from local git mirrors given on the command line:

    python benchmarks/extract_mlperf_training.py V50_GIT_DIR V51_GIT_DIR > data/validation/training_mlperf.csv

Per (submitter, system, benchmark) of Llama 3.1 405B and 8B pretraining and Llama 2 70B LoRA:
the system JSON (accelerator, nodes x accelerators per node), and from every ``result_N.txt``
MLLOG the run's time to train (``run_stop`` - ``run_start``, the span MLPerf scores), the samples
it took to reach the target (``run_stop``'s ``samples_count``), ``global_batch_size``,
``max_sequence_length``, and the evaluations inside that span (``eval_accuracy`` events, mean per
run, of ``eval_samples`` sequences each). ``scaling.json``'s factor (the RCP scaling MLPerf applies to the
score) is kept beside the measured mean. The layout (TP, PP, CP, virtual stages, micro-batch,
FP8/FP4) is read where the submission ships a NeMo ``config_<SYSTEM>_<nodes>x<gpus>x<minibs>x
tp<t>pp<p>cp<c>*.sh`` whose nodes, GPUs per node and per-rank batch match the run; elsewhere
it is left empty (the check then searches layouts).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys

ROUNDS = {"v5.0": "0fdc28f013256aea84fa36fdaf1e0fa46094b18c", "v5.1": "441d65f4"}
BENCHMARKS = {"llama31_405b": "llama-3.1-405b", "llama31_8b": "llama-3.1-8b", "llama2_70b_lora": "llama-2-70b"}
ACCELERATORS = [("GB300", "gb300"), ("GB200", "gb200"), ("B300", "b300"), ("B200", "b200"), ("H200", "h200-sxm"),
                ("H100", "h100-sxm"), ("MI355X", "mi355x"), ("MI350X", "mi350x"), ("MI325X", "mi325x"),
                ("MI300X", "mi300x")]
COLUMNS = ["id", "round", "submitter", "system", "accelerator", "accelerator_name", "gpus", "benchmark", "model",
           "seq_len", "global_batch", "runs", "time_to_train_minutes", "samples_to_target", "tokens_to_target",
           "evals", "eval_samples",
           "scaling_factor", "tp", "pp", "cp", "virtual_stages", "micro_batch", "precision", "layout_source", "source"]


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def mllog(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if ":::MLLOG" not in line:
            continue
        rec = json.loads(line.split(":::MLLOG", 1)[1])
        key = rec["key"]
        if key in ("run_start", "run_stop"):
            out[key] = rec["time_ms"]
            if key == "run_stop":
                out["samples"] = rec["metadata"].get("samples_count")
                out["status"] = rec["metadata"].get("status")
        elif key in ("global_batch_size", "max_sequence_length", "gradient_accumulation_steps", "eval_samples"):
            out[key] = rec["value"]
        elif key == "eval_accuracy":
            out["evals"] = out.get("evals", 0) + 1
    return out


def accelerator_id(name: str) -> str | None:
    for key, ident in ACCELERATORS:
        if key in name.upper():
            return ident
    return None


MISSING = "# aisize: a sourced config is missing"


def _sourced(repo, commit, path, impl, seen=None) -> str:
    """The config's text after the files it sources (``source $(dirname ...)/config_x.sh``), in order."""
    seen = seen if seen is not None else set()
    if path in seen:
        return ""
    seen.add(path)
    text = git(repo, "show", f"{commit}:{path}")
    folder = path.rsplit("/", 1)[0]
    parts = []
    for line in text.splitlines():
        m = re.match(r"\s*(?:source|\.)\s+.*/(config_[A-Za-z0-9_]+\.sh)", line)
        if m and f"{folder}/{m.group(1)}" in impl:
            parts.append(_sourced(repo, commit, f"{folder}/{m.group(1)}", impl, seen))
        elif m:
            parts.append(MISSING)  # sources a file the submission does not ship: its settings are unknown
        parts.append(line)
    return "\n".join(parts)


def _value(text: str, name: str, default=None):
    """The last value a shell config gives ``name`` (``export N=v``, ``N=${N:-v}``, ``: "${N:=v}"``)."""
    found = default
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(rf"(?:export\s+)?{name}=(.*)$", line) or re.match(rf':\s*"?\$\{{{name}:[=-]([^}}]*)\}}', line)
        if not m:
            continue
        v = m.group(1).strip().strip('"').strip("'")
        inner = re.match(rf"\$\{{{name}:[-=]([^}}]*)\}}", v)
        found = inner.group(1) if inner else v
    return found


def _system_matches(prefix: str, accelerator: str) -> bool:
    """A NeMo config's system prefix (DGXH100, DGXB200, GB200, GB300) names this accelerator."""
    key = accelerator.split("-")[0].upper()  # gb200, b200, h100-sxm -> GB200, B200, H100
    p = prefix.upper()
    return key in p and not (key.startswith("B") and "G" + key in p)


def layout(repo, commit, impl_dirs, nodes, gpn, gpus, gbs, accelerator):
    """TP, PP, CP, VP, micro-batch, precision and the config's path, from the NeMo configs that match the
    run (nodes, GPUs per node and per-rank batch in the file name). When several match with different
    precisions (NVIDIA v5.1 ships an FP8 and an NVFP4 config of one shape) the precision is left empty."""
    found = []
    for impl in impl_dirs:
        for path in impl:
            m = re.search(r"config_([A-Za-z0-9]+)_(\d+)x(\d+)x(\d+)xtp(\d+)pp(\d+)cp(\d+)([A-Za-z0-9_]*)\.sh$", path)
            if not m or not _system_matches(m.group(1), accelerator):
                continue
            m = re.search(r"_(\d+)x(\d+)x(\d+)xtp(\d+)pp(\d+)cp(\d+)([A-Za-z0-9_]*)\.sh$", path)
            n, g, minibs, tp, pp, cp = (int(x) for x in m.groups()[:6])
            if (n, g) != (nodes, gpn) or gpus % (tp * pp * cp) or gpus // (tp * pp * cp) * minibs != gbs:
                continue
            text = _sourced(repo, commit, path, set(impl))
            vp = _value(text, "INTERLEAVED_PIPELINE") or _value(text, "VIRTUAL_PIPELINE")
            fp4 = "fp4" in m.group(7) or str(_value(text, "FP4", "")).lower() in ("true", "1")
            fp8 = str(_value(text, "FP8", "")).lower() in ("true", "1") or "fp8" in m.group(7)
            unknown = MISSING in text and _value(text, "FP8") is None and not fp4
            found.append(dict(tp=tp, pp=pp, cp=cp, virtual_stages=vp if vp and str(vp).isdigit() else "",
                              micro_batch=_value(text, "MICRO_BATCH_SIZE", "1"),
                              precision="" if unknown else ("nvfp4" if fp4 else ("fp8" if fp8 else "bf16")),
                              layout_source=path))
        if found:
            break  # the implementation named after the system first, then the others
    if not found:
        return {}
    first = dict(found[0])
    if len({f["precision"] for f in found}) > 1:
        first["precision"] = ""
        first["layout_source"] = ";".join(f["layout_source"] for f in found)
    return first


def rows(repo, round_name):
    commit = ROUNDS[round_name]
    files = git(repo, "ls-tree", "-r", "--name-only", commit).splitlines()
    results = sorted({tuple(f.split("/")[:4]) for f in files
                      if f.count("/") == 4 and f.split("/")[1] == "results" and f.split("/")[3] in BENCHMARKS
                      and re.search(r"/result_\d+\.txt$", f)})
    for submitter, _, system_dir, bench in results:
        sysfile = f"{submitter}/systems/{system_dir}.json"
        if sysfile not in files:
            continue
        system = json.loads(git(repo, "show", f"{commit}:{sysfile}"))
        if system.get("division") != "closed":
            continue
        nodes, gpn = int(system["number_of_nodes"]), int(system["accelerators_per_node"])
        runs = []
        for f in files:
            if f.startswith(f"{submitter}/results/{system_dir}/{bench}/result_") and f.endswith(".txt"):
                try:
                    log = mllog(git(repo, "show", f"{commit}:{f}"))
                except subprocess.CalledProcessError:  # a blob the mirror lacks: that run is left out
                    continue
                if log.get("status") == "success" and "run_start" in log and log.get("samples"):
                    runs.append(log)
        if not runs:
            continue
        scale_path = f"{submitter}/results/{system_dir}/{bench}/scaling.json"
        scale = json.loads(git(repo, "show", f"{commit}:{scale_path}"))["scaling_factor"] if scale_path in files else ""
        minutes = statistics.mean((r["run_stop"] - r["run_start"]) / 60000.0 for r in runs)
        samples = statistics.mean(r["samples"] for r in runs)
        seq, gbs = runs[0].get("max_sequence_length", 8192), runs[0].get("global_batch_size")
        impl_root = f"{submitter}/benchmarks/{bench}/implementations/"
        impls = {}
        for f in files:
            if f.startswith(impl_root):
                impls.setdefault(f.split("/")[4], []).append(f)
        ordered = [impls[k] for k in sorted(impls, key=lambda k: k != system_dir)]
        acc = accelerator_id(system["accelerator_model_name"]) or ""
        lay = layout(repo, commit, ordered, nodes, gpn, nodes * gpn, gbs, acc) if gbs and acc else {}
        yield dict(id=f"{round_name}:{submitter}:{system_dir}:{bench}", round=round_name, submitter=submitter,
                   system=system["system_name"], accelerator=accelerator_id(system["accelerator_model_name"]) or "",
                   accelerator_name=system["accelerator_model_name"], gpus=nodes * gpn, benchmark=bench,
                   model=BENCHMARKS[bench], seq_len=seq, global_batch=gbs or "", runs=len(runs),
                   time_to_train_minutes=round(minutes, 3), samples_to_target=round(samples, 1),
                   tokens_to_target=round(samples * seq), scaling_factor=scale,
                   evals=round(statistics.mean(r.get("evals", 0) for r in runs), 2),
                   eval_samples=runs[0].get("eval_samples", ""),
                   **{k: lay.get(k, "") for k in ("tp", "pp", "cp", "virtual_stages", "micro_batch", "precision",
                                                  "layout_source")},
                   source=f"https://github.com/mlcommons/training_results_{round_name}/tree/{commit}/{submitter}/"
                          f"results/{system_dir}/{bench}")


def main(argv):
    w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    w.writeheader()
    for repo, round_name in zip(argv[1:3], ROUNDS):
        for r in rows(repo, round_name):
            w.writerow(r)


if __name__ == "__main__":
    main(sys.argv)

"""``aisize calibrate`` reads untrusted files (issue 46): one-line errors, physical bounds, a safe ``--out``.

Every case goes through the command line (:func:`aisize.cli.main`, or a child ``python`` where the unfixed code
hung or grew without bound: that child runs under a memory rlimit and a timeout, so a regression fails instead
of stalling the suite). Each test failed before the fix: tracebacks for deep JSON, ``"tp": 0.4``, a throughput
of 0 and a field over 131,072 characters; "math domain error" for a negative throughput; 1e308 tokens/s and a
negative TPOT accepted; ``--out`` overwriting its own input and hanging on a FIFO; a FIFO or device input
reported as "does not exist"; no cap on runs and no progress.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from aisize import cli
from aisize.calibrate import cli as calibrate_cli
from aisize.calibrate import fitting
from aisize.calibrate.formats import read_runs
from aisize.calibrate.runs import predict
from aisize.serving.calibration import CALIBRATION

CHILD_MEMORY_BYTES = 2 * 1024**3  # enough to import aisize and SciPy; a run-away read or fit is stopped
CHILD_SECONDS = 60
VLLM = {"backend": "vllm", "model_id": "Qwen/Qwen3-8B", "max_concurrency": 4, "completed": 100,
        "total_input_tokens": 23300, "total_output_tokens": 22100, "output_throughput": 496.88,
        "mean_ttft_ms": 64.0, "mean_tpot_ms": 7.38}
FLAGS = ["--accelerator", "h100-sxm", "--tensor-parallel", "1", "--weight-precision", "bf16", "--kv-precision",
         "bf16", "--max-evaluations", "3"]
CSV_HEADER = "model_id,accelerator_id,engine,weight_precision,kv_precision,input_tokens,output_tokens,concurrency," \
             "tensor_parallel,output_tokens_per_s_per_gpu,tpot_ms\n"
CSV_ROW = "qwen3-8b,h100-sxm,vllm,bf16,bf16,233,221,4,1,496.88,7.38\n"


def _refused(capsys, *argv) -> str:
    """The one line ``aisize calibrate`` prints when it refuses ``argv`` (exit status 2, nothing else)."""
    code = cli.main(["calibrate", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("aisize calibrate: error: "), (code, err)
    return err[0]


def _child(*argv: str) -> subprocess.CompletedProcess:
    """``aisize calibrate ARGV`` in a fresh interpreter with a memory rlimit; a hang is a failure, not a stall."""
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY_BYTES}, {CHILD_MEMORY_BYTES}))
        from aisize.cli import main
        sys.exit(main(["calibrate", *sys.argv[1:]]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1")
    try:
        return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                              timeout=CHILD_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"aisize calibrate {' '.join(argv)} ran past {CHILD_SECONDS} s")


def _one_line(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(err) == 1 and err[0].startswith("aisize calibrate: error: "), (
        result.returncode, result.stderr[-2000:])
    return err[0]


def test_json_nested_100000_deep_is_one_line(tmp_path, capsys):
    for name, text in (("deep.json", "[" * 100_000 + "]" * 100_000),
                       ("deep.jsonl", json.dumps(VLLM) + "\n" + "{\"a\": " * 100_000 + "1" + "}" * 100_000)):
        (tmp_path / name).write_text(text)
        line = _refused(capsys, str(tmp_path / name), *FLAGS, "--out", str(tmp_path / "o.json"))
        assert name in line and "nested too deep" in line


@pytest.mark.parametrize("change,field,shown", [
    ({"tp": 0.4}, "tp", "0.4"), ({"tp": 0}, "tp", "0"), ({"output_throughput": 0}, "output_throughput", "0"),
    ({"output_throughput": -5}, "output_throughput", "-5"),
    ({"output_throughput": 1e308}, "output_throughput", "1e+308"),
    ({"mean_tpot_ms": -7}, "mean_tpot_ms", "-7"), ({"mean_ttft_ms": 1e9}, "mean_ttft_ms", "1000000000.0"),
    ({"mean_ttft_ms": 5e-324}, "mean_ttft_ms", "5e-324"),
    ({"completed": 0.5}, "completed", "0.5"), ({"max_concurrency": -4}, "max_concurrency", "-4"),
    ({"tp": "9" * 5000}, "tp", "inf")])  # a 5,000-digit integer: Python refuses to convert over 4,300
def test_every_json_figure_is_bounded_by_name(tmp_path, capsys, change, field, shown):
    """A figure outside its physical range names file, record, field, value and range: no ZeroDivisionError,
    no 'math domain error', and no calibration written from 1e308 tokens/s or a negative TPOT."""
    runs, out = tmp_path / "runs.json", tmp_path / "o.json"
    runs.write_text(json.dumps([VLLM, dict(VLLM, **change)]).replace('"' + "9" * 5000 + '"', "9" * 5000))
    line = _refused(capsys, str(runs), *FLAGS, "--out", str(out))
    assert f"runs.json record 2: {field}={shown} is not allowed: a " in line, line
    assert " from 1e-06 to " in line or " from 1 to " in line, line
    assert not out.exists()


@pytest.mark.parametrize("flag,value", [("--tensor-parallel", "-1"), ("--gpus", "-8"), ("--expert-parallel", "-2")])
def test_a_parallel_flag_out_of_range_is_refused(tmp_path, capsys, flag, value):
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps(VLLM))
    line = _refused(capsys, str(runs), *FLAGS, flag, value, "--out", str(tmp_path / "o.json"))
    assert f"{flag}={value} is not allowed: a whole number from 1 to " in line


@pytest.mark.parametrize("row,field", [
    (CSV_ROW.replace(",4,1,", ",4,0.4,"), "tensor_parallel=0.4"), (CSV_ROW.replace("496.88", "0"),
                                                                   "output_tokens_per_s_per_gpu=0"),
    (CSV_ROW.replace("496.88", "1e308"), "output_tokens_per_s_per_gpu=1e308"),
    (CSV_ROW.replace("7.38", "-7.38"), "tpot_ms=-7.38"), (CSV_ROW.replace(",233,", ",-233,"), "input_tokens=-233")])
def test_every_csv_figure_is_bounded_naming_file_and_line(tmp_path, capsys, row, field):
    runs = tmp_path / "runs.csv"
    runs.write_text(CSV_HEADER + CSV_ROW + row)
    line = _refused(capsys, str(runs), "--max-evaluations", "3", "--out", str(tmp_path / "o.json"))
    assert f"runs.csv:3: {field} is not allowed" in line, line


def test_malformed_files_name_file_and_line(tmp_path, capsys):
    big = tmp_path / "big.csv"  # one field longer than csv's limit of 131,072 characters
    big.write_text(CSV_HEADER + CSV_ROW + '"' + "x" * 140_000 + '"' + CSV_ROW[8:])
    out = ["--out", str(tmp_path / "o.json")]
    assert "big.csv:3: not CSV: field larger than field limit" in _refused(capsys, str(big), *out)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(CSV_HEADER.encode() + "qwen3-8b,h100-sxm,vllm,bf16,bf16,233,221,4,1,496.88,7.38 \xb5s\n".encode(
        "latin-1"))
    line = _refused(capsys, str(latin), *out)
    assert "latin.csv: byte " in line and "not UTF-8" in line


def test_a_misshapen_section_is_passed_over(tmp_path):
    shape = tmp_path / "shape.json"  # genai-perf's input_config is an object; a list is ignored, no AttributeError
    record = {k: v for k, v in VLLM.items() if k != "max_concurrency"}  # so that input_config is looked in
    shape.write_text(json.dumps(dict(record, input_config=[1], metrics="x", records=None)))
    assert cli.main(["calibrate", str(shape), *FLAGS, "--out", str(tmp_path / "o.json")]) == 0


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    path = {"fifo": tmp_path / "runs.json", "device": "/dev/zero", "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    line = _one_line(_child(str(path), *FLAGS, "--out", str(tmp_path / "o.json")))
    assert "is not a regular file" in line and "does not exist" not in line


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_out_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path, kind):
    runs, out = tmp_path / "runs.json", tmp_path / "o.json"
    runs.write_text(json.dumps(VLLM))
    if kind == "fifo":
        os.mkfifo(out)
    line = _one_line(_child(str(runs), *FLAGS, "--out", str(out) if kind == "fifo" else "/dev/null"))
    assert "--out=" in line and "is not a regular file" in line


def test_out_never_overwrites_an_input(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    runs, text = tmp_path / "runs.json", json.dumps(VLLM)
    runs.write_text(text)
    os.link(runs, tmp_path / "alias.json")
    os.symlink(runs, tmp_path / "link.json")
    for out in (runs, tmp_path / "d" / ".." / "runs.json", tmp_path / "alias.json", tmp_path / "link.json"):
        line = _refused(capsys, str(runs), *FLAGS, "--out", str(out))
        assert "is the input" in line and "overwrite" in line
    base = tmp_path / "base.json"  # --base is an input too
    assert cli.main(["calibrate", str(runs), *FLAGS, "--out", str(base)]) == 0
    assert "is the input" in _refused(capsys, str(runs), *FLAGS, "--base", str(base), "--out", str(base))
    assert runs.read_text() == text


def test_out_is_written_whole_or_not_at_all(tmp_path):
    """A write cut short (here a 1 KiB file-size limit, as on a full disk) leaves the earlier calibration."""
    runs, out = tmp_path / "runs.json", tmp_path / "o.json"
    runs.write_text(json.dumps(VLLM))
    out.write_text("earlier calibration\n")
    code = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        from aisize.cli import main
        sys.exit(main(["calibrate", {str(runs)!r}, *{FLAGS!r}, "--out", {str(out)!r}]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_SECONDS,
                            env=env)
    assert result.returncode == 2 and "cannot write" in result.stderr.splitlines()[-1], result.stderr[-2000:]
    assert out.read_text() == "earlier calibration\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json", "runs.json"]  # no temporary left behind


def test_runs_past_the_cap_are_refused_before_any_fit(tmp_path):
    """600,000 rows (24 MB) stop at row MAX_RUNS + 1, within the memory rlimit, instead of fitting for hours."""
    from aisize.calibrate.runs import MAX_RUNS

    big = tmp_path / "runs.csv"
    big.write_text(CSV_HEADER + CSV_ROW * 600_000)
    line = _one_line(_child(str(big), "--out", str(tmp_path / "o.json")))
    assert f"runs.csv:{MAX_RUNS + 2}: more than {MAX_RUNS:,} runs" in line
    many = tmp_path / "runs.json"
    many.write_text(json.dumps([VLLM] * (MAX_RUNS + 1)))
    assert f"more than {MAX_RUNS:,} runs" in _one_line(_child(str(many), *FLAGS, "--out", str(tmp_path / "o.json")))


def test_a_long_fit_reports_progress_on_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(calibrate_cli, "PROGRESS_SECONDS", 0.0)  # every evaluation counts as long
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps(VLLM))
    assert cli.main(["calibrate", str(runs), *FLAGS, "--out", str(tmp_path / "o.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("aisize calibrate: fitting 1 runs: ") and "model evaluations" in line
                       for line in err), err


def test_the_fit_models_each_deployment_once_with_the_same_figures(tmp_path):
    """The fit's cache (one model pass per deployment and per generation's constants) gives what predicting every
    run gives, on runs over three GPU generations with a deployment measured twice."""
    records = [dict(VLLM, hw=hw, output_throughput=t) for hw, t in (("h100-sxm", 400.0), ("h100-sxm", 500.0),
                                                                   ("b200", 900.0), ("mi355x", 700.0))]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(records))
    runs = read_runs([path], {"tensor_parallel": 1, "weight_precision": "bf16", "kv_precision": "bf16"})
    base = CALIBRATION
    constants = fitting.fitted_constants(runs, base)
    model = fitting._Model(runs, constants, base)
    x = np.array([fitting._value(base, c, g) for c, g in constants])
    for j in [None, *range(len(constants))]:  # the point, then a step in each constant as the Jacobian takes
        step = x.copy()
        if j is not None:
            step[j] *= 1.01
        cal = fitting._with(base, constants, step)
        cached, _ = model.predictions(cal, step)
        direct = [predict(r, cal) for r in runs]
        assert [(p.tokens_per_s_per_gpu, p.tpot_s, p.error) for p in cached] == [
            (p.tokens_per_s_per_gpu, p.tpot_s, p.error) for p in direct], constants[j] if j is not None else None

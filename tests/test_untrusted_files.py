"""Files named inside a scenario or given on the command line are untrusted (issue 22).

A scenario that arrives through the app (an upload, a widget) or any in-memory dict never makes
aisize read a path: its ``hf_config`` must carry the config embedded. Only a scenario file the CLI
was given (``load``) may name a config.json on disk, and then only a regular file, read with a
byte cap: never a device (``/dev/zero`` grew a kernel by 1.2 GiB in 0.6 s), never a FIFO (it
hung). A config.json nested 5,000 deep, or with a 5,000-digit integer, is refused by name.

The cases that hung or exhausted memory before the fix run in a child process with a memory
rlimit and a timeout, so that running them on the unfixed code fails instead of taking the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aisize import models
from aisize.cli import main
from aisize.scenario import ScenarioError, from_dict, load, loads
from hf_configs import QWEN2_5_7B

CHILD_MEMORY_BYTES = 2 * 1024**3  # enough to import aisize; /dev/zero read whole is refused
CHILD_SECONDS = 60


def _scenario(model) -> dict:
    return {"name": "upload", "workloads": [{"kind": "training", "name": "ft", "model": model,
                                             "tokens_billion": 1, "gpus": 8}]}


def _child(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with a memory rlimit; a hang is a timeout, not a stuck suite."""
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY_BYTES}, {CHILD_MEMORY_BYTES}))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    try:
        return subprocess.run([sys.executable, "-c", limit + textwrap.dedent(code), *args], capture_output=True,
                              text=True, timeout=CHILD_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {CHILD_SECONDS} s")


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "config.json"
    os.mkfifo(path)
    return path


def test_an_uploaded_scenario_never_reads_a_path(tmp_path):
    real = tmp_path / "real" / "config.json"  # a valid config.json somewhere on the server
    real.parent.mkdir()
    real.write_text(json.dumps(QWEN2_5_7B))
    messages = []
    for path in (str(real), str(real.parent), "/nonexistent/config.json", "/etc/passwd"):
        text = json.dumps(_scenario({"hf_config": path}))
        with pytest.raises(ScenarioError) as refused:
            loads(text, fmt="json")
        messages.append(str(refused.value).replace(path, "PATH"))
        with pytest.raises(ScenarioError):
            from_dict(_scenario({"hf_config": path}))
    # the same words whether the file exists, is a folder, is missing or is not a config: nothing leaks
    assert len(set(messages)) == 1, messages
    assert "embed" in messages[0] and "config" in messages[0]


def test_an_uploaded_scenario_with_a_device_path_is_refused_at_once():
    result = _child("""
        import json, sys
        from aisize.scenario import ScenarioError, loads
        for model in ({"hf_config": "/dev/zero"}, {"hf_config": "/dev/zero", "config": {}}):
            text = json.dumps({"name": "x", "workloads": [{"kind": "training", "name": "ft", "model": model,
                                                          "tokens_billion": 1, "gpus": 8}]})
            try:
                loads(text, fmt="json")
            except ScenarioError as error:
                print("refused:", str(error).replace(chr(10), " "))
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("refused:") == 2, result.stdout


def test_the_cli_refuses_a_device_and_a_fifo(tmp_path, fifo):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps(_scenario({"hf_config": "/dev/zero"})))
    run = "import sys; from aisize.cli import main; sys.exit(main(sys.argv[1:]))"
    for args, what in ((["size", str(scenario)], "/dev/zero"), (["model", "/dev/zero"], "/dev/zero"),
                       (["model", str(fifo)], str(fifo)), (["model", str(fifo.parent)], str(fifo))):
        result = _child(run, *args)
        assert result.returncode == 2, (args, result.stderr[-2000:])
        assert "not a regular file" in result.stderr and what in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_cli_scenario_file_still_reads_its_config_json(tmp_path):
    folder = tmp_path / "Qwen2.5-7B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN2_5_7B))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_scenario({"hf_config": str(folder)})))
    scenario = load(path)
    assert scenario.workloads[0].model.config == QWEN2_5_7B  # embedded: the saved scenario stands alone
    assert models.params(scenario.workloads[0].model).total == 7_615_616_512


def test_a_config_json_over_the_byte_cap_is_refused(tmp_path):
    big = tmp_path / "config.json"
    big.write_text(json.dumps(dict(QWEN2_5_7B, padding="x" * 6_000_000)))
    with pytest.raises(ValueError, match="larger than"):
        models.from_hf_config(big)


def test_a_deeply_nested_config_json_is_refused_by_name(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text('{"model_type": "llama", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    assert main(["model", str(deep)]) == 2
    err = capsys.readouterr().err
    assert "nested" in err and str(deep) in err
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(_scenario({"hf_config": str(deep)})))
    assert main(["size", str(scenario)]) == 2
    assert "nested" in capsys.readouterr().err


def test_a_huge_integer_in_a_config_json_names_its_key(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_5_7B).replace('"hidden_size": 3584', '"hidden_size": ' + "9" * 5000))
    assert main(["model", str(path)]) == 2
    err = capsys.readouterr().err
    assert "'hidden_size'" in err and "5000 digits" in err

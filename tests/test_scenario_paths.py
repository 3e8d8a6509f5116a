"""Every path a scenario can name goes through one gate (aisize.scenario.paths; issue 46).

A scenario from an upload, the app or any dict names no file: whatever its path field names (a readable
server file, ``/dev/zero``, a FIFO, nothing), the refusal is the same and nothing is read. A scenario file
given to the command line may name files, read as regular files under a byte cap; missing, a device, a
FIFO, a folder or too large give one message whatever the path names. Each path field is marked in the
schema, so that the walk below finds a new one (and fails until it is marked and has a case here).

The cases that hung or exhausted memory before the gate (a load profile's ``csv`` read anything) run in a
child process with a memory rlimit and a timeout, so that the unfixed code fails instead of stalling.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from aisize.scenario import ScenarioError, dumps, load, loads, preset, to_dict
from aisize.scenario import paths as P
from aisize.scenario.io import MAX_FILE_BYTES
from aisize.scenario.model import Scenario
from aisize.serving import CALIBRATION
from hf_configs import QWEN2_5_7B

CHILD_MEMORY_BYTES = 2 * 1024**3  # enough to import aisize; /dev/zero read whole is not
CHILD_SECONDS = 90
# a field name that suggests a file: it must be marked (and so read through the gate) or not be a string
SUSPECT = re.compile(r"(^|_)(file|filename|path|csv|json|yaml|config|dir|folder|url|uri)s?($|_)")
CSV = "time,requests_per_s\n00:00,0.5\n08:00,1\n20:00,0.7\n"
CSV_POINTS = ((0.0, 0.5), (8.0, 1.0), (20.0, 0.7))
MODIFIED = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
HALF = CALIBRATION.with_(name="half-hopper-gemm",
                         gemm_efficiency={**CALIBRATION.gemm_efficiency,
                                          "hopper": CALIBRATION.gemm_efficiency["hopper"] / 2})


def _hf_config(path: str) -> dict:
    return {"name": "x", "workloads": [{"kind": "training", "name": "ft", "model": {"hf_config": path},
                                        "tokens_billion": 1, "gpus": 8}]}


def _calibration(path: str) -> dict:
    data = to_dict(preset("fleet-over-the-day"))
    data["policies"]["serving_calibration"] = {"file": path}
    return data


def _csv(path: str) -> dict:
    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"][0]["fleet"]["load_profile"] = {"csv": path}
    return data


# (model, field) of each marked field -> a scenario naming a path there, and a valid file's content
CASES = {("HfConfigModel", "hf_config"): (_hf_config, json.dumps(QWEN2_5_7B)),
         ("ServingCalibration", "file"): (_calibration, HALF.to_json()),
         ("LoadProfile", "csv"): (_csv, CSV)}


# --- the schema: every path field is marked ---------------------------------------------------------------

def _leaves(annotation):
    """The annotation, every type argument in it and every Annotated metadata object, recursively."""
    yield annotation
    for arg in typing.get_args(annotation):
        yield from _leaves(arg)


def _fields(model=Scenario, seen=None):
    """(model, field name, the field's leaves) of every field of ``model`` and of every model nested in it."""
    seen = set() if seen is None else seen
    seen.add(model)
    for name, info in model.model_fields.items():
        leaves = list(_leaves(info.annotation)) + [x for m in info.metadata for x in _leaves(m)]
        yield model, name, leaves
        for leaf in leaves:
            if isinstance(leaf, type) and issubclass(leaf, BaseModel) and leaf not in seen:
                yield from _fields(leaf, seen)


def _marked() -> dict:
    return {(m.__name__, name): [x for x in leaves if isinstance(x, P.ScenarioPath)]
            for m, name, leaves in _fields() if any(isinstance(x, P.ScenarioPath) for x in leaves)}


def test_every_field_that_may_name_a_file_is_marked_and_has_a_case_here():
    walked = {(m.__name__, name): leaves for m, name, leaves in _fields()}
    assert len(walked) > 150 and ("LoadProfile", "points") in walked  # the walk reaches nested models
    marked = _marked()
    suspects = {key for key, leaves in walked.items()
                if any(isinstance(x, type) and issubclass(x, os.PathLike) for x in leaves)  # a Path
                or (any(x is str for x in leaves) and SUSPECT.search(key[1]))}  # text named like a path
    assert suspects - set(marked) == set(), "a field that may name a file is not marked with ScenarioPath"
    for key, markers in marked.items():  # its content is embedded: it must fit in a scenario file
        assert len(markers) == 1 and markers[0].field == key[1] and 0 < markers[0].max_bytes <= MAX_FILE_BYTES, key
    # a new path field needs its behavioural case below
    assert set(marked) == set(CASES)


def test_no_scenario_module_reads_a_file_but_the_gate():
    folder = Path(P.__file__).parent
    reads = re.compile(r"\.read_text\(|\.read_bytes\(|\bopen\(|read_file\(|read_config\(|from_csv\(Path|"
                       r"serving_calibration\.(?:load|read_text)\(")
    for path in folder.glob("*.py"):
        found = reads.findall(path.read_text())
        # io.load reads the scenario file itself (the command line's argument), under its own cap
        allowed = {"paths.py": 1, "io.py": 1}.get(path.name, 0)
        assert len(found) <= allowed, (path.name, found)


# --- behaviour, in a child process: no hang, no memory blow-up ---------------------------------------------

def _child(code: str, *args: str) -> str:
    """The output of ``code`` run in a fresh interpreter with a memory rlimit; a hang fails, not stalls."""
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY_BYTES}, {CHILD_MEMORY_BYTES}))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    try:
        result = subprocess.run([sys.executable, "-c", limit + textwrap.dedent(code), *args], capture_output=True,
                                text=True, timeout=CHILD_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {CHILD_SECONDS} s (a FIFO or a device was opened)")
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _quoted_as(message: str, path: str, word: str = "PATH") -> str:
    """``message`` with the quoted ``path`` as ``word``: a long path is quoted cut short ('/tmp/...gw0'...)."""
    if repr(path) in message:
        return message.replace(repr(path), word)
    return re.sub(re.escape(repr(path)[:24]) + r"[^']*'\.\.\.", word, message)


def _run(cases: list, tmp_path: Path) -> list[str]:
    """Each case (a scenario dict, or the path of a scenario file for ``load``) validated in one child; its
    outcome: "refused: MESSAGE" or "accepted"."""
    given = tmp_path / "cases.json"
    given.write_text(json.dumps(cases))
    out = _child("""
        import json, sys
        from aisize.scenario import ScenarioError, from_dict, load
        out = []
        for case in json.load(open(sys.argv[1])):
            try:
                load(case) if isinstance(case, str) else from_dict(case)
                out.append("accepted")
            except ScenarioError as error:
                out.append("refused: " + str(error))
        print(json.dumps(out))
    """, str(given))
    return json.loads(out.splitlines()[-1])


@pytest.fixture
def server_files(tmp_path) -> dict:
    """Paths a scenario might name on the server: a readable file, a device, a FIFO, a folder, nothing."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    return {"passwd": "/etc/passwd", "zero": "/dev/zero", "fifo": str(tmp_path / "fifo"),
            "folder": str(tmp_path / "folder"), "missing": str(tmp_path / "missing.txt")}


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_scenario_from_an_upload_or_a_dict_reads_no_path(key, tmp_path, server_files):
    build, content = CASES[key]
    valid = tmp_path / "valid.txt"  # a file in the right shape: it must not be copied into the scenario
    valid.write_text(content)
    named = {**server_files, "valid": str(valid)}
    outcomes = _run([build(path) for path in named.values()], tmp_path)
    messages = {outcome.replace(path, "PATH") for outcome, path in zip(outcomes, named.values())}
    assert len(messages) == 1, messages  # the same words whatever the path names
    [said] = messages
    assert said.startswith("refused: ") and f"{key[1]}: a path is read only from a scenario file given to the " \
                                              "command line" in said, said


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_scenario_file_names_only_regular_files_under_the_cap(key, tmp_path, server_files):
    build, content = CASES[key]
    marker = _marked()[key][0]
    big = tmp_path / "big.txt"
    big.write_text(content + " " * (marker.max_bytes + 1 - len(content)))
    named = {**server_files, "relative missing": "no-such-file.txt", "too large": str(big)}
    del named["passwd"]  # a regular file: read, and refused for its content (last)
    files = []
    for i, path in enumerate([*named.values(), "/etc/passwd"]):
        files.append(str(tmp_path / f"s{i}.yaml"))
        Path(files[-1]).write_text(yaml.safe_dump(build(path)))
    *outcomes, passwd = _run(files, tmp_path)
    messages = {_quoted_as(o.replace(f, "FILE"), p) for o, f, p in zip(outcomes, files, named.values())}
    assert len(messages) == 1, messages  # missing, a device, a FIFO, a folder, too large: one message
    [said] = messages
    assert said.startswith("refused: ") and f"{key[1]}=PATH cannot be read" in said, said
    assert f"a regular file of at most {marker.max_bytes:,} bytes" in said and "Errno" not in said, said
    # a readable file of the wrong kind is refused for its content, which is not shown
    assert passwd.startswith("refused: ") and "root:" not in passwd, passwd


def test_a_scenario_file_embeds_the_files_it_names_and_the_saved_scenario_stands_alone(tmp_path):
    (tmp_path / "Qwen2.5-7B").mkdir()
    (tmp_path / "Qwen2.5-7B" / "config.json").write_text(json.dumps(QWEN2_5_7B))
    (tmp_path / "half.json").write_text(HALF.to_json())
    (tmp_path / "rates.csv").write_text(CSV)
    data = _csv("rates.csv")  # relative: from the scenario file's folder
    data["policies"]["serving_calibration"] = "half.json"
    data["workloads"].append(_hf_config(str(tmp_path / "Qwen2.5-7B"))["workloads"][0])  # a folder: its config
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    s = load(tmp_path / "s.yaml")
    assert s.workloads[0].fleet.load_profile.points == CSV_POINTS
    assert s.policies.serving_calibration.calibration == HALF
    assert s.workloads[-1].model.config == QWEN2_5_7B
    assert loads(dumps(s)) == s  # a saved scenario reads no path: its files' contents are embedded


def test_a_profile_csv_path_given_to_the_api_is_read_through_the_gate(tmp_path):
    from aisize.fleet import from_csv

    (tmp_path / "rates.csv").write_text(CSV)
    assert from_csv(tmp_path / "rates.csv").start_seconds == (0.0, 8 * 3600.0, 20 * 3600.0)
    said = _child("""
        from pathlib import Path
        from aisize.fleet import from_csv
        try:
            from_csv(Path("/dev/zero"))
        except ValueError as error:
            print(error)
    """)
    assert said.startswith("load_profile.csv='/dev/zero' cannot be read: ") and "regular file" in said, said


# --- the app: a file that cannot be loaded says so ---------------------------------------------------------

@pytest.fixture(scope="module")
def app():
    from aisize.app import build_app

    return build_app(display=False)


def _upload(widget, content: bytes, name: str) -> None:
    widget.value = ({"name": name, "type": "", "size": len(content), "content": memoryview(content),
                     "last_modified": MODIFIED},)


@pytest.mark.parametrize("error, said", [(MemoryError, "the server ran out of memory"),
                                         (RuntimeError, "could not be loaded (RuntimeError)")])
def test_an_unexpected_failure_while_loading_a_file_is_shown_on_the_page(app, monkeypatch, error, said):
    from aisize.app import layout, model_upload
    from aisize.app.sections import compare, serving_accuracy

    def fail(*args, **kwargs):
        raise error()

    before = app.state.data
    monkeypatch.setattr(layout, "loads", fail)
    _upload(app.upload, dumps(preset("io-blender")).encode(), "mine.yaml")
    assert "aisize-error" in app.status.value and "uploaded file: the file" in app.status.value
    assert said in app.status.value and "Traceback" not in app.status.value and app.upload.value == ()

    monkeypatch.setattr(model_upload, "config_from_upload", fail)
    _upload(app.model.upload, json.dumps(QWEN2_5_7B).encode(), "config.json")
    assert "aisize-error" in app.model.info.value and said in app.model.info.value

    monkeypatch.setattr(serving_accuracy, "calibration_from_upload", fail)
    runs = app["Accuracy"].serving
    _upload(runs.upload, HALF.to_json().encode(), "half.json")
    assert "calibration refused" in runs.error.value and said in runs.error.value

    monkeypatch.setattr(compare, "loads", fail)
    section = app["Compare"]
    _upload(section.upload, dumps(preset("io-blender")).encode(), "b.yaml")
    assert "scenario B: the file" in section.error.value and said in section.error.value
    assert app.state.data == before  # nothing was changed


def test_a_plan_that_runs_out_of_memory_on_a_move_is_said_on_the_page(app, monkeypatch):
    """Issue 46.4: a MemoryError anywhere in the app shows a message; a slider move re-plans the scenario."""
    from aisize.app import state as app_state

    def exhausted(scenario, cache=None):
        raise MemoryError

    before = app.state.data
    monkeypatch.setattr(app_state, "plan", exhausted)
    said = app.state.set(("policies", "memory_headroom"), 0.2)
    assert said is not None and "ran out of memory" in said and "last plan is kept" in said
    assert app.state.data == before

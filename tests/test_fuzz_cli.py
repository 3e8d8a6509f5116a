"""Fuzz of the command line (issue 10): bad files and options exit 2 with a short message, no traceback.

``aisize report`` is only given bad parameters: every case here is refused while validating,
before papermill executes anything.
"""

from __future__ import annotations

import pytest
from fuzz_profiles import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aisize.cli import main
from aisize.scenario.io import MAX_FILE_BYTES



@pytest.fixture(scope="module")
def good(tmp_path_factory):
    from aisize.scenario import DEFAULT_PRESET, dumps, preset

    path = tmp_path_factory.mktemp("cli") / "good.yaml"
    path.write_text(dumps(preset(DEFAULT_PRESET)))
    return path


def _run(argv, capsys):
    """(exit status, stderr); argparse's own usage errors exit through SystemExit."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def assert_refused(argv, capsys, *expected):
    code, err = _run(argv, capsys)
    assert code == 2, f"{argv}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err and err.strip(), f"{argv}: {err!r}"
    lines = err.strip().splitlines()
    # one line, or one line per invalid field of a scenario (a changed workload kind lists each)
    assert len(lines) <= 30 and len(err) < 4000, f"{argv}: {len(lines)} lines, {len(err)} characters"
    assert "error" in lines[-1] or "error" in lines[0]
    for text in expected:
        assert text in err, f"{argv}: {text!r} not in {err!r}"


BAD_FILES = {
    "missing.yaml": None,
    "empty.yaml": "",
    "list.yaml": "- 1\n- 2\n",
    "scalar.yaml": "42\n",
    "broken.yaml": "name: [unclosed\n",
    "tabs.yaml": "name:\tx\n\tworkloads: 1\n",
    "python.yaml": "!!python/object/apply:os.system ['echo pwned']\n",
    "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "name: *i\n",
    "version.yaml": "schema_version: 99\nname: x\nworkloads: []\n",
    "nan.json": '{"name": "x", "policies": {"mfu": NaN}, "workloads": []}',
    "broken.json": '{"name": "x",',
    "deep.json": "[" * 50_000 + "]" * 50_000,
    "unknown.yaml": "name: x\nworkloads: []\ncolour: red\n",
    "unicode.yaml": "name: \"\u202e\u0000\"\nworkloads: []\n",
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
@pytest.mark.parametrize("command", [["size"], ["size", "--json"], ["sweep", "--vary", "policies.mfu=0.3,0.4"]])
def test_bad_scenario_files_exit_2(name, command, tmp_path, capsys):
    path = tmp_path / name
    if BAD_FILES[name] is not None:
        path.write_text(BAD_FILES[name], encoding="utf-8")
    assert_refused([command[0], path, *command[1:]], capsys)


def test_binary_huge_and_folder_inputs_exit_2(tmp_path, capsys):
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(bytes(range(256)) * 10)
    assert_refused(["size", binary], capsys, "cannot be read")
    huge = tmp_path / "huge.yaml"
    huge.write_text("name: x\n" + "#" * MAX_FILE_BYTES)
    assert_refused(["size", huge], capsys, "at most")
    assert_refused(["size", tmp_path], capsys)


@pytest.mark.parametrize("vary", [
    "policies.mfu", "policies.mfu=", "=0.3,0.4", "policies.mfu=abc", "policies.mfu=0.3:0.5",
    "policies.mfu=0.5:0.3:0", "policies.mfu=0.3:0.5:-2", "policies.mfu=nan,0.4", "policies.mfu=inf",
    "policies.mfu=1e300", "policies.mfu=-1", "policies.nope=1,2", "workloads.99.gpus=1,2",
    "workloads.x.gpus=1,2", "hardware.server=nope", "hardware=1,2", "policies.mfu=0.3:0.5:1e9",
    "schema_version=2", "workloads.0.kind=inference", "..=1", "policies.mfu=0.3:0.5:3:4",
])
def test_bad_vary_exits_2(vary, good, capsys):
    assert_refused(["sweep", good, "--vary", vary], capsys)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.text(max_size=40).filter(lambda s: "\x00" not in s))
def test_random_vary_exits_0_or_2(good, capsys, vary):
    code, err = _run(["sweep", good, "--vary", vary], capsys)
    capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in err, (vary, code, err)


# Values PyYAML cannot read stay text and are then refused by the scenario check.
@pytest.mark.parametrize("vary", ["policies.mfu==", "policies.mfu=\x1b", "policies.mfu=0.3,!!python/name:os.system"])
def test_vary_values_yaml_cannot_read_exit_2(vary, good, capsys):
    assert_refused(["sweep", good, "--vary", vary], capsys)


@pytest.mark.parametrize("argv", [
    ["size"], ["size", "a.yaml", "--json", "--csv", "x"], ["sweep", "a.yaml"], ["preset"],
    ["preset", "xe9680-genai", "--format", "toml"], ["nonsense"], ["size", "--bogus", "a.yaml"],
])
def test_argparse_usage_errors_exit_2(argv, capsys):
    assert_refused(argv, capsys)


@pytest.mark.parametrize("name", ["nope", "", "../etc/passwd", "x" * 10_000, "ünïcødé", "xe9680-genai.yaml"])
def test_unknown_preset_exits_2_listing_the_allowed(name, capsys):
    assert_refused(["preset", name], capsys, "allowed")


def test_unwritable_outputs_exit_2(good, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_refused(["size", good, "--excel", blocker / "sub" / "plan.xlsx"], capsys, "cannot write")
    assert_refused(["sweep", good, "--vary", "policies.mfu=0.3,0.4", "--csv", blocker / "sub" / "t.csv"],
                   capsys, "cannot write")


def _report_refused(argv, capsys, *expected):
    code, err = _run(["report", *argv], capsys)
    assert code == 2, f"{argv}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err and "aisize report" in err
    assert len(err.strip().splitlines()) <= 12
    for text in expected:
        assert text in err


@pytest.mark.parametrize("argv, expected", [
    (["--preset", "nope"], "nope"),
    (["missing.yaml"], "does not exist"),
    (["scenario.txt"], ".yaml"),
    (["--preset", "xe9680-genai", "--title", 'bad "quote"'], "title"),
    (["--preset", "xe9680-genai", "--customer", "<script>"], "customer"),
    (["--preset", "xe9680-genai", "--title", "x" * 5000], "title"),
    (["--preset", "xe9680-genai", "--sections", "nope,also-nope"], "nope"),
    (["--preset", "xe9680-genai", "--name", "../escape"], "name"),
    (["--preset", "xe9680-genai", "--name", "a/b"], "name"),
    (["--preset", "xe9680-genai", "--format", "docx"], "format"),
    (["--preset", "xe9680-genai", "--out", "{blocker}"], "out"),
])
def test_bad_report_parameters_exit_2_before_rendering(argv, expected, tmp_path, capsys, monkeypatch):
    import aisize.report.execute as execute

    def never(*args, **kwargs):
        raise AssertionError("a bad parameter reached execution")

    monkeypatch.setattr(execute, "execute", never)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blocker").write_text("x")
    (tmp_path / "scenario.txt").write_text("name: x\n")
    _report_refused([a.replace("{blocker}", str(tmp_path / "blocker")) for a in argv], capsys, expected)


def test_report_of_a_bad_scenario_file_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nworkloads: []\n")
    _report_refused([bad], capsys, "workloads")

"""The README speaks for the project alone: every shell command it shows runs on this checkout.

The same holds for the documents in ``docs/`` it links to (the engineering history moved there from the
README, issue 49.5): their commands run too, each document's ``sh`` blocks in a scratch folder of its own.
The fenced ``sh`` blocks run line by line, in order (a later line uses the file an earlier one
wrote), in a scratch folder that sees the checkout's ``.venv``, ``data`` and ``benchmarks``. A
``make`` target is checked with ``make -n`` (it exists and its recipe expands: running ``make test``
from the test suite would recurse); a server command (``aisize app``) must answer within a minute.
The fenced ``python`` block runs as it is. Commands quoted inline (``aisize validate --family
serving``) run too; a benchmark, and ``aisize validate --cross-validate``, runs with ``--help`` (it imports
and parses its options; running one takes minutes), or is compiled when it has no options. No command may name a path outside the checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
TEXTS = {"README.md": README, **DOCS}
LINKED = (".venv", "data", "benchmarks", "notebooks")
SERVERS = ("aisize app", "aisize team")


def fenced(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def sh_commands(text: str = README) -> list[str]:
    """Each command line of the ``sh`` blocks, its trailing comment removed."""
    out = []
    for block in fenced("sh", text):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", " " + line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


def inline_commands(text: str = README) -> list[str]:
    """Commands quoted inline in the prose (`aisize ...`, `.venv/bin/...`, `make ...`, `VAR=x ...`)."""
    quoted = re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)
    pattern = re.compile(r"^([A-Z_]+=\S+ )*(\.venv/bin/\S+|aisize |make |python )")
    return sorted({q.strip() for q in quoted if pattern.match(q.strip())})


def test_no_command_names_a_path_outside_the_checkout():
    outside = [(name, c) for name, text in TEXTS.items() for c in sh_commands(text) + inline_commands(text)
               if "../" in c or c.startswith("/")]
    assert not outside, f"commands that reach outside the checkout: {outside}"


def test_the_readme_stays_short_and_starts_with_the_two_commands():
    """A newcomer reads what to type first (issue 49.5): the README's first commands are `make app` and
    `make test`, and the engineering history lives in docs/, not in the README."""
    assert sh_commands()[:2] == ["make app", "make test"]
    assert len(README.splitlines()) < 250


def test_the_readme_links_only_to_documents_in_the_checkout():
    links = {m for text in TEXTS.values() for m in re.findall(r"\]\(((?:docs/)?[\w.-]+\.md)(?:#[\w-]+)?\)", text)}
    assert "docs/accuracy.md" in links and "docs/calibration.md" in links
    for name, text in TEXTS.items():
        base = (ROOT / name).parent
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", text):
            assert (base / target).is_file(), f"{name} links to {target}, which is not in the checkout"


def scratch(tmp_path: Path) -> Path:
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_server(command: str, cwd: Path) -> None:
    """Start ``command`` on a free port and wait until it answers HTTP (then stop it)."""
    port = free_port()
    args = shlex.split(command) + [f"--port={port}"]
    with open(cwd / "server.log", "wb") as log:
        process = subprocess.Popen(args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                    return
            except OSError:
                assert process.poll() is None, (cwd / "server.log").read_text()[-2000:]
                time.sleep(0.2)  # a finer poll: up to a second less idle per server start
        pytest.fail(f"{command!r} did not answer within 90 s: {(cwd / 'server.log').read_text()[-2000:]}")
    finally:
        process.terminate()
        process.wait(30)


# Commands that passed in this run and touch no file of their scratch folder (no redirection, every
# path under a linked folder): `aisize validate --family serving` is quoted in four documents and
# the README's sh block; running it again shows nothing the first run did not.
_PASSED: set[str] = set()


def _stateless(command: str, words: list[str]) -> bool:
    paths = [w for w in words[1:] if "/" in w or "." in w.lstrip("-.")]
    return not any(c in command for c in "<>|;&$") and all(
        w.split("/")[0] in LINKED and "/" in w for w in paths if not w.startswith("-"))


def run_command(command: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    words = shlex.split(command)
    quoted = ".venv/bin/" + command if command.startswith(("aisize ", "python ")) else command
    if quoted in _PASSED:
        return
    if words[0] == "make" or (words[0].count("=") == 1 and "make" in words):
        make = words.index("make")
        target = [w for w in words[make + 1:]]
        done = subprocess.run(["make", "-n", "-C", str(ROOT), *target], capture_output=True, text=True, env=env,
                              timeout=120)
        assert done.returncode == 0, f"{command!r}: make -n failed: {done.stderr[-1500:]}"
        return
    if any(server in command for server in SERVERS) and "--help" not in words:
        if "aisize team" in command:  # needs the team extra and a proxy; its start is tested in tests/team
            done = subprocess.run([str(ROOT / ".venv/bin/aisize"), "team", "--help"], capture_output=True,
                                  text=True, env=env, timeout=120)
            assert done.returncode == 0, done.stderr[-1500:]
            return
        run_server(command.replace("aisize app", f"{ROOT}/.venv/bin/aisize app")
                   if command.startswith("aisize ") else command, cwd)
        return
    if "--cross-validate" in words:  # refits the serving constants once per model and GPU: minutes; options parse
        command += " --help"
    if "benchmarks/" in command:  # a benchmark takes minutes: its options parse, or it compiles
        script = next(w for w in words if w.startswith("benchmarks/"))
        if "argparse" in (ROOT / script).read_text(encoding="utf-8"):
            command += " --help"
        else:
            command = f".venv/bin/python -m py_compile {script}"
    if command.startswith("aisize "):
        command = ".venv/bin/" + command
    if command.startswith("python "):
        command = ".venv/bin/" + command
    done = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"{command!r} exited {done.returncode}: {done.stderr[-2000:]}"
    if _stateless(quoted, words):
        _PASSED.add(quoted)


def chromium() -> bool:
    from aisize.report.pdf import chromium_path

    return chromium_path() is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in TEXTS if sh_commands(TEXTS[n])])
def test_the_readme_shell_blocks_run_in_order(tmp_path, name):
    cwd = scratch(tmp_path)
    ran = []
    for command in sh_commands(TEXTS[name]):
        if "--format both" in command and not chromium():
            command = command.replace("--format both", "--format html")  # PDF needs Chromium
        run_command(command, cwd)
        ran.append(command)
    if name == "README.md":
        assert any("aisize size" in c for c in ran) and any(c.startswith("make") for c in ran)


@pytest.mark.slow
def test_the_readme_python_block_runs(tmp_path):
    assert fenced("python"), "the README shows no Python"
    cwd = scratch(tmp_path)
    for block in [b for text in TEXTS.values() for b in fenced("python", text)]:
        done = subprocess.run([sys.executable, "-c", block], cwd=cwd, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in TEXTS if inline_commands(TEXTS[n])])
def test_the_readme_inline_commands_run(tmp_path, name):
    cwd = scratch(tmp_path)
    commands = inline_commands(TEXTS[name])
    if name == "README.md":
        assert "aisize validate --family serving" in commands
    for command in commands:
        if command.startswith("aisize app") or command == "aisize team":
            continue  # the same servers as the sh blocks' .venv/bin/aisize app and make team
        run_command(command, cwd)


def test_make_is_there():
    assert shutil.which("make"), "the README's two commands need make"

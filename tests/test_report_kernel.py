"""The report's kernel starts before the inputs are checked, runs the notebook, and never outlives the run."""

from __future__ import annotations

import pytest

from aisize.report import ParameterError, execute, render


@pytest.fixture
def kernels(monkeypatch):
    """Every kernel render starts early, kept to look at after the run."""
    started = []
    real = execute.start_kernel

    def start(cwd):
        km = real(cwd)
        started.append(km)
        return km

    monkeypatch.setattr(execute, "start_kernel", start)
    return started


def test_a_refused_input_stops_the_kernel_started_for_it(kernels, tmp_path):
    with pytest.raises(ParameterError, match="preset 'nope' does not exist"):
        render(preset="nope", fmt="html", out_dir=tmp_path / "out")
    assert len(kernels) == 1 and kernels[0] is not None
    assert not kernels[0].has_kernel  # stopped, not left running
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_the_report_runs_in_the_early_kernel_and_stops_it(kernels, tmp_path):
    result = render(preset="littles-law", fmt="html", out_dir=tmp_path, sections=["executive", "queueing"])
    assert len(kernels) == 1 and not kernels[0].has_kernel
    assert "Queueing and latency" in result.html_path.read_text(encoding="utf-8")


def test_without_an_early_kernel_papermill_starts_one(monkeypatch, tmp_path):
    monkeypatch.setattr(execute, "start_kernel", lambda cwd: None)
    result = render(preset="littles-law", fmt="html", out_dir=tmp_path, sections=["executive"])
    assert "Executive summary" in result.html_path.read_text(encoding="utf-8")


def test_a_report_from_inside_a_running_event_loop(kernels, tmp_path):
    """The app's "Make report" button renders in the kernel's running loop: the early kernel and papermill's
    client must share one loop there too."""
    import asyncio

    async def from_a_callback():
        asyncio.get_running_loop()
        return render(preset="littles-law", fmt="html", out_dir=tmp_path, sections=["executive"])

    result = asyncio.run(from_a_callback())
    assert "Executive summary" in result.html_path.read_text(encoding="utf-8")
    assert len(kernels) == 1 and not kernels[0].has_kernel

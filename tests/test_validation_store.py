"""The validation tables' store on disk: read back equal, keyed by code, data and calibration, never fatal."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest

from aisize.serving import CALIBRATION
from aisize.validation import store
from aisize.validation.serving import serving_table


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "validation"))
    return tmp_path / "validation"


def counted(frame):
    calls = []

    def compute():
        calls.append(1)
        return frame

    return compute, calls


FRAME = pd.DataFrame({"case": ["a", "b"], "published": [1.5, float("nan")], "ok": [True, False],
                      "n": [3, 4], "note": ["", "x"]})


def test_a_table_is_computed_once_and_read_back_equal(cache):
    compute, calls = counted(FRAME)
    first = store.remembered("t", compute, key="k")
    again = store.remembered("t", compute, key="k")
    assert len(calls) == 1
    pd.testing.assert_frame_equal(first, again)  # dtypes included: bool, int, float with NaN, str
    assert [p.suffix for p in cache.iterdir()] == [".json"]


def test_another_key_or_other_data_is_another_table(cache, tmp_path, monkeypatch):
    compute, calls = counted(FRAME)
    store.remembered("t", compute, key="k")
    store.remembered("t", compute, key="other calibration")
    assert len(calls) == 2
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "models.csv").write_text("id\n", encoding="utf-8")
    before = store.fingerprint()
    monkeypatch.setenv("AISIZE_CATALOG", str(overlay))
    assert store.fingerprint() != before  # a user catalog may replace rows the runs use
    store.remembered("t", compute, key="k")
    assert len(calls) == 3
    (overlay / "models.csv").write_text("id\nx\n", encoding="utf-8")
    store.remembered("t", compute, key="k")
    assert len(calls) == 4


def test_a_damaged_file_is_computed_again(cache):
    compute, calls = counted(FRAME)
    store.remembered("t", compute)
    (path,) = cache.iterdir()
    path.write_text('{"schema": ', encoding="utf-8")
    pd.testing.assert_frame_equal(store.remembered("t", compute), FRAME)
    assert len(calls) == 2
    pd.testing.assert_frame_equal(pd.read_json(path, orient="table"), FRAME)  # and written again


def test_old_files_of_a_table_are_pruned_and_other_tables_kept(cache):
    compute, calls = counted(FRAME)
    store.remembered("serving", compute, key="old code")
    store.remembered("serving-load", compute, key="old code")
    month_ago = time.time() - store.PRUNE_AFTER_S - 60
    for path in cache.iterdir():
        os.utime(path, (month_ago, month_ago))
    store.remembered("serving", compute, key="new code")
    names = sorted(p.name.rsplit("-", 1)[0] for p in cache.iterdir())
    assert names == ["serving", "serving-load"]  # the old "serving" file went; "serving-load" is another table
    assert len(calls) == 3


def test_a_folder_that_cannot_be_written_costs_only_the_computation(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(store.CACHE_ENV, str(blocker))
    compute, calls = counted(FRAME)
    pd.testing.assert_frame_equal(store.remembered("t", compute), FRAME)
    store.remembered("t", compute)
    assert len(calls) == 2


def test_the_folder_is_in_aisize_cache_unless_given(tmp_path, monkeypatch):
    monkeypatch.delenv(store.CACHE_ENV)
    monkeypatch.setenv("AISIZE_CACHE", str(tmp_path))
    assert store.folder() == tmp_path / "validation"


def test_a_serving_table_read_back_equals_the_one_computed(cache):
    """What a report's kernel reads: every column of a real table (floats with NaN, bools, text) as computed."""
    computed = store.remembered("serving-load", lambda: serving_table("serving-load"), key=repr(CALIBRATION))
    read = store.remembered("serving-load", lambda: pytest.fail("computed again"), key=repr(CALIBRATION))
    pd.testing.assert_frame_equal(read, computed)
    assert cache.stat().st_mode & 0o077 == 0  # private to the user


def test_a_starting_server_fills_the_store_in_the_background(tmp_path):
    """What ``aisize app`` and ``aisize team`` start beside their server: a niced process that computes every
    table into the store of the environment it is given, and returns at once when the store holds them."""
    from aisize.cache import warm_validation_in_background

    env = {**os.environ, store.CACHE_ENV: str(tmp_path / "tables")}
    assert not store.complete(env)
    ours = os.getpriority(os.PRIO_PROCESS, os.getpid())
    process = warm_validation_in_background(env)
    assert process.wait(300) == 0
    assert store.complete(env)
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == ours  # only the child was niced

"""A driver log file per run (issue 24, item 5): named by time and process, older ones
pruned, a file the user names kept as given."""

from __future__ import annotations

import os

import pytest

from chronoray.cli import runlog
from chronoray.connect import driver_log_path


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setattr(runlog.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setenv("CHRONORAY_DRIVER_LOG", "")  # unset; restored afterwards
    monkeypatch.setattr(runlog, "_named", None)
    return tmp_path / f"chronoray-{os.getuid()}" / "runs"


def test_each_run_gets_its_own_file_and_old_ones_are_pruned(runs):
    runs.mkdir(parents=True)
    for k in range(runlog.KEPT + 5):
        old = runs / f"driver-20260101T0000{k:02d}Z-{k}.log"
        old.write_text("x\n")
        os.utime(old, (1_000_000 + k, 1_000_000 + k))
    path = runlog.begin_run_log()
    assert path.parent == runs and path.name.startswith("driver-")
    assert path.name.endswith(f"-{os.getpid()}.log")
    assert driver_log_path() == path  # what Ray's and Spark's log lines go to
    left = sorted(p.name for p in runs.glob("driver-*.log"))
    assert len(left) == runlog.KEPT - 1  # with this run's file: KEPT
    assert "driver-20260101T000000Z-0.log" not in left  # the oldest went first
    assert f"driver-20260101T0000{runlog.KEPT + 4:02d}Z-{runlog.KEPT + 4}.log" in left


def test_a_second_command_in_one_process_gets_a_new_file(runs, monkeypatch):
    monkeypatch.setattr(runlog.time, "strftime", lambda fmt, when: "20260101T000000Z")
    first = runlog.begin_run_log()
    second = runlog.begin_run_log()  # the same second
    assert first != second and os.environ["CHRONORAY_DRIVER_LOG"] == str(second)


def test_a_file_the_user_names_is_kept(runs, monkeypatch, tmp_path):
    mine = tmp_path / "mine.log"
    monkeypatch.setenv("CHRONORAY_DRIVER_LOG", str(mine))
    assert runlog.begin_run_log() == mine and driver_log_path() == mine


def test_the_last_line_names_a_long_path_in_one_piece(monkeypatch, tmp_path, capsys):
    from chronoray.cli import rendering

    long = tmp_path / ("deep-" * 20) / "driver.log"  # far wider than 80 columns
    monkeypatch.setenv("CHRONORAY_DRIVER_LOG", str(long))
    monkeypatch.setattr(rendering.err_console, "width", 80)
    rendering.note_driver_log()
    err = capsys.readouterr().err
    assert str(long) in err and err.count("\n") == 1

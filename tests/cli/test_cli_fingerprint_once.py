"""``chronoray ingest`` fingerprints each file once (issue 24): the check against the
file recorded under its source name happens in ``GraphCluster.ingest`` only, and its
notes (a file that grew) still reach the command's output."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chronoray.cli import main
from chronoray.sources import FileFingerprint

pytestmark = pytest.mark.ray


def test_each_file_is_fingerprinted_once_and_its_notes_are_shown(
    ray_session, tmp_path, monkeypatch
):
    real = FileFingerprint.of.__func__
    calls: list[str] = []

    def counted(cls, path, *args, **kwargs):
        calls.append(Path(path).name)
        return real(cls, path, *args, **kwargs)

    monkeypatch.setattr(FileFingerprint, "of", classmethod(counted))
    data = tmp_path / "grow.txt"
    data.write_text("".join(f"{i} {i + 1} {i}\n" for i in range(1, 21)))
    argv = ["ingest", str(data), "--log-dir", str(tmp_path / "graph")]
    first = CliRunner().invoke(main, argv)
    assert first.exit_code == 0, first.output
    assert calls == ["grow.txt"]
    with data.open("a") as f:
        f.write("".join(f"{i} {i + 1} {i}\n" for i in range(21, 26)))
    grown = CliRunner().invoke(main, argv)
    assert grown.exit_code == 0, grown.output
    assert calls == ["grow.txt"] * 2
    assert "the file grew from 20 to 25 lines" in grown.stdout
    assert "5 new, 20 already in the graph (resumed after line 20)" in grown.stdout

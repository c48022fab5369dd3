"""A file source's identity: the same name with other content is refused, naming both
files; the same file, a grown file, or one fixed after what the graph applied is not."""

from __future__ import annotations

import json

import pytest

from chronoray.errors import SourceMismatch
from chronoray.source_files import SOURCE_FILES, claim_file, recorded_files
from chronoray.sources import FileFingerprint, SnapEdgeSource


def _edges(n: int, start: int = 1, shift: int = 0) -> str:
    return "".join(f"{i + shift} {i + 1 + shift} {i}\n" for i in range(start, start + n))


def _file(dirpath, name: str, text: str) -> SnapEdgeSource:
    dirpath.mkdir(parents=True, exist_ok=True)
    path = dirpath / name
    path.write_text(text)
    return SnapEdgeSource(path)


def test_fingerprint_marks_and_agreement(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text(_edges(2500))
    fa = FileFingerprint.of(a)
    assert (fa.lines, fa.size) == (2500, a.stat().st_size)
    assert {1, 10, 100, 2500} <= set(fa.mark_lines()) and len(fa.mark_lines()) > 5
    grown = tmp_path / "grown.txt"
    grown.write_text(_edges(2500) + _edges(10, start=2501))
    assert FileFingerprint.of(grown, at=fa.mark_lines()).agrees(fa, through=2500)
    other = tmp_path / "other.txt"
    other.write_text(_edges(2500, shift=7))
    assert not FileFingerprint.of(other, at=fa.mark_lines()).agrees(fa, through=1)
    assert FileFingerprint.from_dict(json.loads(json.dumps(fa.as_dict()))) == fa


def test_marks_stay_few_for_long_files(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text(_edges(300_000))
    marks = FileFingerprint.of(big).mark_lines()
    assert len(marks) <= 110 and marks[-1] == 300_000


def test_same_name_other_content_is_refused_naming_both_files(tmp_path):
    log_dir = tmp_path / "logs"
    first = _file(tmp_path / "one", "events.txt", _edges(50))
    assert claim_file(log_dir, first, applied=0).previous is None
    other = _file(tmp_path / "two", "events.txt", _edges(50, shift=1000))
    with pytest.raises(SourceMismatch) as refused:
        claim_file(log_dir, other, applied=50)
    text = str(refused.value)
    assert str(first.path.resolve()) in text and str(other.path.resolve()) in text
    assert "--source NAME" in text and "\n" not in text
    # nothing recorded for the refused file: the first one still stands
    assert recorded_files(log_dir)["events.txt"].path == str(first.path.resolve())


def test_same_grown_fixed_or_unapplied_files_are_accepted(tmp_path):
    log_dir = tmp_path / "logs"
    base = _file(tmp_path / "v1", "f.txt", _edges(300))
    claim_file(log_dir, base, applied=0)
    same = claim_file(log_dir, base, applied=300)
    assert same is not None and same.same_file and same.describe() is None
    grown = _file(tmp_path / "v2", "f.txt", _edges(300) + _edges(5, start=301))
    note = claim_file(log_dir, grown, applied=300).describe()
    assert note is not None and "grew from 300 to 305 lines" in note
    # stopped at line 150 (a malformed line, say) and fixed there: lines 1..149 agree
    lines = _edges(305).splitlines(keepends=True)
    lines[149] = "9 9 150\n"
    fixed = _file(tmp_path / "v3", "f.txt", "".join(lines))
    assert "changed after line 149" in (claim_file(log_dir, fixed, applied=149).describe() or "")
    # a name of which nothing was applied takes any file
    claim_file(log_dir, _file(tmp_path / "v4", "f.txt", _edges(3, shift=99)), applied=0)
    assert json.loads((log_dir / SOURCE_FILES).read_text())["f.txt"]["lines"] == 3


def test_a_sorted_file_must_start_with_the_whole_file_recorded(tmp_path):
    log_dir = tmp_path / "logs"
    claim_file(log_dir, _file(tmp_path / "v1", "s.txt", _edges(200)), applied=0)
    changed_late = _file(tmp_path / "v2", "s.txt", _edges(199) + "1 2 3\n")
    claim_file(log_dir, changed_late, applied=10)  # line order: lines 1..10 agree
    claim_file(log_dir, _file(tmp_path / "v1", "s.txt", _edges(200)), applied=0)
    with pytest.raises(SourceMismatch):
        claim_file(log_dir, changed_late, applied=10, sorted_file=True)


def test_not_a_file_is_not_claimed(tmp_path):
    from chronoray.sources import IterableSource

    assert claim_file(tmp_path, IterableSource([], name="x"), applied=3) is None


def test_the_python_api_refuses_other_content_under_a_used_name(tmp_path):
    """``GraphCluster.ingest`` checks file sources as the CLI does: nothing of the other
    file is skipped or applied; under another name it is a new source."""
    import chronoray as cr

    with cr.GraphCluster(runtime="local", num_shards=2, log_dir=str(tmp_path / "g")) as g:
        g.ingest(_file(tmp_path / "one", "edges.txt", _edges(50)))
        before = g.stats().edges
        other = _file(tmp_path / "two", "edges.txt", _edges(50, start=51, shift=1000))
        with pytest.raises(SourceMismatch, match="one/edges.txt"):
            g.ingest(other)
        assert g.stats().edges == before
        report = g.ingest(SnapEdgeSource(other.path, name="edges-2"))
        assert report.updates == 50 and g.stats().edges == before + 50

"""``chronoray cep``: generate, q1 and q2 write the oracle's lines; bad lines are named."""

from __future__ import annotations

import json

from cep_helpers import events_of
from click.testing import CliRunner
from reference import reference_q1, reference_q2

from cep import DebsFiles
from chronoray.cli import main


def test_generate_q1_q2_and_a_bad_line(tmp_path):
    runner = CliRunner()
    data = tmp_path / "debs"
    result = runner.invoke(main, ["cep", "generate", str(data), "--events", "2500", "--days", "5"])
    assert result.exit_code == 0, result.output
    files = DebsFiles.in_dir(data)
    common = ["--runtime", "local", "--instances", "2"]
    q1 = ["cep", "q1", "--posts", str(files.posts), "--comments", str(files.comments)]
    result = runner.invoke(main, [*q1, "--out", str(tmp_path / "q1.txt"), *common])
    assert result.exit_code == 0, result.output
    assert "output lines" in result.output and "events/s" in result.output
    expected = list(reference_q1(events_of("q1", files)))
    assert (tmp_path / "q1.txt").read_text().splitlines() == expected

    q2 = ["cep", "q2", "--comments", str(files.comments), "--likes", str(files.likes),
          "--friendships", str(files.friendships), "--k", "2", "--d", "5400"]  # fmt: skip
    result = runner.invoke(main, [*q2, "--community", "clique", "--out", str(tmp_path / "q2.txt"),
                                  *common])  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = list(reference_q2(events_of("q2", files), 2, 5400, "clique"))
    assert (tmp_path / "q2.txt").read_text().splitlines() == expected

    with files.likes.open("a") as f:
        f.write("2010-02-09T00:00:00.000+0000|1|oops\n")
    result = runner.invoke(main, [*q2, "--out", str(tmp_path / "bad.txt"), *common])
    assert result.exit_code == 2
    assert (
        f"{files.likes}:" in result.output and "comment_id is not a non-negative" in result.output
    )
    result = runner.invoke(main, [*q2, "--out", str(tmp_path / "ok.txt"), *common,
                                  "--on-error", "skip"])  # fmt: skip
    assert result.exit_code == 0
    rejects = (tmp_path / "ok.txt.rejects.tsv").read_text()
    assert rejects.endswith("\t2010-02-09T00:00:00.000+0000|1|oops\n")


def test_a_query_prints_its_measures_as_csv_or_json(tmp_path):
    runner = CliRunner()
    data = tmp_path / "debs"
    result = runner.invoke(main, ["cep", "generate", str(data), "--events", "800", "--days", "2"])
    assert result.exit_code == 0, result.output
    files = DebsFiles.in_dir(data)
    q1 = ["cep", "q1", "--posts", str(files.posts), "--comments", str(files.comments),
          "--runtime", "local", "--instances", "2"]  # fmt: skip
    out = tmp_path / "q1.txt"
    as_csv = runner.invoke(main, [*q1, "--out", str(out), "--csv"])
    assert as_csv.exit_code == 0, as_csv.output
    rows = dict(line.split(",", 1) for line in as_csv.stdout.splitlines())
    assert rows["measure"] == "value"
    written = len(out.read_text().splitlines())
    assert int(rows["output lines"]) == written > 0
    assert int(rows["input events"]) == int(rows["  posts"]) + int(rows["  comments"]) > 0
    assert float(rows["seconds"]) > 0 and "," not in rows["input events"]  # numbers whole
    as_json = runner.invoke(main, [*q1, "--out", str(out), "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.stdout)
    assert report["query"] == "q1" and report["out"] == str(out)
    assert report["measures"]["output lines"] == written
    assert report["measures"]["runtime"] == "local" and report["measures"]["instances"] == 2
    both = runner.invoke(main, [*q1, "--out", str(out), "--json", "--csv"])
    assert both.exit_code == 2 and "--json and --csv: give one of them" in both.stderr

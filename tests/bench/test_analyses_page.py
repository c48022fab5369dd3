"""``python -m bench.analyses --render`` writes the whole page from JSON files: this run's
tables, the focused runs' target rows (each naming its run), then the hand-written notes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.analyses import main

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def _focused_runs(tmp_path: Path) -> tuple[Path, Path]:
    pregel = tmp_path / "pregel_ray.json"
    pregel.write_text(
        json.dumps(
            {
                "label": "after",
                "date": "2026-11-28 17:00 UTC",
                "load": [[2.5, 3, 3], [3.5, 3, 3]],
                "networkx_pagerank_seconds": 0.04,
                "networkx_file_seconds": 0.25,
                "arrays": {"seconds": 0.1},
            }
        )
    )
    spark = json.loads((RESULTS / "spark_pagerank.json").read_text())
    spark["date"] = "2026-11-28 17:30 UTC"
    spark["load_average"] = [[1.5, 2, 2], [2.5, 2, 2]]
    spark["college"]["blocks_one_job"]["warm"]["seconds_per_iteration"] = 0.0123
    spark_path = tmp_path / "spark_pagerank.json"
    spark_path.write_text(json.dumps(spark))
    return pregel, spark_path


def test_render_writes_the_page_from_the_json_files_and_the_notes(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(RESULTS / "analyses.json", out / "analyses.json")
    notes = tmp_path / "notes.md"
    notes.write_text("## A hand-written section\n\nkept as written.\n")
    pregel, spark = _focused_runs(tmp_path)
    args = ["--render", "--out", str(out), "--notes", str(notes)]
    main([*args, "--pregel-json", str(pregel), "--spark-json", str(spark)])
    page = (out / "analyses.md").read_text()
    assert page.startswith("# Analyses at speed") and page.endswith(notes.read_text())
    targets = page.split("## Targets")[1].split("\n## ")[0]
    rows = [
        line for line in targets.splitlines() if line.startswith("| ") and "| measure |" not in line
    ]
    assert len(rows) == 7 and all("run" in row or "load" in row for row in rows)
    assert "0.40x of networkx building the graph from the file" in targets
    assert "2.50x of networkx's pagerank call alone (0.100 s vs 0.040 s; `bench/pregel" in targets
    assert "2026-11-28 17:00 UTC, load 2.5-3.5" in targets
    assert "0.012 s / " in targets and "2026-11-28 17:30 UTC, load 1.5-2.5" in targets
    assert (out / "analyses_crossover.png").stat().st_size > 0

    # without the focused runs, every row is this run's own
    main([*args, "--pregel-json", str(tmp_path / "none"), "--spark-json", str(tmp_path / "no")])
    again = (out / "analyses.md").read_text().split("## Targets")[1].split("\n## ")[0]
    assert "bench/pregel_ray.py" not in again and "bench/spark_pagerank.py" not in again
    assert "| Pregel PageRank (array form) on Ray" in again

#!/usr/bin/env bash
# Before/after of Pregel on Ray (bench/pregel_ray.py): the `snapshot` package of commit
# BASE (default: main) against this checkout's, RUNS runs of each in turn (TRIALS trials
# per run), one JSON line per run in OUT/<side>.jsonl, then the table of their medians.
#   [JSON=bench/results/pregel_ray.json] bench/pregel_ray_compare.sh [BASE] [RUNS] [TRIALS]
# (JSON: also write the fold bench.analyses reads for its target row)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-main}; runs=${2:-3}; trials=${3:-3}
out=${OUT:-$(mktemp -d /tmp/pregel-ray-XXXX)}
mkdir -p "$out/base"
git -C "$here" archive "$base" snapshot | tar -x -C "$out/base"
python=${PYTHON:-$here/.venv/bin/python}
for ((i = 0; i < runs; i++)); do
  # Ray's workers put the driver's directory first on their path: run each side in its own
  (cd "$out/base" && PYTHONPATH="$out/base:$here" "$python" "$here/bench/pregel_ray.py" \
    --label "before ($base)" --trials "$trials" 2>>"$out/stderr.txt" | grep '^{' >> "$out/before.jsonl")
  (cd "$here" && PYTHONPATH="$here" "$python" "$here/bench/pregel_ray.py" --label after \
    --trials "$trials" ${PROFILE:+--profile} 2>>"$out/stderr.txt" | grep '^{' >> "$out/after.jsonl")
done
PYTHONPATH="$here" "$python" "$here/bench/pregel_ray.py" --report "$out/before.jsonl" "$out/after.jsonl" \
  ${JSON:+--json "$JSON" --note "bench/pregel_ray_compare.sh $base $runs $trials, medians of $runs runs"}
echo "JSON lines: $out"

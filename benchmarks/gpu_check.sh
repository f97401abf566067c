#!/usr/bin/env bash
# The GPU checks of s5ts, prepared for a lent GPU machine (nothing is
# installed: it needs jax, equinox, optax, jaxtyping, numpy, pandas,
# scikit-learn, matplotlib, Pillow, platformdirs, tqdm, pytest and
# hypothesis already there). Three parts:
#
#   tests     the layer's tests on the GPU, where "auto" picks the associative
#             scan: every scan method, S5SSM, its selective steps and resets
#             against the float64 Python-loop references;
#   bench     the scan and per-step-gap benchmarks at their default sizes (the
#             latter with the selective variants beside S5), the associative
#             scan at P=256 (issue 36: forward+backward at B=32, L=16384,
#             P=256 in at most 2.5 ms), and
#             the pendulum S5-against-CRU training speed (the paper's 86x was
#             a GPU figure; on CPU the shared CNN caps the ratio, see
#             docs/performance.md);
#   pendulum  paper protocol: S5 / S5-drop / S5-append seeds trained side by
#             side (one process each; the models are far too small to fill
#             the GPU alone), each writing its own results, merged at the end.
#
# A device command may run 10 minutes at most, so run "tests bench" (its
# timeouts add up to 580 s) and "pendulum" (S5TS_GPU_PENDULUM_SECONDS, default 420)
# as two calls while the machine is warm:
#
#   S5TS_GPU_PARTS="tests bench" bash benchmarks/gpu_check.sh   # on the GPU machine, from the repository root
#   S5TS_GPU_PARTS=pendulum bash benchmarks/gpu_check.sh
#   S5TS_GPU_PRESET=tiny S5TS_GPU_SEEDS=1 bash benchmarks/gpu_check.sh   # all parts, a CPU rehearsal
#
# Output goes to $OUT (default results/gpu): log-<parts>.txt, the merged
# pendulum results.md / results.json / results.csv and learning_curves.png.
set -uo pipefail
OUT=${OUT:-results/gpu}
PRESET=${S5TS_GPU_PRESET:-paper}
SEEDS=${S5TS_GPU_SEEDS:-4}                 # seeds per model
FIRST_SEED=${S5TS_GPU_FIRST_SEED:-0}
MODELS=${S5TS_GPU_MODELS:-"S5 S5-drop S5-append"}
PENDULUM_SECONDS=${S5TS_GPU_PENDULUM_SECONDS:-420}
PARTS=${S5TS_GPU_PARTS:-"tests bench pendulum"}
RUNS=$(mktemp -d)
CACHE=${S5TS_GPU_CACHE:-/tmp/s5ts-pendulum-cache}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec > >(tee "$OUT/log-${PARTS// /-}.txt") 2>&1
wants() { [[ " $PARTS " == *" $1 "* ]]; }

echo "## devices"; date
python3 -c "import jax; print(jax.__version__, jax.devices())"

if wants tests; then
echo "## 1. layer tests on this backend"
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" -m "not slow" \
    tests/test_scan.py tests/test_ssm.py tests/test_irregular_scan.py tests/test_discretisation.py \
    tests/test_selective.py tests/test_resets.py || echo "layer tests ended with status $? (124: out of time)"
fi

if wants bench; then
echo "## 2. benchmarks"
if [ "$PRESET" = tiny ]; then quick=--quick; else quick=; fi
timeout 100 python3 benchmarks/scan_speed.py $quick
timeout 120 python3 benchmarks/ssm_gaps.py $quick
if [ -z "$quick" ]; then timeout 60 python3 benchmarks/scan_speed.py --state 256 --no-autodiff --no-forward; fi
timeout 150 python3 benchmarks/pendulum_speed.py --quick
fi

if wants pendulum; then
echo "## 3. pendulum, preset $PRESET: $MODELS, seeds $FIRST_SEED..$((FIRST_SEED + SEEDS - 1)), ${PENDULUM_SECONDS}s"
python3 -c "
from s5ts.datasets import load_pendulum
from s5ts.experiments.pendulum import PRESETS
p = PRESETS['$PRESET']
for split, n in (('train', p.n_train), ('valid', p.n_valid), ('test', p.n_test)):
    load_pendulum(split, n_sequences=n, cache_dir='$CACHE', verbose=False)
"
pids=()
for model in $MODELS; do
    for ((seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++)); do
        XLA_PYTHON_CLIENT_PREALLOCATE=false timeout "$PENDULUM_SECONDS" python3 -m s5ts.cli pendulum \
            --preset "$PRESET" --models "$model" --first-seed "$seed" --seeds 1 --quiet --no-plots \
            --cache-dir "$CACHE" --out "$RUNS/$model-$seed" > "$RUNS/$model-$seed.log" 2>&1 &
        pids+=($!)
    done
done
for pid in "${pids[@]}"; do wait "$pid" || echo "a pendulum run ended with status $? (124: out of time)"; done
finished=$(ls -d "$RUNS"/*/ 2>/dev/null | while read -r d; do [ -f "$d/results.json" ] && echo "$d"; done)
if [ -n "$finished" ]; then
    # shellcheck disable=SC2086
    python3 -m s5ts.cli pendulum-merge $finished --out "$OUT"
else
    echo "no pendulum run finished in ${PENDULUM_SECONDS}s"; tail -n 3 "$RUNS"/*.log
fi
fi
date

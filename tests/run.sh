#!/usr/bin/env bash
# tests/run.sh: the test suite (make test builds everything, then runs this). Each suite prints
# "NAME: N passed, N failed, N skipped"; this adds them up, prints one closing summary line, and
# exits non-zero if anything failed or a suite died without its summary.
#
#   tests/run.sh [BUILD_DIR]          (FUZZ_SECONDS=N shortens or lengthens the fuzzing)
set -u
B=${1:-build}
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
total_p=0 total_f=0 total_s=0 broken=()
suites=(
  "test_config|$B/tests/test_config"
  "test_geometry|$B/tests/test_geometry"
  "test_ops|$B/tests/test_ops"
  "test_device|mpirun --oversubscribe --bind-to none -np 3 $B/tests/test_device"
  "test_backend_ops|$B/tests/test_backend_ops"
  "test_cuda_none|env LD_LIBRARY_PATH=$B/tests/fake-nvml $B/tests/test_cuda_none"
  "test_bf16|$B/tests/test_bf16"
  "test_selftest|tests/test_selftest.sh ./nstbatch $B/asan/nstbatch"
  "test_bf16_cli|tests/test_bf16.sh ./nstbatch $B/tests/image_diff"
  "test_gpu_render|tests/test_gpu_render.sh ./nstbatch $B/tests/image_diff"
  "test_gpu_standin|tests/test_gpu_standin.sh ./nstbatch $B/tests/image_diff"
  "test_first_contact|tests/test_first_contact.sh"
  "test_gpu_bundle|tests/test_gpu_bundle.sh $B/gpu-bundle"
  "test_bench|tests/test_bench.sh ./nstbatch $B/bench/conv_layers"
  "test_loss_grad|$B/tests/test_loss_grad"
  "test_images|$B/tests/test_images"
  "test_flo|$B/tests/test_flo"
  "test_video|$B/tests/test_video"
  "test_video_io|$B/tests/test_video_io"
  "test_video_clip|tests/test_video.sh ./nstbatch $B"
  "test_flow|tests/test_flow.sh $B"
  "test_weights|$B/tests/test_weights"
  "test_reference|$B/tests/test_reference tests/fixtures"
  "test_tiler|$B/tests/test_tiler"
  "test_color|$B/tests/test_color"
  "test_cli|tests/test_cli.sh ./nstbatch test_cli"
  "test_cli_asan|tests/test_cli.sh $B/asan/nstbatch test_cli_asan"
  "test_demo|tests/test_demo.sh ./nstbatch $B/tests/png_probe"
  "test_viewer|tests/test_viewer.sh ./nstbatch $B"
  "test_install|tests/test_install.sh $B"
  "test_docs|tests/test_docs.sh ./nstbatch"
  "test_layout|tests/test_layout.sh"
  "test_tiles|tests/test_tiles.sh ./nstbatch $B/tests/image_diff"
  "test_isa|tests/test_isa.sh ./nstbatch $B"
  "test_masks|tests/test_masks.sh ./nstbatch $B"
  "test_memory|tests/test_memory.sh ./nstbatch $B/tests/image_diff"
  "test_dryrun|tests/test_dryrun.sh ./nstbatch"
  "test_preview|tests/test_preview.sh ./nstbatch $B/tests/image_diff $B/tests/png_probe"
  "test_batch|tests/test_batch.sh ./nstbatch $B/tests/image_diff"
  "test_checkpoint|tests/test_checkpoint.sh ./nstbatch $B/tests/image_diff"
  "test_metrics|tests/test_metrics.sh ./nstbatch $B/tests/fake-nvml"
  "test_prometheus|tests/test_prometheus.sh ./nstbatch $B/tests/fake-nvml"
  "test_slurm|tests/test_slurm.sh ./nstbatch $B/tests/image_diff"
  "test_hosts|tests/test_hosts.sh ./nstbatch $B/tests/image_diff $B"
  "test_outputs|tests/test_outputs.sh ./nstbatch $B/tools/make_test_tiff"
  "test_dzi|tests/test_dzi.sh ./nstbatch ./nstbatch-dzi $B/tools/make_test_tiff"
  "test_bigio|tests/test_bigio.sh ./nstbatch $B/tools/make_test_tiff $B/tests/rss_run"
  "test_tiff_corpus|tests/test_tiff_corpus.sh $B/asan/nstbatch $B/fuzz/fuzz_tiff"
  "test_fuzz|tests/test_fuzz.sh $B"
)
for entry in "${suites[@]}"; do
  name=${entry%%|*} cmd=${entry#*|}
  echo "== $name"
  start=$(date +%s.%N)
  out=$(timeout 1200 $cmd 2>&1); status=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "$out"
  line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" <<<"$out" | tail -n 1)
  if [ -z "$line" ]; then
    broken+=("$name (exit status $status, no summary)")
    total_f=$((total_f + 1))
    continue
  fi
  read -r p f s < <(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/' <<<"$line")
  total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
  [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && { broken+=("$name (exit status $status)"); total_f=$((total_f + 1)); }
  echo "   ($secs s)"
done
echo
for b in "${broken[@]}"; do echo "broken: $b"; done
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]

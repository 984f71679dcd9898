#!/usr/bin/env bash
# tests/test_isa.sh: the exactness suites at every instruction-set level below this machine's.
#
#   tests/test_isa.sh NSTBATCH BUILD_DIR
#
# oneDNN and nstbatch's own kernels take their paths from the CPU, capped by ONEDNN_MAX_CPU_ISA
# (kernels/cpu/isa_cpu.c). The rest of the suite runs at the machine's own level; this runs the
# checks that could break with another path at each lower level the CPU has (SSE41, AVX2,
# AVX512_CORE; AVX512_CORE_BF16 where AMX is above it: bf16 on AVX512_BF16's convolutions instead
# of AMX's), so a machine with AVX-512 also guards the AVX2 machines many clusters run, an AVX2
# machine guards SSE4.1, and an AMX machine its own level in the rest of the suite:
# - test_ops: the ops against naive loops, the own kernels' paths giving the same bits;
# - test_gram_fixed: the fixed-point Gram sums against their exact truth on the level's paths (that
#   test, the parts' and the bound's: the thread counts' and the long regions' add integers, the
#   same on every path, which the machine's own level runs on each path; at SSE41, on the portable
#   path, they took 11 of the level's CPU seconds);
# - test_backend_ops: the tiling's contracts (conv windows of every width and height, the Gram
#   backward's rows) in fp32, and bf16 against fp32 where the level has bf16 (those two tests
#   alone, NST_TEST_ONLY: the harness's own checks and the graph stand-in's are the same at every
#   level, and at SSE41 they took half the suite's 13 CPU seconds);
# - a render on 2 ranks with 48 px tiles against one tile, bit for bit, in fp32 (and bf16 where
#   the level has it), and one with masks; one tile on 2 threads against 1 thread (6 L-BFGS steps
#   with 3 pairs: the history wraps). 96x72 (4 tiles, 48 rows and 24, which pooling floors at
#   relu5_1): every tile's window, its halo included, is the whole image at this size, as it was
#   at 192x144 (12 tiles of an image 4 times larger: 12 times the renders' CPU).
NST=$(readlink -f "$1") B=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_isa

flags=$(cpu_flags) # (a global ONEDNN_MAX_CPU_ISA lowers the machine's own level: tests/lib.sh)
has() { for f in "$@"; do grep -qw "$f" <<<"$flags" || return 1; done; }
levels=()
has sse4_1 && levels+=(SSE41)
has avx2 fma && levels+=(AVX2)
has avx512f avx512bw avx512vl avx512dq && levels+=(AVX512_CORE)
has avx512_bf16 && levels+=(AVX512_CORE_BF16)
has amx_bf16 amx_tile && levels+=(AVX512_CORE_AMX)
# every level below the machine's own (the rest of the suite runs that one)
below=("${levels[@]:0:$((${#levels[@]} - 1))}")
echo "  levels on this CPU: ${levels[*]}; checked here: ${below[*]:-none}"
# the filter below runs what it names or fails: a listed name no test has is a failure (tests/test.h)
out=$(NST_TEST_ONLY=t_tolerances_follow_the_precision,t_no_such_test "$IDLE" 300 "$B/tests/test_backend_ops" 2>&1); st=$?
if [ $st -ne 0 ] && grep -q '^test_backend_ops: 1 passed, 1 failed, 0 skipped$' <<<"$out" &&
   grep -q 'FAIL NST_TEST_ONLY names t_no_such_test, which no test of this suite has' <<<"$out" && [ "$(grep -c '^  ok ' <<<"$out")" -eq 1 ]; then
  ok "NST_TEST_ONLY runs the tests it names alone, and a name no test has fails the suite"
else bad "NST_TEST_ONLY" "exit $st" "$out"; fi
if [ ${#below[@]} -eq 0 ]; then
  skip "no level below this CPU's own (${levels[*]:-none}): the rest of the suite covers it"
  finish
  exit
fi

cat >"$T/r.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 96
height = 72
bits = 16
overwrite = true
[model]
random_width_divisor = 8
[optim]
iterations = 6
lbfgs_history = 3
[run]
device = cpu
threads = 1
print_every = 0
EOF
MASKS=(--set style.path="$ROOT/configs/demo/style.png,$ROOT/configs/demo/style2.png"
       --set style.masks="$ROOT/configs/demo/sky.png,$ROOT/configs/demo/ground.png")

# suite NAME BINARY [TESTS]: a C suite at the level (TESTS: those of its tests alone, comma-separated);
# its summary line
suite() {
  local out
  out=$(ONEDNN_MAX_CPU_ISA=$isa NST_TEST_ONLY=${3:-} "$IDLE" 900 "$2" 2>&1); local st=$?
  local line
  line=$(grep -E "^$1: [0-9]+ passed, 0 failed" <<<"$out")
  if [ $st -eq 0 ] && [ -n "$line" ]; then ok "$isa: $line ($(grep -m1 -oE '(own kernels|cpu fp32): .*' <<<"$out" | cut -c1-90))"
  else bad "$isa: $1" "exit $st" "$(grep -E 'FAIL|mismatch|passed' <<<"$out")"; fi
}
# render NAME RANKS ARGS...: T/NAME.tif at the level
render() {
  local name=$1 ranks=$2; shift 2
  ranks "$ranks"
  (cd "$T" && ONEDNN_MAX_CPU_ISA=$isa "$IDLE" 600 "${RANKS[@]}" "$NST" r.ini \
     --set output.path="$name.tif" "$@") >"$T/$name.log" 2>&1
}
# same NAME A B: two renders' files hold the same image, bit for bit
same() {
  local d
  d=$("$B/tests/image_diff" "$T/$2.tif" "$T/$3.tif" 2>&1)
  if [ "$d" = "max 0 mean 0" ]; then ok "$isa: $1 equals the one-tile render bit for bit ($(sed -n 's/.*oneDNN [0-9.]* (\([^)]*\)).*/\1/p' "$T/$3.log" | head -n 1))"
  else bad "$isa: $1" "differs from the one-tile render: $d" "$(tail -n 5 "$T/$3.log")"; fi
}

for isa in "${below[@]}"; do
  suite test_ops "$B/tests/test_ops"
  suite test_gram_fixed "$B/tests/test_gram_fixed" t_fixed_sums_equal_the_exact_truth_on_every_path,t_parts_in_any_order_equal_the_whole,t_bound_is_reported
  suite test_backend_ops "$B/tests/test_backend_ops" t_cpu_fp32_contracts,t_cpu_bf16_against_fp32
  precs=(fp32)
  case $isa in AVX512_CORE*) precs+=(bf16) ;; esac
  for p in "${precs[@]}"; do
    if render "one_${isa}_$p" 1 --set tiling.tile_size=192 --set run.precision=$p &&
       render "tiles_${isa}_$p" 2 --set tiling.tile_size=48 --set run.precision=$p; then
      same "$p, 2 ranks, 48 px tiles" "one_${isa}_$p" "tiles_${isa}_$p"
    else bad "$isa: $p renders" "exit status" "$(tail -n 5 "$T/one_${isa}_$p.log" "$T/tiles_${isa}_$p.log")"; fi
  done
  # fp32 pinned where fp32 is compared: auto is bf16 at some levels (AVX512_CORE_BF16 on AMD, AMX)
  if render "threads_$isa" 1 --set tiling.tile_size=192 --set run.threads=2 --set run.precision=fp32; then
    same "fp32, one tile on 2 threads" "one_${isa}_fp32" "threads_$isa"
  else bad "$isa: 2 threads" "exit status" "$(tail -n 5 "$T/threads_$isa.log")"; fi
  if render "mone_$isa" 1 --set tiling.tile_size=192 --set run.precision=fp32 "${MASKS[@]}" &&
     render "mtiles_$isa" 2 --set tiling.tile_size=48 --set run.precision=fp32 "${MASKS[@]}"; then
    same "fp32 with style masks, 2 ranks, 48 px tiles" "mone_$isa" "mtiles_$isa"
  else bad "$isa: masked renders" "exit status" "$(tail -n 5 "$T/mone_$isa.log" "$T/mtiles_$isa.log")"; fi
done
finish

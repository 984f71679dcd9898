#!/usr/bin/env bash
# tests/test_tiff_corpus.sh: the malformed-TIFF corpus (tests/fuzz/corpus_tiff_bad/, made by
# tests/fuzz/make_bad_tiffs.py: truncated files, offsets and byte counts past the end or lying,
# zero and huge dimensions, 0 and 65535 samples, bad bits, tiles and strips, a looping IFD chain)
# through the ASan+UBSan build of nstbatch as the content image, every single allocation capped
# at 300 MiB and the resident set at 1 GiB by the sanitizer runtime: each file gives exit status 2
# with one error line naming the file and what is wrong (or, where EXPECTED says so, a clean
# outcome), never a crash, a sanitizer report or an allocation past the cap. Then the libFuzzer
# target for the region reader runs every file once under the same caps.
#
#   tests/test_tiff_corpus.sh ASAN_NSTBATCH FUZZ_TIFF
. "$(dirname "$0")/lib.sh" test_tiff_corpus
NST=$(readlink -f "$1") FUZZ=$(readlink -f "$2")
C="$ROOT/tests/fuzz/corpus_tiff_bad"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:max_allocation_size_mb=300:allocator_may_return_null=0:hard_rss_limit_mb=1024
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

printf '[style]\npath = %s/configs/demo/style.png\n[output]\npath = out.tif\npreview = 0\n[optim]\niterations = 0\n[run]\ndevice = cpu\n' "$ROOT" >"$T/c.ini"
while IFS='|' read -r name frag; do
  case "$name" in ''|\#*) continue ;; esac
  out=$(cd "$T" && "$IDLE" 60 "$NST" c.ini --set content.path="$C/$name" 2>&1); status=$?
  errors=$(grep -c '^nstbatch: error:' <<<"$out")
  if grep -q -E 'AddressSanitizer|runtime error|Sanitizer|Segmentation|core dumped|allocation-size-too-big|rss-limit' <<<"$out"; then
    bad "$name" "crash, sanitizer report or allocation past the cap (status $status)" "$out"
  elif [ -z "$frag" ] && { [ $status -eq 0 ] || { [ $status -eq 2 ] && [ "$errors" -eq 1 ]; }; }; then
    ok "$name: a clean outcome (status $status)"
  elif [ $status -eq 2 ] && [ "$errors" -eq 1 ] && grep -q -F "$name" <<<"$out" && grep -q -F -- "$frag" <<<"$out"; then
    ok "$name: $(grep '^nstbatch: error:' <<<"$out" | sed "s|$C/||; s/^nstbatch: error: //")"
  else
    bad "$name" "status $status, $errors error lines, expected 2 and one naming the file with '$frag'" "$out"
  fi
  rm -f "$T/out.tif"
done <"$C/EXPECTED"

out=$("$IDLE" 120 "$FUZZ" -malloc_limit_mb=300 -rss_limit_mb=1024 "$C"/*.tif 2>&1); status=$?
if [ $status -eq 0 ]; then
  ok "the libFuzzer region-reader target runs all $(ls "$C"/*.tif | wc -l) files under the caps"
else
  bad "libFuzzer target over the corpus" "status $status" "$(grep -E 'ERROR|SUMMARY|==[0-9]+==|Running' <<<"$out" | tail -n 12)"
fi
finish

#!/usr/bin/env bash
# scripts/issue-targets on the committed H200 results of 2026-11-28: the values and ratios it prints are those of the
# JSON (checked by hand against bench/results/gpu-check-2026-11-28-h200-cc8f260.md), ratios only within one file,
# verdicts against the issues' targets, and a typed failure naming an unreadable file.
set -euo pipefail
root="$1"
results="$root/bench/results"
out="$("$root/scripts/issue-targets" "$results"/*-2026-11-28-*.json)"
echo "$out"
expect() {  # REGEX: a line of the report matches it
  grep -qE "$1" <<<"$out" || { echo "FAIL: no line matches: $1" >&2; exit 1; }
}
expect '^35 +WFST CUDA batch B=1 +0\.672 ms +<= 0\.400 ms +MISSED +wfst-nvidia-h200-2026-11-28-af789af\.json$'
expect "^35 +WFST CUDA B=256 against the CPU's threads +3\.58x \(1\.9 ms / 6\.7 ms\) +>= 3x +met "
expect '^35 +no fast frames, B=1 / the default \(fast frames of 512\) +1\.12x \(0\.752 ms\)'
expect '^36 +alsd\+\+-beam4 B=32 / greedy label looping +2\.21x \(75\.3 ms / 34\.1 ms\) +<= 1\.5x +MISSED +transducer_beam-nvidia-h200-2026-11-28-cc8f260-alsd\.json$'
expect '^36 +alsd\+\+-beam4 B=1: a step of 637 +62\.3 us +<= 49\.7 us +- +transducer_beam-nvidia-h200-2026-11-28-cc8f260-alsd\.json$'
expect '^36 +aes\+\+-beam4 B=1: LM fusion adds +\+10\.6% \(63\.4 ms / 57\.3 ms\) +<= 10% +MISSED '
expect '^36 +alsd\+\+-beam4 B=32: LM fusion adds +-4\.3% .* met '
expect '^36 +wind-beam-beam4 B=1: LM fusion adds +not measured +<= 10% +-$'
expect '^37 +rnnt label looping, conditional, B=1 +31\.7 ms +<= 8\.0 ms +MISSED +transducer_greedy-nvidia-h200-2026-11-28-cc8f260\.json$'
expect '^37 +tdt B=32: LM fusion adds +\+17\.7% \(36\.0 ms / 30\.6 ms\) +<= 5% +MISSED '
expect '^37 +CTC greedy fp32 B=32 T=1000 V=1025 / device copy +1\.24x \(0\.090 ms / 0\.072 ms\) +<= 1\.5x +met '
# No ratio across files: the WFST file has no beam benchmarks, so alone it measures no beam target.
alone="$("$root/scripts/issue-targets" "$results/wfst-nvidia-h200-2026-11-28-af789af.json")"
grep -qE '^36 +alsd\+\+-beam4 B=32 / greedy label looping +not measured' <<<"$alone" ||
  { echo "FAIL: a beam ratio from a file without beam benchmarks" >&2; exit 1; }
# An unreadable file: exit status 2 and its name.
if err="$("$root/scripts/issue-targets" "$root/no-such-file.json" 2>&1)"; then
  echo "FAIL: a missing file was accepted" >&2
  exit 1
fi
grep -q "cannot read $root/no-such-file.json" <<<"$err" || { echo "FAIL: the error does not name the file: $err" >&2; exit 1; }
# Beside readable files (a lease's benchmark cut short leaves an unfinished JSON): they are still reported.
unfinished="$(mktemp)"
trap 'rm -f "$unfinished"' EXIT
head -c 2000 "$results/wfst-nvidia-h200-2026-11-28-af789af.json" >"$unfinished"
if mixed="$("$root/scripts/issue-targets" "$unfinished" "$results/wfst-nvidia-h200-2026-11-28-af789af.json" 2>&1)"; then
  echo "FAIL: an unfinished file was accepted" >&2
  exit 1
fi
grep -q "cannot read $unfinished" <<<"$mixed" || { echo "FAIL: the unfinished file is not named" >&2; exit 1; }
grep -qE '^35 +WFST CUDA batch B=1 +0\.672 ms' <<<"$mixed" ||
  { echo "FAIL: the readable file beside an unfinished one was not reported" >&2; exit 1; }
echo "issue-targets: ok"

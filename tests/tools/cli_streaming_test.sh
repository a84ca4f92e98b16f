#!/usr/bin/env bash
# The CLI's streaming mode on the simulated samples (a separate ctest from cli_test.sh, so that each stays well inside
# ctest's time limit under the sanitizers).
#   cli_streaming_test.sh <asrdec CLI> <examples/data> [--sanitized]
set -euo pipefail
# shellcheck source=cli_test_setup.sh
source "$(dirname "$0")/cli_test_setup.sh"

# Streaming (--chunk N --lanes L: utterances join and leave the calls as a server's would) gives the JSON of a
# whole-batch run byte for byte, for every streaming decode command and algorithm, with and without fusion (the
# fused transducer runs take label looping: the fusion path is shared by every algorithm, and the API tests cover
# each one with fusion).
ctc_input=(--logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy")
streamed "ctc-greedy" ctc-greedy "${ctc_input[@]}"
streamed "ctc-greedy + LM + boosting" ctc-greedy "${ctc_input[@]}" "${lm[@]}" "${boost[@]}"
for model in rnnt tdt; do
  input=(--model "$data/$model/model.safetensors" --enc "$data/$model/enc_proj.npy" --lengths "$data/$model/lengths.npy")
  algos="frame-looping label-looping"
  [ "$model" = rnnt ] && algos="$algos wind"
  for algo in $algos; do
    streamed "$model $algo" "$model" "${input[@]}" --algo "$algo"
  done
  streamed "$model label-looping + LM + boosting" "$model" "${input[@]}" "${lm[@]}" "${boost[@]}"
done
streamed "ctc-beam" ctc-beam "${ctc_input[@]}" --beam 4
rnnt_input=(--model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy" --lengths "$data/rnnt/lengths.npy")
tdt_input=(--model "$data/tdt/model.safetensors" --enc "$data/tdt/enc_proj.npy" --lengths "$data/tdt/lengths.npy")
streamed "rnnt aes++" rnnt "${rnnt_input[@]}" --algo aes++ --beam 4 --aes-steps 3
streamed "rnnt aes++ + LM + boosting" rnnt "${rnnt_input[@]}" --algo aes++ --beam 3 "${lm[@]}" "${boost[@]}"
streamed "rnnt alsd++" rnnt "${rnnt_input[@]}" --algo alsd++ --beam 4
streamed "tdt alsd++ + LM + boosting" tdt "${tdt_input[@]}" --algo alsd++ --beam 3 "${lm[@]}" "${boost[@]}"
streamed "rnnt wind-beam + LM" rnnt "${rnnt_input[@]}" --algo wind-beam --beam 3 --window 2 "${lm[@]}"
streamed "ctc-beam + LM + boosting" ctc-beam "${ctc_input[@]}" --beam 4 --beam-beta 1 "${lm[@]}" "${boost[@]}"
if "$asrdec" decode ctc-beam "${ctc_input[@]}" --device cpu --chunk 4 --nbest 2 >/dev/null 2>"$work/err12.txt"; then
  fail "ctc-beam with --chunk and --nbest accepted"
fi
grep -q -- "--nbest with --chunk" "$work/err12.txt" || { cat "$work/err12.txt"; fail "ctc-beam --chunk --nbest"; }
echo "cli_streaming_test: all checks passed"

#!/usr/bin/env bash
# LM and boosting for blank-first models through the CLI: blank-first copies of the samples decode with the sample
# LM and phrases exactly as the blank-last originals.
#   cli_blank_first_test.sh <asrdec CLI> <examples/data> [--sanitized]
# (a separate ctest from cli_test.sh, so that each stays well inside ctest's time limit under the sanitizers).
set -euo pipefail
# shellcheck source=cli_test_setup.sh
source "$(dirname "$0")/cli_test_setup.sh"

# Blank-first models: copies of the samples with the blank moved to
# column 0 decode with the same LM and phrase list to the same transcripts and scores as the blank-last originals.
python3 "$(dirname "$0")/blank_first_copy.py" "$data" "$work/blank_first" || fail "blank-first copies"
fused=(--lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5 "${boost[@]}")
blank_first_pair() {  # <name> <original args...> -- <copy args...>: the two decodes give equal JSON results
  local name="$1"; shift
  local original=() copy=()
  while [ "$1" != "--" ]; do original+=("$1"); shift; done
  shift
  copy=("$@")
  "$asrdec" decode "${original[@]}" --json --device cpu >"$work/bf_original.jsonl" 2>"$work/bf_err.txt" \
    || { cat "$work/bf_err.txt"; fail "$name (blank last)"; }
  "$asrdec" decode "${copy[@]}" --json --device cpu >"$work/bf_copy.jsonl" 2>"$work/bf_err.txt" \
    || { cat "$work/bf_err.txt"; fail "$name (blank first)"; }
  python3 - "$work/bf_original.jsonl" "$work/bf_copy.jsonl" <<'PY' || fail "$name: the blank-first copy decodes differently"
import json, sys
original = [json.loads(l) for l in open(sys.argv[1])]
copy = [json.loads(l) for l in open(sys.argv[2])]
assert len(original) == len(copy) > 0
assert sum(o["lm_score"] != 0 for o in original) > len(original) // 2, "the LM did not take part"
assert sum(o["boost_score"] != 0 for o in original) >= 5, "too few utterances matched a phrase"
for o, c in zip(original, copy):
    assert c["text"] == o["text"], (o["text"], c["text"])
    assert c["tokens"] == [t + 1 for t in o["tokens"]], "token t of the original is column t + 1 of the copy"
    assert c["timestamps"] == o["timestamps"]
    for key in ("score", "am_score", "lm_score", "boost_score"):
        assert abs(c[key] - o[key]) <= 1e-4 * max(1.0, abs(o[key])), (key, o[key], c[key])
PY
}
ctc_common=(--lengths "$data/ctc/lengths.npy")
blank_first_pair "ctc-greedy + LM + boosting" \
  ctc-greedy --logprobs "$data/ctc/logprobs.npy" "${ctc_common[@]}" --vocab "$data/tokens.txt" "${fused[@]}" -- \
  ctc-greedy --logprobs "$work/blank_first/ctc_logprobs.npy" "${ctc_common[@]}" --blank-id 0 \
  --vocab "$work/blank_first/tokens.txt" "${fused[@]}"
blank_first_pair "ctc-beam + LM + boosting" \
  ctc-beam --logprobs "$data/ctc/logprobs.npy" "${ctc_common[@]}" --vocab "$data/tokens.txt" --beam 4 "${fused[@]}" -- \
  ctc-beam --logprobs "$work/blank_first/ctc_logprobs.npy" "${ctc_common[@]}" --blank-id 0 \
  --vocab "$work/blank_first/tokens.txt" --beam 4 "${fused[@]}"
algos="label-looping alsd++"
[ "$sanitized" = --sanitized ] && algos="label-looping"  # the beam searches with the LM take minutes under ASan
for model in rnnt tdt; do
  for algo in $algos; do
    blank_first_pair "$model $algo + LM + boosting" \
      "$model" --model "$data/$model/model.safetensors" --enc "$data/$model/enc_proj.npy" \
      --lengths "$data/$model/lengths.npy" --vocab "$data/tokens.txt" --algo "$algo" "${fused[@]}" -- \
      "$model" --model "$work/blank_first/$model.safetensors" --enc "$data/$model/enc_proj.npy" \
      --lengths "$data/$model/lengths.npy" --vocab "$work/blank_first/tokens.txt" --algo "$algo" "${fused[@]}"
  done
done
echo "cli_blank_first_test: all checks passed"

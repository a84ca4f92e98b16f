#!/usr/bin/env bash
# The CLI on the real samples (examples/data/real: a trained model's outputs on synthesized speech): greedy decoding
# equals the exporter's NumPy decoders, streaming equals whole decoding, and the decoders keep their known WER
# order (beam search with the LM and the WFST search at or below greedy decoding).
#   cli_real_test.sh <asrdec CLI> <examples/data> [--sanitized]
set -euo pipefail
# shellcheck source=cli_test_setup.sh
source "$(dirname "$0")/cli_test_setup.sh"
real="$data/real"
ctc=(--logprobs "$real/logprobs.npy" --lengths "$real/lengths.npy")
rnnt_real=(--model "$real/model.safetensors" --enc "$real/enc_proj.npy" --lengths "$real/lengths.npy")

# Greedy decoding equals the exporter's NumPy decoders (tools/real_model/export.py).
"$asrdec" decode ctc-greedy "${ctc[@]}" --device cpu --json >"$work/ctc.jsonl" 2>/dev/null || fail "ctc-greedy"
"$asrdec" decode rnnt "${rnnt_real[@]}" --device cpu --json >"$work/rnnt.jsonl" 2>/dev/null || fail "rnnt"
python3 - "$work/ctc.jsonl" "$real/expected_ctc_greedy.jsonl" "$work/rnnt.jsonl" "$real/expected_rnnt_greedy.jsonl" \
  <<'PY' || fail "greedy decoding differs from the exporter's"
import json, sys
for got_file, want_file in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    got = [json.loads(l) for l in open(got_file)]
    want = [json.loads(l) for l in open(want_file)]
    assert len(got) == len(want) == 40, want_file
    for g, w in zip(got, want):
        assert (g["tokens"], g["timestamps"]) == (w["tokens"], w["timestamps"]), (want_file, g, w)
        assert abs(g["score"] - w["score"]) < 1e-3 * max(1.0, abs(w["score"])), (want_file, g["score"], w["score"])
PY

# Streaming equals whole decoding.
streamed "real ctc-greedy" ctc-greedy "${ctc[@]}"
streamed "real ctc-beam + LM" ctc-beam "${ctc[@]}" --beam 4 "${lm[@]}"
streamed "real rnnt label-looping" rnnt "${rnnt_real[@]}"
streamed "real rnnt alsd++ + LM" rnnt "${rnnt_real[@]}" --algo alsd++ --beam 4 "${lm[@]}"

# The WER order of scripts/run-samples' table.
common=(--vocab "$data/tokens.txt" --refs "$real/refs.txt" --device cpu --show 0)
"$asrdec" decode ctc-greedy "${ctc[@]}" "${common[@]}" 2>"$work/ctc_greedy.txt" >/dev/null || fail "ctc greedy"
"$asrdec" decode ctc-beam "${ctc[@]}" "${common[@]}" --beam 8 --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5 \
  --beam-beta 1 2>"$work/ctc_beam.txt" >/dev/null || fail "ctc beam"
"$asrdec" decode rnnt "${rnnt_real[@]}" "${common[@]}" 2>"$work/rnnt_greedy.txt" >/dev/null || fail "rnnt greedy"
"$asrdec" decode rnnt "${rnnt_real[@]}" "${common[@]}" --algo alsd++ --beam 4 --lm "$data/lm/tokens_4gram.arpa.gz" \
  --lm-weight 0.3 2>"$work/rnnt_beam.txt" >/dev/null || fail "rnnt beam"
"$asrdec" graph build --tokens "$data/tokens.txt" --lexicon "$data/wfst/lexicon.txt" \
  --arpa "$data/wfst/words_3gram.arpa.gz" -o "$work/TLG.fst" --words-out "$work/words.txt" >/dev/null 2>&1 \
  || fail "graph build"
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" "${ctc[@]}" --refs "$real/refs.txt" \
  --tokens "$data/tokens.txt" --acoustic-scale 2 --show 0 2>"$work/wfst.txt" >/dev/null || fail "ctc wfst"
at_or_below() { python3 -c "import sys; sys.exit(0 if float('$(wer "$1")') <= float('$(wer "$2")') else 1)" \
  || fail "$1: WER $(wer "$1") above $2's $(wer "$2")"; }
at_or_below "$work/ctc_beam.txt" "$work/ctc_greedy.txt"
at_or_below "$work/wfst.txt" "$work/ctc_greedy.txt"
at_or_below "$work/rnnt_beam.txt" "$work/rnnt_greedy.txt"
echo "cli_real_test: all checks passed (WER: CTC greedy $(wer "$work/ctc_greedy.txt"), CTC beam + LM" \
  "$(wer "$work/ctc_beam.txt"), WFST $(wer "$work/wfst.txt"), RNN-T greedy $(wer "$work/rnnt_greedy.txt")," \
  "ALSD++ + LM $(wer "$work/rnnt_beam.txt"))"

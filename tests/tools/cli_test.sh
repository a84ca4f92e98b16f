#!/usr/bin/env bash
# End-to-end test of the asrdec CLI: JSON output contract, WER report, text mode, and error exits.
#   cli_test.sh <asrdec CLI> <examples/data>
set -euo pipefail
# shellcheck source=cli_test_setup.sh
source "$(dirname "$0")/cli_test_setup.sh"

"$asrdec" info | grep -q "^asrdec " || fail "info does not print the version"
"$asrdec" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["devices"][0]["device"]=="cpu"' \
  || fail "info --json"

# CPU threads never change results.
for threads in 1 3; do
  "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" --device cpu \
    --json --threads "$threads" >"$work/threads_$threads.jsonl" 2>/dev/null || fail "ctc-greedy --threads $threads"
done
cmp -s "$work/threads_1.jsonl" "$work/threads_3.jsonl" || fail "ctc-greedy --threads 3 differs from --threads 1"
for algo in alsd++ aes++ wind-beam; do
  for threads in 1 3; do
    "$asrdec" decode rnnt --model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy" \
      --lengths "$data/rnnt/lengths.npy" --device cpu --algo "$algo" --beam 3 --window 2 --nbest 3 --json --threads "$threads" \
      >"$work/threads_$threads.jsonl" 2>/dev/null || fail "rnnt $algo --threads $threads"
  done
  cmp -s "$work/threads_1.jsonl" "$work/threads_3.jsonl" || fail "rnnt $algo --threads 3 differs from --threads 1"
done

# JSON: one object per reference line, in order, with tokens/timestamps/score/text; WER on stderr.
"$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" \
  --vocab "$data/tokens.txt" --refs "$data/ctc/refs.txt" --device cpu --json >"$work/out.jsonl" 2>"$work/err.txt" \
  || { cat "$work/err.txt"; fail "decode --json exited non-zero"; }
python3 - "$work/out.jsonl" "$data/ctc/refs.txt" "$data/ctc/expected_greedy.jsonl" <<'PY' || fail "JSON contract"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
refs = open(sys.argv[2]).read().splitlines()
expected = [json.loads(l) for l in open(sys.argv[3])]
assert len(lines) == len(refs) == len(expected), (len(lines), len(refs), len(expected))
for i, (got, want) in enumerate(zip(lines, expected)):
    assert got["utterance"] == i
    for key in ("tokens", "timestamps", "score", "text", "token_scores"):
        assert key in got, key
    assert got["tokens"] == want["tokens"] and got["timestamps"] == want["timestamps"], i
    assert len(got["token_scores"]) == len(got["tokens"])
    assert isinstance(got["text"], str)
    # every decoder's hypotheses have the same keys (docs/results.md); words carry times from the word pieces
    assert set(got) == {"utterance", "text", "words", "tokens", "timestamps", "durations", "token_scores", "score",
                        "ranking_score", "am_score", "lm_score", "boost_score"}, sorted(got)
    assert " ".join(w["word"] for w in got["words"]) == got["text"], got
    # seconds lie in the words' frames, never overlap and last longer than zero (docs/results.md)
    assert all(w["start_frame"] < w["end_frame"] and 0.08 * w["start_frame"] - 1e-9 <= w["start"] < w["end"]
               <= 0.08 * w["end_frame"] + 1e-9 for w in got["words"]), got
    assert all(a["end"] <= b["start"] + 1e-9 for a, b in zip(got["words"], got["words"][1:])), got
    assert got["score"] == got["ranking_score"] and got["score"] <= 0
PY
grep -q "^WER [0-9.]*% " "$work/err.txt" || { cat "$work/err.txt"; fail "no WER summary on stderr"; }
grep -q "RTFx" "$work/err.txt" || fail "no throughput summary"

# Text mode honours --show; without --vocab it prints token ids.
"$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" \
  --vocab "$data/tokens.txt" --show 2 --device cpu >"$work/text.txt" 2>/dev/null
[ "$(wc -l <"$work/text.txt")" -eq 2 ] || fail "--show 2 printed $(wc -l <"$work/text.txt") lines"
"$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --show 1 --device cpu 2>/dev/null \
  | grep -Eq "^0:( [0-9]+)+$" || fail "token ids without --vocab"

# Errors: a clear message and a non-zero exit, never a crash.
head -n 3 "$data/ctc/refs.txt" >"$work/short_refs.txt"
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --vocab "$data/tokens.txt" \
  --refs "$work/short_refs.txt" --device cpu >/dev/null 2>"$work/err2.txt"; then fail "short refs accepted"; fi
grep -q "asrdec: error: .*has 3 lines but" "$work/err2.txt" || { cat "$work/err2.txt"; fail "short refs message"; }
printf 'not an npy file' >"$work/bad.npy"
if "$asrdec" decode ctc-greedy --logprobs "$work/bad.npy" --device cpu >/dev/null 2>"$work/err3.txt"; then fail "bad npy accepted"; fi
grep -q "asrdec: error: .*bad.npy: not a .npy file" "$work/err3.txt" || { cat "$work/err3.txt"; fail "bad npy message"; }
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --refs "$data/ctc/refs.txt" --device cpu \
  >/dev/null 2>"$work/err4.txt"; then fail "--refs without --vocab accepted"; fi
grep -q "needs --vocab" "$work/err4.txt" || fail "--refs without --vocab message"
# The old spelling --logits still works for one release, with a deprecation warning; neither spelling is an error.
"$asrdec" decode ctc-greedy --logits "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" --device cpu --json \
  >"$work/old_spelling.jsonl" 2>"$work/old_spelling.txt" || fail "--logits alias"
grep -q "warning: --logits is deprecated" "$work/old_spelling.txt" || fail "--logits deprecation warning"
"$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" --device cpu --json \
  >"$work/new_spelling.jsonl" 2>/dev/null || fail "--logprobs"
cmp -s "$work/old_spelling.jsonl" "$work/new_spelling.jsonl" || fail "--logits and --logprobs differ"
if "$asrdec" decode ctc-beam --lengths "$data/ctc/lengths.npy" --device cpu >/dev/null 2>"$work/err_required.txt"; then
  fail "ctc-beam without --logprobs accepted"
fi
grep -q -- "--logprobs is required" "$work/err_required.txt" || { cat "$work/err_required.txt"; fail "--logprobs required"; }
head -n 10 "$data/tokens.txt" >"$work/small_vocab.txt"
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --vocab "$work/small_vocab.txt" --device cpu \
  >/dev/null 2>"$work/err5.txt"; then fail "vocabulary mismatch accepted"; fi
grep -q "vocabulary mismatch: the token table has 10 entries" "$work/err5.txt" || { cat "$work/err5.txt"; fail "vocab message"; }
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --device tpu >/dev/null 2>"$work/err6.txt"; then
  fail "unknown device accepted"
fi
grep -q "unknown device 'tpu'" "$work/err6.txt" || fail "unknown device message"
# Transducers: every algorithm (and chunked decoding) prints the same tokens as the generator's own decoder.
for model in rnnt tdt; do
  algos="frame-looping label-looping"
  [ "$model" = rnnt ] && algos="$algos wind"
  for algo in $algos; do
    for chunk in 0 5; do
      "$asrdec" decode "$model" --model "$data/$model/model.safetensors" --enc "$data/$model/enc_proj.npy" \
        --lengths "$data/$model/lengths.npy" --vocab "$data/tokens.txt" --algo "$algo" --chunk "$chunk" --device cpu \
        --json >"$work/$model-$algo-$chunk.jsonl" 2>"$work/err.txt" || { cat "$work/err.txt"; fail "$model $algo"; }
      python3 - "$work/$model-$algo-$chunk.jsonl" "$data/$model/expected_greedy.jsonl" "$model" "$chunk" <<'PY' \
        || fail "$model $algo chunk $chunk differs from the expected output"
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [json.loads(l) for l in open(sys.argv[2])]
assert len(got) == len(want) == 40
for g, w in zip(got, want):
    assert g["tokens"] == w["tokens"] and g["timestamps"] == w["timestamps"]
    if sys.argv[3] == "tdt":
        assert g["durations"] == w["durations"]
    else:
        assert g["durations"] == []
    if sys.argv[4] == "0":  # the path log-probability of the generator's NumPy decoder
        assert abs(g["score"] - w["score"]) < 1e-3 * max(1.0, abs(w["score"])), (g["score"], w["score"])
    assert " ".join(x["word"] for x in g["words"]) == g["text"]
PY
    done
  done
done
if "$asrdec" decode tdt --model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy" --device cpu \
  >/dev/null 2>"$work/err7.txt"; then fail "RNN-T model accepted by decode tdt"; fi
grep -q "holds a rnnt model; decode it with \`asrdec decode rnnt\`" "$work/err7.txt" || { cat "$work/err7.txt"; fail "model type message"; }
if "$asrdec" decode rnnt --model "$data/rnnt/model.safetensors" --enc "$data/ctc/logprobs.npy" --device cpu \
  >/dev/null 2>"$work/err8.txt"; then fail "CTC log-probabilities accepted as enc_proj"; fi
grep -q "enc_proj: dimension 2 must be 64 (J, the joint hidden size of the model), got 257" "$work/err8.txt" \
  || { cat "$work/err8.txt"; fail "enc_proj shape message"; }
# LM fusion lowers the WER of every sample at the weights the README shows.
for pair in ctc-greedy:ctc:0.5 rnnt:rnnt:0.2 tdt:tdt:0.3; do
  IFS=: read -r command set weight <<<"$pair"
  if [ "$command" = ctc-greedy ]; then inputs=(--logprobs "$data/ctc/logprobs.npy"); else
    inputs=(--model "$data/$set/model.safetensors" --enc "$data/$set/enc_proj.npy"); fi
  common=(--lengths "$data/$set/lengths.npy" --vocab "$data/tokens.txt" --refs "$data/$set/refs.txt" --device cpu --show 0)
  "$asrdec" decode "$command" "${inputs[@]}" "${common[@]}" 2>"$work/plain.txt" >/dev/null || fail "$set without LM"
  "$asrdec" decode "$command" "${inputs[@]}" "${common[@]}" --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight "$weight" \
    2>"$work/fused.txt" >/dev/null || { cat "$work/fused.txt"; fail "$set with LM"; }
  python3 -c "import sys; sys.exit(0 if float('$(wer "$work/fused.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
    || fail "$set: LM fusion did not lower the WER ($(wer "$work/plain.txt") -> $(wer "$work/fused.txt"))"
done
# lm score: per-token log10 values that add up to the total; a converted binary image scores the same.
printf 'and god said\nlet there be light\n' >"$work/sentences.txt"
"$asrdec" lm score --lm "$data/../../tests/data/arpa/kjv_words_3gram.arpa.gz" --json <"$work/sentences.txt" \
  >"$work/score.jsonl" || fail "lm score"
"$asrdec" lm convert --lm "$data/../../tests/data/arpa/kjv_words_3gram.arpa.gz" -o "$work/words.bin" || fail "lm convert"
"$asrdec" lm score --lm "$work/words.bin" --json <"$work/sentences.txt" >"$work/score_bin.jsonl" || fail "score binary"
cmp -s "$work/score.jsonl" "$work/score_bin.jsonl" || fail "the binary image scores differently"
python3 - "$work/score.jsonl" <<'PY' || fail "lm score JSON contract"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 2
for d in lines:
    assert set(d) == {"total_log10", "oov", "token_log10"}, d
    assert abs(sum(d["token_log10"]) - d["total_log10"]) < 1e-4, d
    assert all(v < 0 for v in d["token_log10"]), d
assert len(lines[0]["token_log10"]) == 4 and len(lines[1]["token_log10"]) == 5
PY
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --device cpu \
  --lm "$data/../../tests/data/arpa/kjv_tokens_6gram_v1024.arpa.gz" >/dev/null 2>"$work/err9.txt"; then
  fail "an LM over another vocabulary was accepted"
fi
grep -q "is token 512, outside the vocabulary of V = 256 tokens" "$work/err9.txt" || { cat "$work/err9.txt"; fail "LM vocabulary message"; }
# Phrase boosting: the RNN-T sample's WER drops at the README's weight, the chunked decode equals the whole one,
# JSON carries boost_score, and --boost without --bpe is refused.
"$asrdec" decode rnnt "${rnnt[@]}" 2>"$work/plain.txt" >/dev/null || fail "rnnt without boosting"
"$asrdec" decode rnnt "${rnnt[@]}" "${boost[@]}" 2>"$work/boosted.txt" >/dev/null || { cat "$work/boosted.txt"; fail "boost"; }
python3 -c "import sys; sys.exit(0 if float('$(wer "$work/boosted.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
  || fail "boosting did not lower the RNN-T WER ($(wer "$work/plain.txt") -> $(wer "$work/boosted.txt"))"
"$asrdec" decode rnnt "${rnnt[@]}" "${boost[@]}" --json >"$work/boost_whole.jsonl" 2>/dev/null || fail "boost json"
"$asrdec" decode rnnt "${rnnt[@]}" "${boost[@]}" --json --chunk 7 >"$work/boost_chunks.jsonl" 2>/dev/null \
  || fail "boost chunks"
python3 - "$work/boost_whole.jsonl" "$work/boost_chunks.jsonl" <<'PY' || fail "boosting JSON contract"
import json, sys
whole = [json.loads(l) for l in open(sys.argv[1])]
chunks = [json.loads(l) for l in open(sys.argv[2])]
assert [w["tokens"] for w in whole] == [c["tokens"] for c in chunks]
assert sum(1 for w in whole if w["boost_score"] != 0) >= 5, "too few utterances matched a phrase"
for w, c in zip(whole, chunks):
    assert abs(w["score"] - (w["am_score"] + w["lm_score"] + w["boost_score"])) < 1e-3, w
    assert abs(w["boost_score"] - c["boost_score"]) < 1e-3, (w, c)
# Word confidences (the decoder gives token confidences): the minimum of the word's pieces' by default.
assert all(0 <= word["confidence"] <= 1 for w in whole for word in w["words"])
# RNN-T words share frames (several pieces on one frame); their seconds split the frame and never overlap.
pairs = [(a, b) for w in whole for a, b in zip(w["words"], w["words"][1:])]
assert sum(a["end_frame"] > b["start_frame"] for a, b in pairs) >= 10, "too few words share a frame to test"
assert all(a["end"] <= b["start"] + 1e-9 and a["start"] < a["end"] for a, b in pairs)
PY
if "$asrdec" decode rnnt "${rnnt[@]}" --boost "$data/boost/phrases.txt" >/dev/null 2>"$work/err10.txt"; then
  fail "--boost without --bpe accepted"
fi
grep -q -- "--boost needs --bpe" "$work/err10.txt" || { cat "$work/err10.txt"; fail "--bpe message"; }
# Beam search: ALSD++ with beam 4 and the sample LM beats greedy decoding on the RNN-T sample (the README's
# acceptance number); --nbest adds ranked hypotheses to the JSON.
beam=(--algo alsd++ --beam 4 --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5)
"$asrdec" decode rnnt "${rnnt[@]}" "${beam[@]}" 2>"$work/beam.txt" >/dev/null || { cat "$work/beam.txt"; fail "alsd++"; }
python3 -c "import sys; sys.exit(0 if float('$(wer "$work/beam.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
  || fail "ALSD++ with the LM did not lower the RNN-T WER ($(wer "$work/plain.txt") -> $(wer "$work/beam.txt"))"
"$asrdec" decode tdt --model "$data/tdt/model.safetensors" --enc "$data/tdt/enc_proj.npy" --lengths "$data/tdt/lengths.npy" \
  --device cpu --algo alsd++ --beam 3 --nbest 3 --json >"$work/nbest.jsonl" 2>/dev/null || fail "tdt --nbest"
python3 - "$work/nbest.jsonl" <<'PY' || fail "n-best JSON contract"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40
for line in lines:
    nbest = line["nbest"]
    assert 1 <= len(nbest) <= 3, line
    assert nbest[0]["tokens"] == line["tokens"] and nbest[0]["score"] == line["score"], line
    keys = [h["ranking_score"] for h in nbest]
    assert keys == sorted(keys, reverse=True), keys
    assert all(abs(h["ranking_score"] - h["score"] / (len(h["tokens"]) + 1)) < 1e-5 for h in nbest), line
    assert len({tuple(h["tokens"]) for h in nbest}) == len(nbest), "unique transcripts"
    assert all(len(h["durations"]) == len(h["tokens"]) for h in nbest), line
    # Token scores along each hypothesis' own path: one log-probability per token.
    assert all(len(h["token_scores"]) == len(h["tokens"]) for h in nbest), line
    assert all(s <= 1e-6 for h in nbest for s in h["token_scores"]), line
    assert set(nbest[0]) == set(line) - {"utterance", "nbest"}, sorted(line)
PY
# AES++ with the LM also beats greedy on the RNN-T sample; TDT models are refused.
"$asrdec" decode rnnt "${rnnt[@]}" --algo aes++ --aes-steps 3 --beam 4 --lm "$data/lm/tokens_4gram.arpa.gz" \
  --lm-weight 0.5 2>"$work/aes.txt" >/dev/null || { cat "$work/aes.txt"; fail "aes++"; }
python3 -c "import sys; sys.exit(0 if float('$(wer "$work/aes.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
  || fail "AES++ with the LM did not lower the RNN-T WER ($(wer "$work/plain.txt") -> $(wer "$work/aes.txt"))"
# So does WIND beam search.
"$asrdec" decode rnnt "${rnnt[@]}" --algo wind-beam --beam 4 --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5 \
  2>"$work/windbeam.txt" >/dev/null || { cat "$work/windbeam.txt"; fail "wind-beam"; }
python3 -c "import sys; sys.exit(0 if float('$(wer "$work/windbeam.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
  || fail "WIND beam with the LM did not lower the RNN-T WER ($(wer "$work/plain.txt") -> $(wer "$work/windbeam.txt"))"
if "$asrdec" decode tdt --model "$data/tdt/model.safetensors" --enc "$data/tdt/enc_proj.npy" --device cpu \
  --algo aes++ >/dev/null 2>"$work/err12.txt"; then
  fail "aes++ accepted for TDT"
fi
if "$asrdec" decode rnnt "${rnnt[@]}" --algo alsd++ --chunk 8 --nbest 2 >/dev/null 2>"$work/err11.txt"; then
  fail "beam search with --chunk and --nbest accepted"
fi
grep -q -- "--nbest with --chunk" "$work/err11.txt" || { cat "$work/err11.txt"; fail "--chunk --nbest message"; }
# CTC beam search: beam 4 with the sample LM and an insertion bonus beats greedy decoding; n-best JSON.
ctc=(--logprobs "$data/ctc/logprobs.npy" --lengths "$data/ctc/lengths.npy" --vocab "$data/tokens.txt"
  --refs "$data/ctc/refs.txt" --device cpu --show 0)
"$asrdec" decode ctc-greedy "${ctc[@]}" 2>"$work/ctc_plain.txt" >/dev/null || fail "ctc-greedy"
"$asrdec" decode ctc-beam "${ctc[@]}" --beam 4 --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5 --beam-beta 1 \
  2>"$work/ctc_beam.txt" >/dev/null || { cat "$work/ctc_beam.txt"; fail "ctc-beam"; }
python3 -c "import sys; sys.exit(0 if float('$(wer "$work/ctc_beam.txt")') < float('$(wer "$work/ctc_plain.txt")') else 1)" \
  || fail "CTC beam search with the LM did not lower the WER ($(wer "$work/ctc_plain.txt") -> $(wer "$work/ctc_beam.txt"))"
"$asrdec" decode ctc-beam "${ctc[@]}" --beam 4 --nbest 2 --json >"$work/ctc_nbest.jsonl" 2>/dev/null || fail "ctc-beam json"
python3 - "$work/ctc_nbest.jsonl" <<'PY' || fail "ctc-beam n-best JSON contract"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40
for line in lines:
    scores = [h["score"] for h in line["nbest"]]
    assert 1 <= len(scores) <= 2 and scores == sorted(scores, reverse=True), line
    assert line["nbest"][0]["tokens"] == line["tokens"], line
    assert all(len(h["token_scores"]) == len(h["tokens"]) for h in line["nbest"]), line
    # Beam search gives token confidences, so words carry one (the minimum of their pieces').
    assert all(0 <= word["confidence"] <= 1 for word in line["words"]), line
PY
# graph build: the reference words spelled with the sample BPE model and the test word 3-gram give a TLG, the
# words table and the lexicon used; a lexicon piece that is not a token is refused with its file and line.
tr ' ' '\n' <"$data/ctc/refs.txt" | sort -u >"$work/ref_words.txt"
"$asrdec" graph build --tokens "$data/tokens.txt" --words "$work/ref_words.txt" --bpe "$data/bpe.model" \
  --arpa "$data/../../tests/data/arpa/kjv_words_3gram.arpa.gz" --topology compact -o "$work/TLG.fst" \
  --words-out "$work/words.txt" --lexicon-out "$work/lexicon.txt" >"$work/graph.txt" 2>&1 \
  || { cat "$work/graph.txt"; fail "graph build"; }
grep -q "^TLG: [0-9]* states, [0-9]* arcs" "$work/graph.txt" || { cat "$work/graph.txt"; fail "graph build summary"; }
[ -s "$work/TLG.fst" ] || fail "graph build wrote no graph"
head -1 "$work/words.txt" | grep -qx "<eps> 0" || fail "words table starts with <eps> 0"
tail -1 "$work/words.txt" | grep -q "^</s> " || fail "words table ends with </s>"
[ "$(wc -l <"$work/lexicon.txt")" = "$(grep -c . "$work/ref_words.txt")" ] || fail "--lexicon-out"
printf 'the \xe2\x96\x81the\nzz \xe2\x96\x81zz\n' >"$work/bad_lexicon.txt"
if "$asrdec" graph build --tokens "$data/tokens.txt" --lexicon "$work/bad_lexicon.txt" \
  --arpa "$data/wfst/words_3gram.arpa.gz" -o "$work/bad.fst" --words-out "$work/bad_words.txt" 2>"$work/err13.txt"; then
  fail "graph build accepted a piece that is not a token"
fi
grep -q "bad_lexicon.txt:2: piece '▁zz' of word 'zz' is not a token" "$work/err13.txt" \
  || { cat "$work/err13.txt"; fail "graph build bad piece message"; }
# decode ctc-wfst through that TLG: JSON fields, chunked decoding equal to whole utterances, word boosting, errors.
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --lengths "$data/ctc/lengths.npy" --acoustic-scale 2 --tokens "$data/tokens.txt" --json >"$work/wfst.jsonl" \
  2>"$work/wfst_err.txt" \
  || { cat "$work/wfst_err.txt"; fail "decode ctc-wfst"; }
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --lengths "$data/ctc/lengths.npy" --acoustic-scale 2 --tokens "$data/tokens.txt" --json --chunk 7 --batch-size 5 \
  --threads 3 >"$work/wfst_chunked.jsonl" \
  2>/dev/null || fail "decode ctc-wfst --chunk"
cmp -s "$work/wfst.jsonl" "$work/wfst_chunked.jsonl" || fail "ctc-wfst chunked output differs from whole utterances"
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --lengths "$data/ctc/lengths.npy" --acoustic-scale 2 --tokens "$data/tokens.txt" --json --chunk 3 --lanes 7 \
  >"$work/wfst_lanes.jsonl" 2>/dev/null || fail "decode ctc-wfst --chunk --lanes"
cmp -s "$work/wfst.jsonl" "$work/wfst_lanes.jsonl" || fail "ctc-wfst --chunk 3 --lanes 7 differs from whole utterances"
printf 'israel 4.0\n' >"$work/boost_words.txt"
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --lengths "$data/ctc/lengths.npy" --acoustic-scale 2 --json --boost "$work/boost_words.txt" \
  >"$work/wfst_boost.jsonl" 2>/dev/null || fail "decode ctc-wfst --boost"
python3 - "$work/wfst.jsonl" "$work/wfst_boost.jsonl" <<'PY' || fail "ctc-wfst JSON"
import json, sys
plain = [json.loads(l) for l in open(sys.argv[1])]
boosted = [json.loads(l) for l in open(sys.argv[2])]
assert len(plain) == 40 and len(boosted) == 40
for i, line in enumerate(plain):
    assert set(line) == {"utterance", "text", "words", "word_ids", "score", "cost", "graph_cost", "acoustic_cost",
                         "reached_final", "overflow"}, sorted(line)
    assert line["utterance"] == i and line["score"] == -line["cost"]
    n = len(line["word_ids"])
    words = line["words"]
    assert len(line["text"].split()) == n == len(words) and [w["word"] for w in words] == line["text"].split()
    assert all(w["start_frame"] < w["end_frame"] for w in words)
    assert all(abs(w["start"] - 0.08 * w["start_frame"]) < 1e-9 and abs(w["end"] - 0.08 * w["end_frame"]) < 1e-9
               for w in words)
    # with --tokens, words follow each other
    assert all(a["end_frame"] <= b["start_frame"] for a, b in zip(words, words[1:])), line
    assert abs(line["graph_cost"] + line["acoustic_cost"] - line["cost"]) < 1e-2 * max(1, abs(line["cost"]))
count = lambda lines: sum(l["text"].split().count("israel") for l in lines)
assert count(boosted) >= count(plain), (count(boosted), count(plain))
PY
printf 'notaword 1.0\n' >"$work/bad_boost.txt"
if "$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --boost "$work/bad_boost.txt" 2>"$work/err14.txt" >/dev/null; then
  fail "ctc-wfst accepted an unknown boosted word"
fi
grep -q "bad_boost.txt:1: word 'notaword' is not in the word table" "$work/err14.txt" \
  || { cat "$work/err14.txt"; fail "ctc-wfst bad boost message"; }
if "$asrdec" decode ctc-wfst --graph "$data/tokens.txt" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  2>"$work/err15.txt" >/dev/null; then
  fail "ctc-wfst accepted a graph that is not an FST"
fi
grep -q "not an OpenFst binary file" "$work/err15.txt" || { cat "$work/err15.txt"; fail "ctc-wfst bad graph message"; }
# AED: greedy equals the sample generator's network; beam + LM gives N-best lists with text; bad options exit 1.
aed=(--model "$data/aed/model.safetensors" --encoder "$data/aed/encoder.npy" --lengths "$data/aed/lengths.npy" --device cpu)
"$asrdec" decode aed "${aed[@]}" --json --vocab "$data/tokens.txt" >"$work/aed_greedy.jsonl" 2>/dev/null || fail "aed greedy"
"$asrdec" decode aed "${aed[@]}" --json --vocab "$data/tokens.txt" --algo beam --beam 4 --nbest 4 --length-penalty 1 \
  --lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.5 >"$work/aed_beam.jsonl" 2>/dev/null || fail "aed beam + LM"
python3 - "$work/aed_greedy.jsonl" "$work/aed_beam.jsonl" "$data/aed/expected_greedy.jsonl" "$data/aed/refs.txt" <<'PY' \
  || fail "aed JSON"
import json, sys
greedy = [json.loads(l) for l in open(sys.argv[1])]
beam = [json.loads(l) for l in open(sys.argv[2])]
expected = [json.loads(l) for l in open(sys.argv[3])]
refs = open(sys.argv[4]).read().splitlines()
assert len(greedy) == len(expected) == len(beam) == len(refs) == 40
for g, e in zip(greedy, expected):
    assert g["tokens"] == e["tokens"] and abs(g["score"] - e["score"]) < 1e-3 * max(1, abs(e["score"])), (g, e)
def errors(lines):
    import difflib
    total = 0
    for l, r in zip(lines, refs):
        a, b = l["text"].split(), r.split()
        m = difflib.SequenceMatcher(a=b, b=a)
        total += max(len(a), len(b)) - sum(x.size for x in m.get_matching_blocks())
    return total
assert all(len(l["nbest"]) == 4 and l["nbest"][0]["tokens"] == l["tokens"] for l in beam)
assert all(l["lm_score"] < 0 for l in beam)
assert errors(beam) < errors(greedy), (errors(beam), errors(greedy))
PY
if "$asrdec" decode aed "${aed[@]}" --prompt 256,x 2>"$work/err16.txt" >/dev/null; then fail "aed accepted a bad prompt"; fi
grep -q -- "--prompt: 'x' is not a token id" "$work/err16.txt" || { cat "$work/err16.txt"; fail "aed prompt message"; }
if "$asrdec" decode aed --model "$data/aed/model.safetensors" --encoder "$data/ctc/logprobs.npy" --device cpu \
  2>"$work/err17.txt" >/dev/null; then fail "aed accepted CTC log-probabilities as encoder output"; fi
grep -q "encoder" "$work/err17.txt" || { cat "$work/err17.txt"; fail "aed encoder message"; }
# WFST N-best and min_active: the first of the N-best is the one-best line; a tight beam with min_active finds what
# the wide beam finds on more utterances than without it.
"$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
  --lengths "$data/ctc/lengths.npy" --device cpu --json --nbest 3 >"$work/wfst_nbest.jsonl" 2>/dev/null || fail "ctc-wfst --nbest"
for m in 0 20; do
  "$asrdec" decode ctc-wfst --graph "$work/TLG.fst" --words "$work/words.txt" --logprobs "$data/ctc/logprobs.npy" \
    --lengths "$data/ctc/lengths.npy" --device cpu --json --beam 2 --min-active "$m" >"$work/wfst_tight_$m.jsonl" \
    2>/dev/null || fail "ctc-wfst --min-active $m"
done
python3 - "$work/wfst_nbest.jsonl" "$work/wfst_tight_0.jsonl" "$work/wfst_tight_20.jsonl" <<'PY' || fail "wfst nbest/min_active"
import json, sys
wide, tight0, tight20 = ([json.loads(l) for l in open(p)] for p in sys.argv[1:4])
for l in wide:
    assert 1 <= len(l["nbest"]) <= 3 and l["nbest"][0]["word_ids"] == l["word_ids"], l
    assert len({tuple(h["word_ids"]) for h in l["nbest"]}) == len(l["nbest"])
same = lambda lines: sum(a["word_ids"] == b["word_ids"] for a, b in zip(lines, wide))
assert same(tight20) > same(tight0) + 10, (same(tight0), same(tight20))
PY
echo "cli_test: all checks passed"

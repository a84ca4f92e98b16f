#!/usr/bin/env bash
# The CLI as a streaming server's helper: endpointing in --chunk mode, and phrases per utterance in the slots of one
# boosting tree.
#   cli_server_test.sh <asrdec CLI> <examples/data> [--sanitized]
# (a separate ctest from cli_test.sh, so that each stays well inside ctest's time limit under the sanitizers).
set -euo pipefail
# shellcheck source=cli_test_setup.sh
source "$(dirname "$0")/cli_test_setup.sh"

# Endpointing in --chunk mode: the first chunk end at which a rule fires, checked against the rules applied here to
# the final tokens (greedy results are prefix-stable: the tokens before frame f are those of the result at f).
for model in ctc rnnt; do
  if [ "$model" = ctc ]; then inputs=(ctc-greedy --logprobs "$data/ctc/logprobs.npy"); else
    inputs=(rnnt --model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy"); fi
  "$asrdec" decode "${inputs[@]}" --lengths "$data/$model/lengths.npy" --device cpu --json --chunk 4 --endpoint \
    --endpoint-silence 0.4 --endpoint-max-length 3.2 >"$work/endpoint.jsonl" 2>"$work/endpoint_err.txt" \
    || { cat "$work/endpoint_err.txt"; fail "$model --endpoint"; }
  grep -q "^endpoints: [0-9]* of 40 utterances (rule 1: [0-9]*, rule 2: [0-9]*, rule 3: [0-9]*)" "$work/endpoint_err.txt" \
    || { cat "$work/endpoint_err.txt"; fail "$model endpoint summary"; }
  python3 - "$work/endpoint.jsonl" "$data/$model/lengths.npy" <<'PY' || fail "$model: endpoints differ from the rules"
import ast, json, struct, sys
raw = open(sys.argv[2], "rb").read()
size = struct.unpack("<H", raw[8:10])[0]
header = ast.literal_eval(raw[10:10 + size].decode("latin1"))
item = 8 if header["descr"] == "<i8" else 4
data = raw[10 + size:]
lengths = [int.from_bytes(data[i:i + item], "little", signed=True) for i in range(0, len(data), item)]
lines = [json.loads(l) for l in open(sys.argv[1])]
fired = {1: 0, 2: 0, 3: 0}
for line, length in zip(lines, lengths):
    want = None
    for f in list(range(4, length, 4)) + [length]:  # the chunk ends of the utterance
        ends = [t + 1 for t in line["timestamps"] if t < f]
        silence = f - (ends[-1] if ends else 0)
        rules = [(1, not ends and silence >= 30), (2, bool(ends) and silence >= 5), (3, f >= 40)]
        rule = next((r for r, hit in rules if hit), 0)
        if rule:
            want = {"rule": rule, "frame": f, "seconds": f * 0.08}
            break
    got = line["endpoint"]
    assert (got is None) == (want is None), (got, want)
    if want is not None:
        assert got["rule"] == want["rule"] and got["frame"] == want["frame"], (got, want)
        assert abs(got["seconds"] - want["seconds"]) < 1e-9
        fired[want["rule"]] += 1
assert fired[2] >= 1 and fired[3] >= 1, fired  # both rules reached on the samples
PY
done
if "$asrdec" decode ctc-greedy --logprobs "$data/ctc/logprobs.npy" --device cpu --endpoint >/dev/null 2>"$work/err18.txt"; then
  fail "--endpoint without --chunk accepted"
fi
grep -q -- "--endpoint requires --chunk" "$work/err18.txt" || { cat "$work/err18.txt"; fail "--endpoint message"; }
# Phrases per utterance (--boost-per-utterance, one tree of slots refilled between calls): the sample phrase list on
# every line decodes as --boost does, whole and in chunks; each utterance's own phrases (words of its reference)
# lower the WER; malformed files are refused with the line.
python3 - "$data/boost/phrases.txt" "$data" "$work" <<'PY'
import json, sys
phrases = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
for model in ("ctc", "rnnt"):
    refs = open(f"{sys.argv[2]}/{model}/refs.txt").read().splitlines()
    with open(f"{sys.argv[3]}/same_{model}.jsonl", "w") as out:
        for _ in refs:
            out.write(json.dumps(phrases) + "\n")
    with open(f"{sys.argv[3]}/own_{model}.jsonl", "w") as out:
        for ref in refs:
            words = ref.split()
            out.write(json.dumps([" ".join(words[i:i + 2]) for i in range(0, len(words), 2)][:4]) + "\n")
PY
for mode in "" "--chunk 5 --lanes 6"; do
  # shellcheck disable=SC2086  # $mode is words
  "$asrdec" decode rnnt "${rnnt[@]}" "${boost[@]}" --json --batch-size 7 $mode >"$work/fixed.jsonl" 2>/dev/null \
    || fail "rnnt --boost $mode"
  # shellcheck disable=SC2086
  "$asrdec" decode rnnt "${rnnt[@]}" --boost-per-utterance "$work/same_rnnt.jsonl" --bpe "$data/bpe.model" \
    --boost-weight 0.6 --json --batch-size 7 $mode >"$work/slots.jsonl" 2>"$work/slots_err.txt" \
    || { cat "$work/slots_err.txt"; fail "rnnt --boost-per-utterance $mode"; }
  cmp -s "$work/fixed.jsonl" "$work/slots.jsonl" || fail "--boost-per-utterance with one list differs from --boost ($mode)"
done
for model in ctc rnnt; do
  if [ "$model" = ctc ]; then inputs=(ctc-greedy --logprobs "$data/ctc/logprobs.npy"); else
    inputs=(rnnt --model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy"); fi
  common=(--lengths "$data/$model/lengths.npy" --vocab "$data/tokens.txt" --refs "$data/$model/refs.txt" --device cpu
    --show 0)
  "$asrdec" decode "${inputs[@]}" "${common[@]}" 2>"$work/plain.txt" >/dev/null || fail "plain $model"
  "$asrdec" decode "${inputs[@]}" "${common[@]}" --boost-per-utterance "$work/own_$model.jsonl" \
    --bpe "$data/bpe.model" --boost-weight 1.5 --chunk 9 2>"$work/own.txt" >/dev/null \
    || { cat "$work/own.txt"; fail "own phrases $model"; }
  python3 -c "import sys; sys.exit(0 if float('$(wer "$work/own.txt")') < float('$(wer "$work/plain.txt")') else 1)" \
    || fail "own phrases did not lower the WER of $model ($(wer "$work/plain.txt") -> $(wer "$work/own.txt"))"
done
head -3 "$work/own_rnnt.jsonl" >"$work/short.jsonl"
if "$asrdec" decode rnnt "${rnnt[@]}" --boost-per-utterance "$work/short.jsonl" --bpe "$data/bpe.model" \
  >/dev/null 2>"$work/err19.txt"; then fail "a phrases file of 3 lines accepted for 40 utterances"; fi
grep -q "has 3 lines, the input 40 utterances" "$work/err19.txt" || { cat "$work/err19.txt"; fail "line count message"; }
printf '["a"]\n{"b": 1}\n' >"$work/bad.jsonl"
if "$asrdec" decode rnnt "${rnnt[@]}" --boost-per-utterance "$work/bad.jsonl" --bpe "$data/bpe.model" \
  >/dev/null 2>"$work/err20.txt"; then fail "a phrases line that is not an array accepted"; fi
grep -q "bad.jsonl:2.*expected an array of phrases" "$work/err20.txt" || { cat "$work/err20.txt"; fail "bad line message"; }
echo "cli_server_test: all checks passed"

# Sourced by the CLI test scripts that take <asrdec CLI> <examples/data> [--sanitized]: their arguments, a work
# folder removed on exit, and the helpers and sample arguments they share.
# shellcheck disable=SC2034  # the arrays are the sourcing scripts'
asrdec="$1"
data="$2"
sanitized="${3:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
wer() { grep -o "^WER [0-9.]*" "$1" | cut -d' ' -f2; }
boost=(--boost "$data/boost/phrases.txt" --bpe "$data/bpe.model" --boost-weight 0.6)
rnnt=(--model "$data/rnnt/model.safetensors" --enc "$data/rnnt/enc_proj.npy" --lengths "$data/rnnt/lengths.npy"
  --vocab "$data/tokens.txt" --refs "$data/rnnt/refs.txt" --device cpu --show 0)
lm=(--lm "$data/lm/tokens_4gram.arpa.gz" --lm-weight 0.3)
# streamed NAME ARGS...: `asrdec decode ARGS` with --chunk N --lanes L (utterances join and leave the calls as a
# server's would) gives the JSON of the whole-batch run byte for byte.
streamed() {
  local name="$1"
  shift
  "$asrdec" decode "$@" --vocab "$data/tokens.txt" --device cpu --json >"$work/stream-whole.jsonl" 2>"$work/err.txt" \
    || { cat "$work/err.txt"; fail "$name"; }
  for lanes in "7 5" "1 40"; do
    read -r chunk width <<<"$lanes"
    "$asrdec" decode "$@" --vocab "$data/tokens.txt" --device cpu --json --chunk "$chunk" --lanes "$width" \
      >"$work/stream-chunks.jsonl" 2>"$work/err.txt" || { cat "$work/err.txt"; fail "$name --chunk $chunk"; }
    cmp -s "$work/stream-whole.jsonl" "$work/stream-chunks.jsonl" \
      || fail "$name: --chunk $chunk --lanes $width differs from the whole-batch JSON"
  done
}

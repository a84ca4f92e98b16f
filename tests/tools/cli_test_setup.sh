# Sourced by the CLI test scripts that take <asrdec CLI> <examples/data> [--sanitized]: their arguments, a work
# folder removed on exit, and the helpers and sample arguments they share.
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

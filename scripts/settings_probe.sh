#!/usr/bin/env bash
# Issue 36 part 2: does each setting made for a weak model still help a stronger one? `crossagentie` with the
# config's settings, then once per variant below, on one settings slice (docs/RESULTS.md, "Slices frozen for the
# 1.5B"). Each variant starts from a copy of the baseline's call cache, so it pays only for the calls it changes.
#   bash scripts/settings_probe.sh CONFIG SPLIT OFFSET LIMIT MODEL [VARIANT ...]
#   bash scripts/settings_probe.sh configs/conll04.yaml dev 80 20 qwen2.5-coder-1.5b written round1
# Then, per variant: python -m ie.score --gold GOLD --pred runs/settings-.../VARIANT/predictions.jsonl \
#   --baseline runs/settings-.../shipped/predictions.jsonl --config CONFIG   (the paired interval)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
usage="usage: bash scripts/settings_probe.sh CONFIG SPLIT OFFSET LIMIT MODEL [VARIANT ...]"
config=${1:?$usage}; split=${2:?$usage}; offset=${3:?$usage}; limit=${4:?$usage}; model=${5:?$usage}
shift 5

# variant -> the teacher flags it changes against the config's own settings
declare -A flags=(
  [written]="--summarizer generate"          # a written verdict from the agents' reasons (the paper's Summarizer)
  [round1]="--max-rounds 1"                  # one cross-type debate round before the Summarizer (the paper's)
  [written-round1]="--summarizer generate --max-rounds 1"
  [no-extent]="--extent-check-words 0"       # no name extent check
  [no-cross-task]="--cross-task-rounds 0"    # NER and RE without feedback
  [check]="--check-uncontested"              # the likelihood Summarizer also checks uncontested mentions
  [route-top3]="--routing on --route-by likelihood --route-top-k 3"  # only each sentence's 3 best-scored types' agents
  [route-answer]="--routing on --route-by answer --route-top-k 0"   # the types one generated answer names
  [route-menu]="--routing on --route-by menu"  # one lettered menu a kind, ranked by each letter's probability (the config's top k)
)
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(written round1 written-round1 no-extent)
for variant in "${variants[@]}"; do
  [ -n "${flags[$variant]:-}" ] || { echo "settings_probe.sh: no variant '$variant'; choose from ${!flags[*]}" >&2; exit 2; }
done

name=$(basename "$config" .yaml)
root="runs/settings-$name-$split$((offset + 1))-$model"
run() {  # run OUT [FLAGS...]
  local out=$1; shift
  "$PYTHON" -m teacher run --config "$config" --split "$split" --offset "$offset" --limit "$limit" \
    --method crossagentie --model "$model" --concurrency 2 --out "$out" "$@"
}
run "$root/shipped"
for variant in "${variants[@]}"; do
  mkdir -p "$root/$variant"
  [ -e "$root/$variant/calls.sqlite" ] || cp "$root/shipped/calls.sqlite" "$root/$variant/calls.sqlite"
  # shellcheck disable=SC2086  # the flags are words
  run "$root/$variant" ${flags[$variant]}
done

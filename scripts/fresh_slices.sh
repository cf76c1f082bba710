#!/usr/bin/env bash
# Issue 36 part 3: one bench per dataset on slices that chose no setting for either model, frozen on 2026-12-06
# before anything ran on them (docs/RESULTS.md, "Slices frozen for the 1.5B"). Fresh timings, the model's name in
# every output folder; run it alone on the machine (a bench beside anything else is several times slower).
#   bash scripts/fresh_slices.sh MODEL [DATASET ...]      e.g. qwen2.5-coder-1.5b conll04 scierc
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
model=${1:?usage: bash scripts/fresh_slices.sh MODEL [DATASET ...] (MODEL: a catalogue name, e.g. qwen2.5-coder-1.5b)}
shift
datasets=("$@")
[ ${#datasets[@]} -gt 0 ] || datasets=(conll04 conll2003 scierc semeval nyt)

# dataset -> "split offset limit methods"; none of these sentences chose a setting or was looked at before.
declare -A slice=(
  [conll04]="dev 100 30 direct,one-step,direct-re,crossagentie"
  [conll2003]="dev 100 30 direct,crossagentie"
  [scierc]="dev 100 20 direct,one-step,direct-re,crossagentie"
  [semeval]="test 0 20 direct,one-step,direct-re,crossagentie"
  [nyt]="dev 100 15 direct,one-step,direct-re,crossagentie"
)
for dataset in "${datasets[@]}"; do
  [ -n "${slice[$dataset]:-}" ] || { echo "fresh_slices.sh: no frozen slice for '$dataset'; choose from ${!slice[*]}" >&2; exit 2; }
  read -r split offset limit methods <<<"${slice[$dataset]}"
  "$PYTHON" -m serve.bench --config "configs/$dataset.yaml" --split "$split" --offset "$offset" --limit "$limit" \
    --methods "$methods" --model "$model" --concurrency 2 --fresh \
    --out "runs/fresh-$dataset-$split$((offset + 1))-$model"
done

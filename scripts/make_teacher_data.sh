#!/usr/bin/env bash
# Label data with the multi-agent teacher. --config (the dataset) is required; defaults: its train split, method
# crossagentie, the embedded offline llama.cpp server with the catalogue's default teacher (qwen2.5-coder-1.5b).
# Extra arguments pass through and override the defaults:
#   bash scripts/make_teacher_data.sh --config configs/conll04.yaml --limit 5 --out runs/demo
#   bash scripts/make_teacher_data.sh --config configs/scierc.yaml --split dev --endpoint http://host:8000/v1 --model-name M
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
if [[ " $* " != *" --config "* && " $* " != *" --config="* ]]; then
  echo "error: pass --config CONFIG, the dataset to label (e.g. --config configs/conll04.yaml)" >&2
  exit 2
fi
defaults=(--method crossagentie --out runs/teacher)
# --split and --input exclude each other: add the default only when neither is given.
[[ " $* " == *" --split "* || " $* " == *" --input "* ]] || defaults+=(--split train)
exec "$PYTHON" -m teacher run "${defaults[@]}" "$@"

#!/usr/bin/env bash
# Label data with the multi-agent teacher. --config (the dataset) is required; defaults: its train split, method
# crossagentie, the embedded offline llama.cpp server with qwen2.5-coder-0.5b. Extra arguments pass through and
# override the defaults:
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
# --split/--input and --model/--endpoint exclude each other: add a default only when neither is given.
[[ " $* " == *" --split "* || " $* " == *" --input "* ]] || defaults+=(--split train)
[[ " $* " == *" --model "* || " $* " == *" --endpoint "* ]] || defaults+=(--model qwen2.5-coder-0.5b)
exec "$PYTHON" -m teacher run "${defaults[@]}" "$@"

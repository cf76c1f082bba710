#!/usr/bin/env bash
# Label data with the multi-agent teacher. Defaults: CoNLL04 train split, method crossagentie, the embedded
# offline llama.cpp server with qwen2.5-coder-0.5b. Extra arguments pass through and override the defaults:
#   bash scripts/make_teacher_data.sh --limit 5 --out runs/demo
#   bash scripts/make_teacher_data.sh --split dev --method direct --endpoint http://host:8000/v1 --model-name M
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
defaults=(--config configs/conll04.yaml --method crossagentie --out runs/teacher)
# --split/--input and --model/--endpoint exclude each other: add a default only when neither is given.
[[ " $* " == *" --split "* || " $* " == *" --input "* ]] || defaults+=(--split train)
[[ " $* " == *" --model "* || " $* " == *" --endpoint "* ]] || defaults+=(--model qwen2.5-coder-0.5b)
exec "$PYTHON" -m teacher run "${defaults[@]}" "$@"

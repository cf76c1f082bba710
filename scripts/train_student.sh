#!/usr/bin/env bash
# Teacher labels -> distilled template examples -> LoRA student -> GGUF adapter, on CPU by default.
#   bash scripts/train_student.sh runs/teacher-train runs/student [extra train_student.py flags]
# Gold labels are never used: the student learns only from the teacher's predictions.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
teacher=${1:?teacher run folder (has predictions.jsonl)}
out=${2:-runs/student}
shift 2 || shift $#
"$PYTHON" -m distill --teacher "$teacher" --config configs/conll04.yaml --out "$out/data"
"$PYTHON" train_student.py --config configs/student.yaml --data "$out/data/dataset" --output_dir "$out" "$@"

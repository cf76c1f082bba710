#!/usr/bin/env bash
# Teacher labels -> distilled template examples -> LoRA student -> GGUF adapter, on CPU by default.
#   bash scripts/train_student.sh CONFIG TEACHER_RUN [OUT] [extra train_student.py flags]
#   bash scripts/train_student.sh configs/conll04.yaml runs/teacher-train runs/student --max_steps 3
# CONFIG is the dataset config the teacher ran with (its schema and distill: section). Gold labels are never
# used: the student learns only from the teacher's predictions.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
usage="usage: bash scripts/train_student.sh CONFIG TEACHER_RUN [OUT] [train_student.py flags]"
config=${1:?$usage (CONFIG: the dataset config, e.g. configs/conll04.yaml)}
teacher=${2:?$usage (TEACHER_RUN: the teacher run folder with predictions.jsonl)}
out=${3:-runs/student}
shift 3 || shift $#
"$PYTHON" -m distill --teacher "$teacher" --config "$config" --out "$out/data"
"$PYTHON" train_student.py --config configs/student.yaml --data "$out/data/dataset" --output_dir "$out" "$@"

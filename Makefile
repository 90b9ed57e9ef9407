# corpus_platform: every command sets itself up from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster
# The instance settings copied into DAGSTER_HOME: SQLite under .dagster/ by default;
# `DAGSTER_YAML=deploy/dagster-postgres.yaml make ui` for PostgreSQL (docs/scaling-out.md).
DAGSTER_YAML ?= dagster.yaml

BENCH_VENV := .bench-venv

.PHONY: install run ui test lint bench bench-large clean FORCE

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m corpus_platform.kernel_cache  # compiles the numba kernels into their cache
	touch $@

install: $(VENV)/.installed

# Copied again whenever it differs from DAGSTER_YAML, so switching variants takes effect.
$(DAGSTER_HOME)/dagster.yaml: $(DAGSTER_YAML) FORCE
	@mkdir -p $(DAGSTER_HOME)
	@cmp -s $(DAGSTER_YAML) $@ || { echo "cp $(DAGSTER_YAML) $@"; cp $(DAGSTER_YAML) $@; }

FORCE:

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

## bench: a separate venv with the peers (datatrove, rensa); the whole graph on 10,000 and
## 100,000 generated web-like documents (bench/webcorpus.py), the dedup comparison on 100,000
## against the fastest peers (rensa, datasketch), reading training shards with the project's loader,
## WebDataset and mosaicml-streaming on 50,000; where the CPU time of the whole graph at 100,000
## goes (py-spy samples by category, bench/cpu_profile.py); language identification on one core
## against real translated man pages (bench/langid_benchmark.py); what an append of 10,000 documents
## costs against a base of 100,000 up to split_documents, and its dedup F1 against a build from scratch
## (bench/append_benchmark.py; projects under /work/tmp/append-bench); writes BENCHMARKS.md. bench-large: the whole
## graph on 100,000 and 1,000,000 documents with language identification off, on the local and
## the dask-local engine, and with fastText language identification on local (their own sections;
## 1,000,000 documents need over 60 GB of disk). The slow dedup peers run on request:
## `bench/dedup_benchmark.py --peers datatrove,text-dedup` (about 150 docs/s for datatrove on
## these documents; text-dedup needs `make .bench-venv-textdedup/.installed PYTHON312=...`).
# tokenizers: datatrove.pipeline.dedup's __init__ imports it (MinHash itself never uses it).
# rensa: a dedup peer (bench/peers/rensa_minhash.py); datasketch, the other, is a project dependency.
# mosaicml-streaming: a loader peer (bench/loader_benchmark.py; webdataset, the other, is a project
# dependency). --no-deps: it requires torch, torchvision, transformers, numpy<2.2 and xxhash<4,
# which conflict with the project's pins, and PyPI's Linux torch is the CUDA build; the second
# line adds only what its reading path imports, and bench/peers/streaming_peer.py stands in for
# torch's import surface.
$(BENCH_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -e . datatrove==0.10.1 regex==2026.11.15 spacy==3.8.18 \
		tokenizers==0.23.3 rensa==0.5.0 py-spy==0.4.3 py3langid==0.4.0 pycld2==0.42
	$(BENCH_VENV)/bin/python -m pip install -q --no-deps mosaicml-streaming==0.13.0 brotli==1.2.1 \
		python-snappy==0.7.3 cramjam==2.14.0 zstd==1.5.7.2 catalogue==2.0.10
	touch $@

# bench/peers/text_dedup_minhash.py: text-dedup 0.4.1 requires Python >= 3.12 (python3 here is
# 3.11; the machine's pyenv has 3.12.1), so it gets its own venv, without the project.
TEXTDEDUP_VENV := .bench-venv-textdedup
PYTHON312 ?= $(shell PYENV_VERSION=3.12.1 pyenv which python3.12 2>/dev/null || command -v python3.12)
TEXTDEDUP_PINS := text-dedup==0.4.1 datasets==5.2.0 numpy==2.5.5 pyarrow==26.0.1 pandas==3.1.1 \
	polars==1.44.2 polars-runtime-32==1.44.2 polars-grouper==0.6.1 scipy==1.18.1 \
	pydantic==2.14.3 pydantic-settings==2.16.3 xxhash==4.1.0 regex==2026.11.15 bitarray==3.12.3 \
	rbloom==1.5.4 ftfy==6.3.1 psutil==7.2.2 rich==15.0.0 tqdm==4.70.1 huggingface_hub==2.4.0 \
	fsspec==2026.9.0 multiprocess==0.70.19 dill==0.4.1

$(TEXTDEDUP_VENV)/.installed:
	@test -n "$(PYTHON312)" || { echo "text-dedup 0.4.1 needs python3.12: set PYTHON312=" >&2; exit 1; }
	$(PYTHON312) -m venv $(TEXTDEDUP_VENV)
	$(TEXTDEDUP_VENV)/bin/python -m pip install -q --upgrade pip
	$(TEXTDEDUP_VENV)/bin/python -m pip install -q $(TEXTDEDUP_PINS)
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 10000,100000 --workers 2 --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000 --workers 2 --no-language --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000 --workers 2 --language-backend fasttext --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000 --workers 2 --no-language \
		--engine dask-local --gzip --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/dedup_benchmark.py --docs 100000 --workers 2 --peers rensa,datasketch \
		--memory-scale 2 --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/loader_benchmark.py --docs 50000 --workers 2 --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/cpu_profile.py --docs 100000 --workers 2 --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/langid_benchmark.py --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/append_benchmark.py --docs 100000 --append 10000 --out BENCHMARKS.md

bench-large: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000,1000000 --workers 2 --large --no-language \
		--gzip --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000,1000000 --workers 2 --large \
		--language-backend fasttext --gzip --out BENCHMARKS.md
	$(BENCH_VENV)/bin/python bench/run_benchmarks.py --docs 100000,1000000 --workers 2 --large --no-language \
		--engine dask-local --gzip --out BENCHMARKS.md

lint: install
	$(BIN)/ruff check corpus_platform tests bench
	$(BIN)/ruff format --check corpus_platform tests

clean:
	rm -rf data .dagster .dvc-storage .scratch .corpus .bench .dvc/cache .dvc/tmp

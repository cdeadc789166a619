# The two entry points of the README: `make demo` and `make test`.
# Each creates its own virtual environment in .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export KERAS_BACKEND := tensorflow
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: demo test test-jax test-torch lint install install-torch docs

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,jax]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/python examples/translation/train.py --overwrite=true  # replaces only an earlier demo run

test: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -q

# The backend-neutral tests on JAX and torch (README: Backends): layers and
# blocks, models, generation and decoding, the light core. `tf_only` tests
# skip there, and `slow_on(...)` tests skip on the backends they name (the
# markers carry the reasons; tests/conftest.py).
BACKEND_TESTS := tests/layers tests/models tests/decoding tests/light_core_test.py
# keras-hub's and Keras' own layer tests on the compat classes: TensorFlow and JAX.
COMPAT_TESTS := tests/compat

test-jax: install
	KERAS_BACKEND=jax $(BIN)/python -m pytest $(BACKEND_TESTS) $(COMPAT_TESTS) -n 2 --dist loadfile -q

# On torch the tests run eagerly: the harness has no torch compiler
# (`torch.compile` would build C++ kernels at test time), `fit` runs with
# Keras' torch default, jit_compile off, and generation under no_grad. One
# intra-op thread per worker: two made small einsums ~200x slower on 2 cores.
# torch comes from PyPI (the `torch` extra); its Linux wheel brings CUDA
# libraries (about 5 GB installed) and runs on the CPU.
$(BIN)/.installed-torch: pyproject.toml $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[torch]'
	touch $@

install-torch: $(BIN)/.installed-torch

test-torch: install-torch
	KERAS_BACKEND=torch OMP_NUM_THREADS=1 $(BIN)/python -m pytest $(BACKEND_TESTS) -n 2 --dist loadfile -q

docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

# Lint and import order (ruff, configured in pyproject.toml).
lint: install
	$(BIN)/ruff check .

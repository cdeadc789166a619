# The two entry points of the README: `make demo` and `make test`.
# Each creates its own virtual environment in .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export KERAS_BACKEND := tensorflow
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: demo test test-jax test-torch install install-torch docs

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,jax]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/python examples/translation/train.py

test: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -q

# The layer and block tests on JAX (README: Backends); `tf_only` tests skip.
# Left out for time: query_blocking_test (it passes on JAX, 2+ minutes; the
# torch job runs it, and its blocked paths are keras.ops), three run_layer_test variants and six of the eight layers of one property
# test, whose paths other JAX tests cover.
JAX_SKIP := --ignore=tests/layers/query_blocking_test.py \
	--deselect 'tests/layers/transformer_decoder_block_test.py::test_layer_behaviors[pre_norm]' \
	--deselect 'tests/layers/transformer_encoder_block_test.py::test_layer_behaviors[mqa_rotary]' \
	--deselect 'tests/layers/attention_rnn_decoder_test.py::test_layer_behaviors[luong_general_lstm]' \
	-k 'not test_weights_are_a_distribution_over_unmasked_keys or grouped_query or bahdanau_normalized'

test-jax: install
	KERAS_BACKEND=jax $(BIN)/python -m pytest tests/layers $(JAX_SKIP) -n 2 --dist loadfile -q

# The layer and block tests on torch (README: Backends), eagerly: the
# harness has no torch compiler (`torch.compile` would build C++ kernels at
# test time) and `fit` runs with Keras' torch default, jit_compile off.
# `tf_only` tests skip. torch comes from PyPI (the `torch` extra); its Linux
# wheel brings CUDA libraries (about 5 GB installed) and runs on the CPU.
$(BIN)/.installed-torch: pyproject.toml $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[torch]'
	touch $@

install-torch: $(BIN)/.installed-torch

test-torch: install-torch
	KERAS_BACKEND=torch $(BIN)/python -m pytest tests/layers -n 2 --dist loadfile -q

docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

# The two entry points of the README: `make demo` and `make test`.
# Each creates its own virtual environment in .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export KERAS_BACKEND := tensorflow
export TF_CPP_MIN_LOG_LEVEL := 3

.PHONY: demo test install docs

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/python examples/translation/train.py

test: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -q

docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

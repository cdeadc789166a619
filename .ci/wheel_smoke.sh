#!/usr/bin/env bash
# The wheel works without a checkout: build it, install it (with its
# dependencies, from the package index) into a fresh virtual environment in a
# temporary folder, then, from a folder with no checkout, train the quick
# translation recipe with `keras-attention train` and translate with the run
# it saved (`keras-attention generate`). About 3-6 minutes, most of it pip.
#
# PYTHON picks the interpreter (default: python3.11, else python3); extra
# pip options (e.g. `--find-links DIR` to reuse downloaded wheels) go in
# PIP_OPTIONS. Set KEEP_WHEEL_SMOKE=1 to keep the temporary folder.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/wheel_smoke.XXXXXX")"
if [[ -z "${KEEP_WHEEL_SMOKE:-}" ]]; then
  trap 'rm -rf "$WORK"' EXIT
fi
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=3
started=$SECONDS
step() { echo "wheel_smoke: [$((SECONDS - started)) s] $*"; }
fail() { echo "wheel_smoke: FAILED: $*" >&2; exit 1; }

# 1. Build the wheel from a copy of the sources, so that the build leaves
#    nothing (build/, *.egg-info) in the checkout.
step "building the wheel"
mkdir "$WORK/src"
cp -R "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/keras_attention" "$WORK/src/"
[[ -f "$ROOT/LICENSE" ]] && cp "$ROOT/LICENSE" "$WORK/src/"
"$PYTHON" -m pip wheel --quiet --no-deps -w "$WORK/dist" "$WORK/src"
wheel=("$WORK"/dist/keras_attention_kit-*.whl)
[[ -f "${wheel[0]}" ]] || fail "no wheel in $WORK/dist"
"$PYTHON" - "${wheel[0]}" <<'PY' || fail "the wheel does not ship the recipes"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for recipe in ("translation", "summarization", "question_answering"):
    assert f"keras_attention/recipes/{recipe}/train.py" in names, recipe
PY

# 2. A fresh environment outside the checkout: no system site-packages.
step "installing $(basename "${wheel[0]}") into a fresh virtual environment"
"$PYTHON" -m venv "$WORK/venv"
VENV="$WORK/venv/bin"
# shellcheck disable=SC2086  # PIP_OPTIONS is a list of options
"$VENV/pip" install --quiet ${PIP_OPTIONS:-} "${wheel[0]}"

# 3. From a folder that holds no checkout.
mkdir "$WORK/elsewhere"
cd "$WORK/elsewhere"
location="$("$VENV/python" -c 'import keras_attention; print(keras_attention.__file__)' \
  2>/dev/null)"
[[ "$location" == "$WORK/venv/"* ]] || fail "keras_attention comes from $location, not the venv"

step "keras-attention train translation --preset=quick"
"$VENV/keras-attention" train translation --preset=quick --output_dir=run > train.log 2>&1 \
  || { tail -n 30 train.log >&2; fail "training the quick translation recipe"; }
for name in model.keras source.spm target.spm config.json; do
  [[ -f "run/$name" ]] || fail "run/$name is missing"
done
grep -q "Test BLEU" train.log || fail "the recipe printed no test score"

step "keras-attention generate run"
printf 'March 3, 2021\nthe 1st of may, 1999\n' | "$VENV/keras-attention" generate run \
  > translations.txt 2> generate.log || { tail -n 30 generate.log >&2; fail "generate"; }
[[ "$(wc -l < translations.txt)" -eq 2 ]] || fail "expected 2 lines, got: $(cat translations.txt)"
grep -q '[0-9]' translations.txt || fail "no digit in the translations: $(cat translations.txt)"
echo "wheel_smoke: translations: $(paste -sd '|' translations.txt)"

step "a second run into the same folder is refused, and the run is kept"
before="$(cksum run/model.keras)"
if "$VENV/keras-attention" train translation --preset=quick --output_dir=run > again.log 2>&1
then
  fail "a second run replaced run/ without --overwrite"
fi
[[ "$(cksum run/model.keras)" == "$before" ]] || fail "the refused run changed run/model.keras"
grep -q "output_dir" again.log || fail "the refusal does not name output_dir: $(tail -n 3 again.log)"
echo "wheel_smoke: refused: $(tail -n 1 again.log)"

step "passed"

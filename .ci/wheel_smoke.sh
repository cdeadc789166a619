#!/usr/bin/env bash
# The wheel works without a checkout: build it, install it into a fresh
# virtual environment in a temporary folder, then, from a folder with no
# checkout, train the quick translation recipe with `keras-attention train`,
# translate with the run it saved (`keras-attention generate`) and serve it
# (`keras-attention serve`: one request, then SIGTERM).
#
# Where the checkout has its .venv (CI: `make install` made it), the fresh
# environment reuses the dependencies installed there: it sees .venv's
# site-packages through a .pth file (never its editable install of this
# checkout: that .pth is not read), the wheel goes in with --no-deps
# --no-index, and `pip check` proves that what the wheel requires is
# installed. About 1-2 minutes, most of it the training. WHEEL_SMOKE_DEPS=
# index installs the dependencies from the package index instead (3-6
# minutes, most of it pip; extra pip options, e.g. `--find-links DIR`, go in
# PIP_OPTIONS), as it does when there is no .venv.
#
# PYTHON picks the interpreter (default: .venv's, else python3.11, else
# python3). Set KEEP_WHEEL_SMOKE=1 to keep the temporary folder.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REUSED="${WHEEL_SMOKE_VENV:-$ROOT/.venv}"  # the environment whose packages are reused
if [[ "${WHEEL_SMOKE_DEPS:-reuse}" == "index" || ! -x "$REUSED/bin/python" ]]; then
  REUSED=""
fi
PYTHON="${PYTHON:-${REUSED:+$REUSED/bin/python}}"
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
cp -R "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/keras_attention" \
  "$ROOT/keras_attention_launcher.py" "$WORK/src/"  # the package and the command's entry point
[[ -f "$ROOT/LICENSE" ]] && cp "$ROOT/LICENSE" "$WORK/src/"
build_options=()
if [[ -n "$REUSED" ]] && "$PYTHON" -c 'import setuptools, sys
sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' 2> /dev/null; then
  build_options=(--no-build-isolation)  # .venv's setuptools, not one from the index
fi
"$PYTHON" -m pip wheel --quiet --no-deps "${build_options[@]}" -w "$WORK/dist" "$WORK/src"
wheel=("$WORK"/dist/keras_attention_kit-*.whl)
[[ -f "${wheel[0]}" ]] || fail "no wheel in $WORK/dist"
"$PYTHON" - "${wheel[0]}" <<'PY' || fail "the wheel does not ship the recipes and the entry point"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for recipe in ("translation", "summarization", "question_answering"):
    assert f"keras_attention/recipes/{recipe}/train.py" in names, recipe
assert "keras_attention_launcher.py" in names, "keras_attention_launcher.py"
PY

# 2. A fresh environment outside the checkout: no system site-packages, and
#    of .venv only its packages (see above), never the checkout's sources.
step "installing $(basename "${wheel[0]}") into a fresh virtual environment"
VENV="$WORK/venv/bin"
if [[ -n "$REUSED" ]]; then
  # No pip of its own (its setuptools would shadow .venv's): .venv's pip
  # installs into it. The reused packages come after the venv's own, so the
  # wheel's keras_attention and its entry point are found first.
  "$PYTHON" -m venv --without-pip "$WORK/venv"
  site="$("$VENV/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$REUSED/bin/python" -c 'import sysconfig
paths = sysconfig.get_paths()
print("\n".join(dict.fromkeys([paths["purelib"], paths["platlib"]])))' \
    > "$site/reused_dependencies.pth"
  pip=("$REUSED/bin/python" -m pip --python "$VENV/python")
  "${pip[@]}" install --quiet --no-deps --no-index "${wheel[0]}"
  # Only the wheel's own requirements count: CI runs this while pip installs
  # the extras (torch, transformers) into $REUSED, whose other packages may
  # be half-installed meanwhile.
  "${pip[@]}" check > "$WORK/pip_check.log" 2>&1 || true
  if grep -qi '^keras-attention-kit ' "$WORK/pip_check.log"; then
    cat "$WORK/pip_check.log" >&2
    fail "the wheel's requirements are not met by $REUSED"
  fi
else
  "$PYTHON" -m venv "$WORK/venv"
  # shellcheck disable=SC2086  # PIP_OPTIONS is a list of options
  "$VENV/pip" install --quiet ${PIP_OPTIONS:-} "${wheel[0]}"
fi

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
export KERAS_ATTENTION_CACHE_DIR="$WORK/compiled"  # not the user's ~/.cache
printf 'March 3, 2021\nthe 1st of may, 1999\n' | "$VENV/keras-attention" generate run \
  > translations.txt 2> generate.log || { tail -n 30 generate.log >&2; fail "generate"; }
[[ "$(wc -l < translations.txt)" -eq 2 ]] || fail "expected 2 lines, got: $(cat translations.txt)"
grep -q '[0-9]' translations.txt || fail "no digit in the translations: $(cat translations.txt)"
echo "wheel_smoke: translations: $(paste -sd '|' translations.txt)"

# With no backend chosen, generate runs on JAX where it is installed
# (keras_attention_launcher, the command's entry point; TensorFlow above, by KERAS_BACKEND): the
# same answer, and the second call reads the compiled search that the first
# kept (runtime.cache_compilations, on JAX). One sentence,
# only the answer on stdout and nothing on stderr (no C++ log lines).
begun=$SECONDS
for call in first second; do
  echo 'March 3, 2021' | env -u KERAS_BACKEND KERAS_HOME="$WORK/keras_home" \
    "$VENV/keras-attention" generate run > one.txt 2> one.log \
    || { tail -n 30 one.log >&2; fail "generate one sentence"; }
  [[ "$call" == first ]] && begun=$SECONDS
done
[[ "$(cat one.txt)" == "$(head -n 1 translations.txt)" ]] \
  || fail "one sentence gave $(cat one.txt), in a batch $(head -n 1 translations.txt)"
[[ ! -s one.log ]] || fail "generate wrote to stderr: $(head -n 5 one.log)"
if "$VENV/python" -c 'import jax' 2> /dev/null; then
  [[ -n "$(ls -A "$WORK/compiled/jax" 2> /dev/null)" ]] \
    || fail "generate with no backend chosen did not run on JAX (nothing in compiled/jax)"
fi
echo "wheel_smoke: one sentence again, compiled program read: $((SECONDS - begun)) s"

step "keras-attention serve run: TensorFlow Serving's protocol, then a drain on SIGTERM"
env -u KERAS_BACKEND KERAS_HOME="$WORK/keras_home" "$VENV/keras-attention" serve run \
  --port 0 --max_batch_size 2 > serve.out 2> serve.log &
server=$!
for _ in $(seq 600); do  # up to 5 minutes: loading and compiling every batch shape
  grep -q '^serving ' serve.log 2> /dev/null && break
  kill -0 "$server" 2> /dev/null || break
  sleep 0.5
done
url="$(sed -n 's/^serving run at //p' serve.log)"
[[ -n "$url" ]] || { kill "$server" 2> /dev/null; fail "serve never got ready: $(tail -n 5 serve.log)"; }
answer="$("$VENV/python" - "$url" <<'PY'
import json, sys, urllib.request
body = json.dumps({"instances": ["March 3, 2021"]}).encode()
with urllib.request.urlopen(f"{sys.argv[1]}/v1/models/run:predict", data=body) as response:
    print(json.loads(response.read())["predictions"][0])
PY
)" || { kill "$server"; fail "the predict request failed"; }
kill -TERM "$server"
wait "$server" || fail "serve exited with status $? after SIGTERM, not 0"
[[ "$answer" == "$(head -n 1 translations.txt)" ]] \
  || fail "serve answered $answer, generate $(head -n 1 translations.txt)"
[[ "$(wc -l < serve.log)" -eq 1 && ! -s serve.out ]] \
  || fail "serve wrote more than its ready line: $(head -n 5 serve.log serve.out)"
echo "wheel_smoke: served: $answer ($(cat serve.log))"

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

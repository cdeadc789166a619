"""The documentation site builds strictly, and its API pages document every public name."""

import html
import importlib
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import keras_attention

ROOT = pathlib.Path(__file__).resolve().parents[1]
PUBLIC_MODULES = [name for name in keras_attention.__all__ if name != "__version__"]

pytest.importorskip(
    "mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]' installs the docs tools)"
)
pytest.importorskip(
    "mkdocstrings_handlers.python",
    reason="mkdocstrings[python] is not installed (pip install -e '.[dev]' installs it)",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, (
        "`mkdocs build --strict` failed (every warning is an error):\n" + result.stderr[-6000:]
    )
    return site_dir


def _html(site, path):
    return (site / path / "index.html").read_text(encoding="utf-8")


def _page(site, path):
    """The text of a built page, without its tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", _html(site, path)))


def test_site_builds_strictly_with_every_page(site):
    for page in ["", "concepts/fully_masked_rows", "concepts/caches", "recipes/translation",
                 "recipes/results", "comparison", "benchmarks", "contributing"]:
        assert (site / page / "index.html").exists(), page
    assert "MemN2N" in _page(site, "recipes/results")  # examples/RESULTS.md is included
    assert "ours_greedy" in _page(site, "benchmarks")  # bench/RESULTS.md is included
    for image in re.findall(r"\(\.\./images/([\w.]+)\)",
                            (ROOT / "docs/recipes/translation.md").read_text()):
        assert (site / "images" / image).exists(), image


def test_every_public_module_has_an_api_page_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for module in PUBLIC_MODULES:
        page = ROOT / "docs" / "api" / f"{module}.md"
        assert page.exists(), f"no API page for keras_attention.{module}: add {page}"
        assert f"::: keras_attention.{module}" in page.read_text()
        assert f"api/{module}.md" in nav


def _public_classes_and_functions(module):
    """`__all__`'s classes and functions, or the module's own public ones without `__all__`."""
    names = getattr(module, "__all__", None) or [
        name for name, obj in vars(module).items()
        if not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__
    ]
    return [name for name in names
            if inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name))]


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_api_page_documents_every_public_class_and_function(site, module):
    page = _html(site, f"api/{module}")
    public = importlib.import_module(f"keras_attention.{module}")
    anchors = set(re.findall(r'id="(keras_attention\.[\w.]+)"', page))
    names = _public_classes_and_functions(public)
    assert names
    missing = [
        name for name in names
        if not any(a == f"keras_attention.{module}.{name}" or a.endswith(f".{name}.{name}")
                    for a in anchors)
    ]
    assert not missing, (
        f"docs/api/{module}.md has no entry for {missing}. A name that is also the name of its "
        "submodule is hidden by it: document it by its full path (see docs/contributing.md)."
    )


def test_api_pages_show_equations_signatures_and_examples(site):
    layers = _page(site, "api/layers")
    assert "v . tanh(W s_t + U h_s)" in layers  # BahdanauAttention's equations
    assert "num_key_value_heads" in layers
    assert ">>> layer = BahdanauAttention(units=16)" in layers  # the doctest, as code
    assert "causal_mask" in _page(site, "api/masks")
    models = _page(site, "api/models")
    assert "transformer_seq2seq" in models and "length_penalty" in models
    assert "fast_defaults" in _page(site, "api/runtime")

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
from keras_attention.runs import registry

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


# The pages a new user follows from install to a served translator.
WORKFLOW_PAGES = ["index.md", "recipes/translation.md", "guides/export.md"]


def _shell_commands(page):
    """The `keras-attention ...` commands of a page's ```bash blocks, in order, as argv lists
    (continuation lines and multi-line quotes joined, comments and pipes into the command
    dropped)."""
    import shlex

    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending += line
            try:
                argv = shlex.split(pending, comments=True)
            except ValueError:  # a quote that goes on over the next line
                pending += "\n"
                continue
            pending = ""
            while "|" in argv:  # `echo ... | keras-attention generate RUN`
                argv = argv[argv.index("|") + 1:]
            if argv[:1] == ["keras-attention"]:
                commands.append(argv[1:])
    return commands


def _recipe_config_module(recipe):
    return importlib.import_module(f"keras_attention.recipes.{recipe}.config")


@pytest.mark.parametrize("page", WORKFLOW_PAGES)
def test_workflow_commands_are_valid_and_use_runs_the_page_trains(page, monkeypatch):
    from keras_attention import cli

    calls = []
    for name in ("generate", "evaluate", "export", "serve"):
        monkeypatch.setattr(cli, name, lambda args, name=name: calls.append((name, args)))
    trained = set()
    commands = _shell_commands(page)
    assert commands, f"docs/{page} shows no keras-attention command"
    for argv in commands:
        if argv[0] == "--help":
            continue
        if argv[0] == "train":
            recipe, overrides = argv[1], dict(
                arg[2:].partition("=")[::2] for arg in argv[2:] if arg.startswith("--"))
            assert recipe in registry.recipe_names(), argv
            config = _recipe_config_module(recipe)
            known = set(config.get_config()) | {"preset", "help"}
            assert set(overrides) <= known, f"docs/{page}: unknown setting in {argv}"
            preset = overrides.get("preset", "default")
            assert preset == "default" or hasattr(config, f"get_{preset}_config"), argv
            if "help" not in overrides:
                trained.add(overrides.get("output_dir", f"runs/{recipe}"))
            continue
        calls.clear()
        cli.main(argv)  # parses the options; the command itself is stubbed
        assert [name for name, _ in calls] == [argv[0]], argv
        run_dir = calls[0][1].run_dir
        assert run_dir in trained, (
            f"docs/{page}: `keras-attention {' '.join(argv)}` uses {run_dir}, which no earlier "
            f"`keras-attention train` command of the page saves (they save {sorted(trained)})")


def test_workflow_evaluates_generates_and_exports_a_run_that_needs_no_data_file():
    """A reader without a data file can do every step on the built-in dates run."""
    commands = _shell_commands("index.md")
    no_data = {
        dict(arg[2:].partition("=")[::2] for arg in argv if arg.startswith("--")).get(
            "output_dir", "runs/translation")
        for argv in commands
        if argv[:2] == ["train", "translation"]
        and not any(arg.startswith(("--data", "--preset=eng_deu")) for arg in argv)
    }
    assert no_data
    for step in ("evaluate", "generate", "export", "serve"):
        assert any(argv[0] == step and argv[1] in no_data for argv in commands), (
            f"docs/index.md: no `keras-attention {step}` on a run of built-in data {no_data}")


def test_export_guide_exports_from_python_to_a_folder_the_commands_left_free():
    text = (ROOT / "docs" / "guides" / "export.md").read_text(encoding="utf-8")
    cli_dirs = {argv[2] for argv in _shell_commands("guides/export.md") if argv[0] == "export"}
    python_dirs = set(re.findall(r'export_run\("[^"]+", "([^"]+)"', text))
    assert python_dirs and not python_dirs & cli_dirs  # EXPORT_DIR must be new or empty

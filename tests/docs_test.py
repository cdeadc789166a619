"""Executable documentation: docstring examples, the README quickstart and the docs pages."""

import doctest
import importlib
import pathlib
import re

import pytest

import keras_attention

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _modules_with_doctests():
    """Every module of the package whose source holds a doctest (`>>>`)."""
    package = ROOT / "keras_attention"
    names = []
    for path in sorted(package.rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            parts = ("keras_attention",) + path.relative_to(package).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_doctests()


def test_doctests_are_found():
    assert {"keras_attention.masks", "keras_attention.metrics", "keras_attention.visualize",
            "keras_attention.layers.multi_head_attention"} <= set(MODULES)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.parametrize("name", keras_attention.layers.__all__)
def test_every_public_layer_documents_equations_shapes_and_example(name):
    doc = getattr(keras_attention.layers, name).__doc__
    assert "Example" in doc or name == "BaseAttention"
    assert re.search(r"\(B, [A-Za-z]", doc), "no shape named from the batch axis"


def test_public_api_has_one_path_per_name():
    assert keras_attention.__all__ == [
        "__version__", "callbacks", "data", "decoding", "distribute", "export", "layers",
        "losses", "masks", "metrics", "models", "pretrained", "runs", "runtime", "schedules",
        "server", "visualize",
    ]
    assert re.fullmatch(r"\d+\.\d+\.\d+", keras_attention.__version__)
    for name in keras_attention.layers.__all__:
        module = getattr(keras_attention.layers, name).__module__
        assert module.startswith("keras_attention.layers.")


def test_readme_opens_with_two_commands_and_its_quickstart_runs():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(\w*)\n(.*?)```", readme, re.S)
    assert blocks[0][0] == "bash"
    commands = [line for line in blocks[0][1].splitlines() if line.strip()]
    assert len(commands) == 2 and "make demo" in commands[0] and "make test" in commands[1]
    python_blocks = [code for lang, code in blocks if lang == "python"]
    assert python_blocks, "README has no Python quickstart"
    exec(compile(python_blocks[0], "README.md", "exec"), {})


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


DOCS = ROOT / "docs"
SKIP = re.compile(r"^<!--\s*skip\b(.*?)-->\s*$")


def page_python_blocks(text):
    """`(index, code, skip_reason)` for each top-level ```python block of a Markdown page,
    `index` being the 0-based number of the block's first code line.

    A block is skipped when the line right above its fence is `<!-- skip: reason -->`; fences
    nested in a longer fence (````markdown ... ````) are text, not blocks.
    """
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^(`{3,})\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        ticks, info, start = fence.group(1), fence.group(2), i
        i += 1
        while i < len(lines) and not re.match(rf"^{ticks}`*\s*$", lines[i]):
            i += 1
        if info == "python":
            above = lines[start - 1].strip() if start else ""
            skip = SKIP.match(above)
            reason = skip and skip.group(1).strip(" :")
            if skip and not reason:
                raise ValueError(f"line {start}: `<!-- skip -->` needs a reason: "
                                 "`<!-- skip: why this block does not run -->`")
            blocks.append((start + 1, "\n".join(lines[start + 1:i]), reason or None))
        i += 1
    return blocks


def test_page_python_blocks_are_found_and_skips_need_a_reason():
    page = "<!-- skip: slow -->\n```python\nslow()\n```\n````markdown\n```python\nx\n```\n````\n"
    page += "```python\ny = 1\n```\n```bash\nls\n```\n"
    assert page_python_blocks(page) == [(2, "slow()", "slow"), (10, "y = 1", None)]
    with pytest.raises(ValueError, match="needs a reason"):
        page_python_blocks("<!-- skip -->\n```python\nx\n```\n")


DOC_PAGES = sorted(
    p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
    if page_python_blocks(p.read_text(encoding="utf-8"))
)


@pytest.mark.large
@pytest.mark.parametrize("page", DOC_PAGES)
def test_docs_page_python_blocks_run(page, monkeypatch):
    blocks = page_python_blocks((DOCS / page).read_text(encoding="utf-8"))
    runnable = [(line, code) for line, code, skip in blocks if skip is None]
    if not runnable:
        pytest.skip(f"every Python block of docs/{page} is marked <!-- skip: ... -->")
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": f"docs_{page}"}
    for line, code in runnable:
        # Pad with newlines so tracebacks point at the page's own line numbers.
        exec(compile("\n" * line + code, f"docs/{page}", "exec"), namespace)

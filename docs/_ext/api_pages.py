"""A MkDocs hook for the API pages: documents functions that share their submodule's name.

`keras_attention.models.transformer_seq2seq` is a function (re-exported by the package) and a
submodule; reading the source statically, mkdocstrings sees the submodule and leaves the function
out of `::: keras_attention.models`. For each name in a package's `__all__` that is also a
submodule of that package, this hook appends `::: keras_attention.<package>.<name>.<name>` to
the package's page `api/<package>.md`.
"""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _exported_names(init_file):
    for statement in ast.parse(init_file.read_text(encoding="utf-8")).body:
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets)
        ):
            return ast.literal_eval(statement.value)
    return []


def shadowed_names(package):
    """Names of `keras_attention.<package>.__all__` that are also its submodules."""
    folder = ROOT / "keras_attention" / package
    init_file = folder / "__init__.py"
    if not init_file.exists():
        return []
    return [name for name in _exported_names(init_file) if (folder / f"{name}.py").exists()]


def on_page_markdown(markdown, page, **kwargs):
    match = re.fullmatch(r"api/(\w+)\.md", page.file.src_uri)
    if not match:
        return markdown
    package = match.group(1)
    for name in shadowed_names(package):
        markdown += (
            f"\n\n::: keras_attention.{package}.{name}.{name}\n"
            "    options:\n"
            "      show_root_heading: true\n"
            "      show_root_full_path: false\n"
        )
    return markdown

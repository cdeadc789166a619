"""The first-level parts of keras_attention import one way.

core (layers, masks, models, decoding, ...) <- pretrained <- runs <- {recipes,
export, server} <- cli: every import statement of the package counts, also those
inside functions (imports on use), and no module names another's functions as
`"keras_attention.module:function"` strings for a registry to import later.
"""

import ast
import collections
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keras_attention"
# The toolkit's parts, lowest first; a part may import those before it and
# any core part (everything not named here), never one after it.
TOOLKIT = ("pretrained", "runs", "recipes", "export", "server", "cli")
RANK = {"pretrained": 1, "runs": 2, "recipes": 3, "export": 3, "server": 3, "cli": 4}

pytestmark = pytest.mark.backend_independent("reads the sources")


def _part(module):
    """`"runs"` for `keras_attention.runs.saved_run`; `None` for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "keras_attention" else None


def _imported_modules(path, module):
    """The modules each import statement of `path` names, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from keras_attention import runs` names the part `runs`.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def part_imports():
    """`{(importer part, imported part): [file, ...]}` over the whole package."""
    edges = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        module = ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)
        importer = _part(module)
        for name in _imported_modules(path, module):
            imported = _part(name)
            if importer and imported and imported != importer:
                edges[(importer, imported)].append(str(path.relative_to(ROOT)))
    return edges


def _cycles(edges):
    """The strongly connected groups of more than one part (Tarjan)."""
    graph = collections.defaultdict(set)
    for importer, imported in edges:
        graph[importer].add(imported)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in list(graph):
        if node not in index:
            visit(node)
    return groups


def module_imports():
    """`{(importer module, imported module): [line, ...]}` over the whole
    package: `from keras_attention.runs import saved_run` names the module
    `keras_attention.runs.saved_run`, `from keras_attention.runs import
    open_run` the package `keras_attention.runs` (its `__init__`)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        modules[".".join(relative.parts[:-1] if relative.name == "__init__"
                         else relative.parts)] = path
    edges = collections.defaultdict(list)
    for module, path in modules.items():
        for name in _imported_modules(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name.startswith("keras_attention") and name != module:
                edges[(module, name)].append(str(path.relative_to(ROOT)))
    return edges


def test_no_cycle_among_the_modules():
    """Counting imports inside functions, and a package's `__init__` as a
    module: no module imports, even on use, one that imports it back."""
    edges = module_imports()
    assert ("keras_attention.runs.convert", "keras_attention.pretrained.loading") in edges
    assert _cycles(edges) == []


def test_no_cycle_among_the_first_level_parts():
    edges = part_imports()
    assert ("runs", "pretrained") in edges  # the scan sees imports on use
    assert _cycles(edges) == []


def test_the_toolkit_imports_downwards_only():
    upward = {
        f"{importer} -> {imported}": files
        for (importer, imported), files in part_imports().items()
        if RANK.get(imported, 0) >= RANK.get(importer, 0) and imported in TOOLKIT
        and not (importer == imported)
    }
    assert upward == {}


def test_registries_name_no_functions_as_strings():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.startswith("keras_attention.") and ":" in node.value
                    and " " not in node.value):
                found.append(f"{path.relative_to(ROOT)}: {node.value}")
    assert found == []


def test_the_check_sees_a_cycle():
    assert _cycles({("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): []}) == [
        ["a", "b", "c"]]

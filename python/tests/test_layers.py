"""The package's layers, checked on its import graph (read from the source with
``ast``, every ``import`` at any depth except under ``if TYPE_CHECKING``).

The rules are the folders' ``__init__`` docstrings made executable: no import
cycle; passes never reach the driver, runtime, API or frontend; the runtime
never loads a compiler; only the frontend imports torch-mlir; stage modules
never import the registry that reads them.
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Package -> source folder, as pyproject.toml's package-dir says.
SOURCES = {
    "lowerline": "python/lowerline",
    "lowerline.passes": "passes",
    "lowerline.dialects": "dialects",
    "lowerline.tools": "tools",
}


def _under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _modules() -> dict[str, str]:
    """Module name -> file, for every module of the package."""
    found: dict[str, str] = {}
    for package, folder in SOURCES.items():
        base = os.path.join(ROOT, folder)
        for root, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = os.path.relpath(root, base)
            prefix = package if rel == "." else f"{package}.{rel.replace(os.sep, '.')}"
            if package == "lowerline" and rel.split(os.sep)[0] in ("passes", "tools", "dialects"):
                continue
            for name in files:
                if name.endswith(".py"):
                    module = prefix if name == "__init__.py" else f"{prefix}.{name[:-3]}"
                    found[module] = os.path.join(root, name)
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: str, module: str) -> set[str]:
    """Every module ``module`` imports (absolute names; ``from a import b``
    counts ``a.b`` too, as ``b`` may be a module)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                is_package = path.endswith("__init__.py")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


MODULES = _modules()
# Module -> what it imports: lowerline's modules, and other packages by full name.
GRAPH = {
    module: {n for n in _imports(path, module) if n in MODULES or not _under(n, "lowerline")}
    for module, path in MODULES.items()
}


def _violations(sources: tuple[str, ...], forbidden: tuple[str, ...], allow=()) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in GRAPH.items()
        if _under(module, *sources) and module not in allow
        for name in names
        if _under(name, *forbidden)
    )


def test_the_graph_sees_the_package():
    assert "lowerline.passes.tiling.tile_and_fuse" in MODULES
    assert "lowerline.pipeline.pass_api" in GRAPH["lowerline.passes.tiling.tile_and_fuse"]
    assert "mlir" in GRAPH["lowerline.pipeline.scheduler"]


def test_no_import_cycle():
    internal = {m: {n for n in names if n in MODULES} for m, names in GRAPH.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for name in sorted(internal[module]):
            # Importing a submodule imports its packages first: not an edge back.
            if name == module or module.startswith(name + "."):
                continue
            if state.get(name) == 1:
                cycles.append([*path[path.index(name) :], name])
            elif name not in state:
                visit(name, [*path, name])
        state[module] = 2

    for module in sorted(internal):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_few_modules_at_the_top():
    top = [m for m in MODULES if m.count(".") == 1 and m.split(".")[1] not in SOURCES_TOP]
    assert len(top) <= 12, top


SOURCES_TOP = {
    "passes",
    "dialects",
    "tools",
    "pipeline",
    "driver",
    "cpu",
    "gpu",
    "runtime",
    "frontend",
    "examples",
    "aot",
    "explore",
}


@pytest.mark.parametrize(
    ("sources", "forbidden", "allow"),
    [
        # Passes transform IR: they never compile, run or import models.
        (
            ("lowerline.passes",),
            ("lowerline.driver", "lowerline.runtime", "lowerline.api", "lowerline.frontend"),
            (),
        ),
        # The runtime calls compiled code: no compiler may load with it.
        (
            ("lowerline.runtime",),
            (
                "mlir",
                "torch_mlir",
                "lowerline.pipeline",
                "lowerline.driver",
                "lowerline.passes",
                "lowerline.cpu",
                "lowerline.gpu",
                "lowerline.frontend",
                "lowerline.api",
            ),
            (),
        ),
        # torch-mlir's LLVM must not meet the mlir bindings' (DESIGN.md).
        (("lowerline",), ("torch_mlir",), ()),
        # The pipeline machinery serves every target and driver.
        (
            ("lowerline.pipeline",),
            (
                "lowerline.driver",
                "lowerline.runtime",
                "lowerline.api",
                "lowerline.frontend",
                "lowerline.cpu",
                "lowerline.gpu",
            ),
            (),
        ),
        # lowerline.export sits at the API's level: nothing below it imports it.
        (
            (
                "lowerline.passes",
                "lowerline.pipeline",
                "lowerline.driver",
                "lowerline.cpu",
                "lowerline.gpu",
                "lowerline.runtime",
                "lowerline.frontend",
            ),
            ("lowerline.aot",),
            (),
        ),
        # The explorer's page is written in the user's process, which never loads MLIR.
        (
            (
                "lowerline.explore.report",
                "lowerline.explore.memory_plan",
                "lowerline.explore.numerics",
            ),
            ("mlir", "lowerline.pipeline.scheduler", "lowerline.pipeline.trace"),
            (),
        ),
        # Stage modules are data the registry reads: never the other way round.
        (("lowerline.cpu", "lowerline.gpu"), ("lowerline.pipeline.registry",), ()),
        (("lowerline.cpu", "lowerline.gpu"), ("lowerline.driver", "lowerline.api"), ()),
    ],
)
def test_layer_rule(sources, forbidden, allow):
    if forbidden == ("torch_mlir",):
        allow = tuple(m for m in MODULES if _under(m, "lowerline.frontend"))
    assert _violations(sources, forbidden, allow) == []


def _closure(module: str) -> set[str]:
    """Every module ``module`` imports, directly or through lowerline's modules.
    The package's own ``__init__`` is not followed: it imports its parts
    lazily, on first use of ``lowerline.compile`` and the like."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or name == "lowerline":
            continue
        seen.add(name)
        todo.extend(GRAPH.get(name, ()))
    return seen


def test_saved_modules_load_without_the_compiler():
    """``lowerline.load`` runs where MLIR and torch-mlir are not installed:
    nothing it imports, at any depth, imports them (test_saved_modules runs
    it with them blocked)."""
    reached = _closure("lowerline.saved")
    assert "lowerline.runtime.native" in reached
    compiler = ("mlir", "torch_mlir", "llvm", "lowerline.api", "lowerline.pipeline.context")
    assert sorted(name for name in reached if _under(name, *compiler)) == []

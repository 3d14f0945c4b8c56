"""The import contract (docs/architecture.md) as a test: layers only point down, no cycle between
modules (an import inside a function counts: hiding one there does not remove the cycle), the
runtime never reaches workflows.evaluation, and no citescope import hides inside a function unless
ALLOWED_LOCAL_IMPORTS says why.

The rules are read from pyproject.toml's [tool.importlinter], the contracts `make lint` runs
lint-imports on, so they are written once; the graph is grimp's, the one import-linter reads."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest

import citescope

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS: list[dict] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
LAYERS: list[str] = next(c["layers"] for c in CONTRACTS if c["type"] == "layers")  # the top layer first
EVALUATION = "citescope.workflows.evaluation"
EVALUATION_IMPORTERS: list[str] = next(
    c["allowed_importers"] for c in CONTRACTS if c["type"] == "protected" and c["protected_modules"] == [EVALUATION]
)

# citescope imports inside a function that are there on purpose: importer (a module or a package) -> why.
ALLOWED_LOCAL_IMPORTS = {
    "citescope.workflows.cli": "a command loads what it runs when it runs, so `run.py --help` or `run.py ingest` "
    "does not load agentscope, the pipeline, the service and the evaluation package (seconds each)",
    "citescope.workflows.training.commands": "`run.py train`'s commands, as the command line's: each loads what it "
    "runs, so `train vocab` and `--help` need no torch, and `train pairs` runs where the runtime's packages are not "
    "installed (a lent GPU; tests/workflows/training/test_lean_imports.py)",
    "citescope.workflows.training.pair_training": "a shop's KB trains only with --kb: its modules (pymilvus, "
    "jieba) are not installed on a lent GPU (tests/workflows/training/test_lean_imports.py)",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} (line {self.line}: {self.text})"


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def package_graph(package: str) -> grimp.ImportGraph:
    """Every import of the package's modules, those inside functions and TYPE_CHECKING blocks too;
    without its tests/ (inside the package folder here, and free to import anything)."""
    graph = grimp.build_graph(package, cache_dir=None)
    for module in [m for m in graph.modules if within(m, f"{package}.tests")]:
        graph.remove_module(module)
    return graph


def imports_between(graph: grimp.ImportGraph, importer: str, imported: str) -> list[Import]:
    details = graph.get_import_details(importer=importer, imported=imported)
    return [Import(importer, imported, d["line_number"], d["line_contents"]) for d in details]


def layer_of(module: str, layers: list[str]) -> int | None:
    return next((rank for rank, layer in enumerate(layers) if within(module, layer)), None)


def upward_imports(graph: grimp.ImportGraph, layers: list[str]) -> list[str]:
    """Each import of a module from a higher layer than its own (layers: the top one first)."""
    found = []
    for importer in sorted(graph.modules):
        mine = layer_of(importer, layers)
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            theirs = layer_of(imported, layers)
            if mine is not None and theirs is not None and theirs < mine:
                found += [str(i) for i in imports_between(graph, importer, imported)]
    return found


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.find_modules_directly_imported_by(successor)))))
                elif successor in on_stack:
                    low[module] = min(low[module], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def cycles(graph: grimp.ImportGraph) -> list[str]:
    """One shortest cycle per group of modules that import each other, as `a -> b -> a`, each
    step with the line that imports."""
    found = []
    for group in strongly_connected(graph):
        start = group[0]
        back = min(
            (
                graph.find_shortest_chain(importer=successor, imported=start) or ()
                for successor in graph.find_modules_directly_imported_by(start)
                if successor in group
            ),
            key=len,
        )
        chain = [start, *back]
        steps = [imports_between(graph, a, b)[0] for a, b in zip(chain, chain[1:], strict=False)]
        found.append(" -> ".join(chain) + "\n    " + "\n    ".join(str(s) for s in steps))
    return found


def reaching(graph: grimp.ImportGraph, target: str, allowed: list[str]) -> list[str]:
    """Each module outside target and allowed that imports target, directly or not: the chain."""
    targets = {m for m in graph.modules if within(m, target)}
    found = []
    for module in sorted(graph.modules):
        if within(module, target) or any(within(module, a) for a in allowed):
            continue
        reached = sorted(graph.find_upstream_modules(module) & targets)
        if reached:
            chain = graph.find_shortest_chain(importer=module, imported=reached[0])
            found.append(" -> ".join(chain or (module, reached[0])))
    return found


def source_of(module: str, package: str, package_dir: Path) -> Path:
    parts = module.split(".")[len(package.split(".")) :]
    folder = package_dir.joinpath(*parts)
    return folder / "__init__.py" if (folder / "__init__.py").is_file() else folder.with_suffix(".py")


class _InFunctions(ast.NodeVisitor):
    """The import statements inside a function (at any depth) of one module."""

    def __init__(self) -> None:
        self.depth = 0
        self.found: list[ast.Import | ast.ImportFrom] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        if self.depth:
            self.found.append(node)

    visit_ImportFrom = visit_Import


def _imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up per extra dot
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}"  # a submodule, or a name in base: the caller keeps what is a module
        yield base


def function_level_imports(graph: grimp.ImportGraph, package: str, package_dir: Path) -> list[Import]:
    """Each import of one of the package's modules made inside a function."""
    found = []
    for module in sorted(graph.modules):
        path = source_of(module, package, package_dir)
        visitor = _InFunctions()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        for node in visitor.found:
            names = {n for n in _imported_modules(node, module, path.name == "__init__.py") if n in graph.modules}
            # `from a import b`: the submodule a.b when there is one, else a
            names -= {n.rpartition(".")[0] for n in names}
            text = ast.get_source_segment(path.read_text(encoding="utf-8"), node) or ""
            found += [Import(module, name, node.lineno, text.split("\n")[0]) for name in sorted(names)]
    return found


def not_allowed(imports: list[Import], allowed: dict[str, str]) -> list[str]:
    return [str(i) for i in imports if not any(within(i.importer, a) for a in allowed)]


# ------------------------------------------------------------------------------ citescope itself
@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    where = Path(citescope.__file__).resolve().parent
    assert where == ROOT, f"citescope imports from {where}, not this checkout: PYTHONPATH=<link folder>:{ROOT}"
    return package_graph("citescope")


def test_layers_only_point_down(graph: grimp.ImportGraph) -> None:
    upward = upward_imports(graph, LAYERS)
    assert not upward, f"imports from a higher layer ({' > '.join(LAYERS)}):\n" + "\n".join(upward)


def test_no_module_imports_itself_back(graph: grimp.ImportGraph) -> None:
    found = cycles(graph)
    assert not found, "import cycles (move the shared piece down, or pass it in):\n" + "\n".join(found)


def test_the_runtime_never_reaches_the_evaluation_package(graph: grimp.ImportGraph) -> None:
    found = reaching(graph, EVALUATION, EVALUATION_IMPORTERS)
    assert not found, f"runtime modules that import {EVALUATION}:\n" + "\n".join(found)


def test_no_citescope_import_hides_in_a_function(graph: grimp.ImportGraph) -> None:
    hidden = not_allowed(function_level_imports(graph, "citescope", ROOT), ALLOWED_LOCAL_IMPORTS)
    assert not hidden, "imports inside functions (import at the top; a cycle is fixed, not hidden):\n" + "\n".join(
        hidden
    )
    stale = [name for name in ALLOWED_LOCAL_IMPORTS if not any(within(m, name) for m in graph.modules)]
    assert not stale, f"ALLOWED_LOCAL_IMPORTS names modules that are gone: {stale}"


def test_every_package_is_in_the_wheel(graph: grimp.ImportGraph) -> None:
    """pyproject lists the packages setuptools installs (the root is mapped with package-dir, so
    it cannot find them): a new layer package left out imports here but not from a wheel."""
    listed = set(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    packages = {m for m in graph.modules if source_of(m, "citescope", ROOT).name == "__init__.py"}
    assert packages - listed == set(), "add them to [tool.setuptools] packages in pyproject.toml"


def test_import_linter_contracts_hold() -> None:
    """The same contracts as `make lint` runs, so pytest alone catches a break too. In a child
    process: import-linter configures logging, which would silence later tests' caplog."""
    run = subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, str(PYPROJECT)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr


LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
)


MAX_MODULE_LINES = 600


def test_no_module_of_the_package_is_longer_than_a_reader_can_hold() -> None:
    """A module over MAX_MODULE_LINES holds more than one unit: split it by responsibility."""
    layers = ("knowledge", "tools", "agents", "workflows")
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for layer in layers
        for path in (ROOT / layer).rglob("*.py")
    }
    sizes.update({"run.py": len((ROOT / "run.py").read_text(encoding="utf-8").splitlines())})
    assert len(sizes) > 100  # the walk found the package
    too_long = {path: lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert too_long == {}, f"split these modules (lines): {too_long}"


# ------------------------------------------------------------------------------ the checks can fail
SHOP = {
    "__init__.py": "",
    "low/__init__.py": "",
    "low/reader.py": "from layered_shop.high.runner import run\n",
    "high/__init__.py": "",
    "high/runner.py": "def run():\n    return 1\n",
    "high/left.py": "from layered_shop.high import right\nfrom layered_shop.high.evaluation.score import score\n",
    "high/right.py": "def later():\n    from layered_shop.high.left import right\n\n    return right\n",
    "high/service.py": "from layered_shop.high.left import score\n",
    "high/evaluation/__init__.py": "",
    "high/evaluation/score.py": "def score():\n    return 0\n",
    "high/evaluation/report.py": "from . import score\n",
}


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[grimp.ImportGraph, Path]:
    """A small package with one of each violation: low imports high, left and right import each
    other (right from inside a function), service reaches evaluation through left."""
    for name, text in SHOP.items():
        path = tmp_path / "layered_shop" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return package_graph("layered_shop"), tmp_path / "layered_shop"


def test_an_upward_import_is_named(shop: tuple[grimp.ImportGraph, Path]) -> None:
    graph, _ = shop
    layers = ["layered_shop.high", "layered_shop.low"]
    assert upward_imports(graph, layers) == [
        "layered_shop.low.reader -> layered_shop.high.runner (line 1: from layered_shop.high.runner import run)"
    ]
    graph.remove_import(importer="layered_shop.low.reader", imported="layered_shop.high.runner")
    assert upward_imports(graph, layers) == []


def test_a_cycle_through_a_function_level_import_is_named(shop: tuple[grimp.ImportGraph, Path]) -> None:
    graph, _ = shop
    assert cycles(graph) == [
        "layered_shop.high.left -> layered_shop.high.right -> layered_shop.high.left\n"
        "    layered_shop.high.left -> layered_shop.high.right (line 1: from layered_shop.high import right)\n"
        "    layered_shop.high.right -> layered_shop.high.left (line 2: from layered_shop.high.left import right)"
    ]
    graph.remove_import(importer="layered_shop.high.right", imported="layered_shop.high.left")
    assert cycles(graph) == []


def test_reaching_evaluation_names_the_chain(shop: tuple[grimp.ImportGraph, Path]) -> None:
    graph, _ = shop
    found = reaching(graph, "layered_shop.high.evaluation", ["layered_shop.low"])
    assert found == [
        "layered_shop.high.left -> layered_shop.high.evaluation.score",
        "layered_shop.high.right -> layered_shop.high.left -> layered_shop.high.evaluation.score",
        "layered_shop.high.service -> layered_shop.high.left -> layered_shop.high.evaluation.score",
    ]
    assert reaching(graph, "layered_shop.high.evaluation", ["layered_shop.low", "layered_shop.high"]) == []


def test_a_function_level_import_is_found_unless_allowed(shop: tuple[grimp.ImportGraph, Path]) -> None:
    graph, folder = shop
    found = function_level_imports(graph, "layered_shop", folder)
    assert [str(i) for i in found] == [
        "layered_shop.high.right -> layered_shop.high.left (line 2: from layered_shop.high.left import right)"
    ]
    assert not_allowed(found, {"layered_shop.high": "on purpose"}) == []

"""The package's shape, checked from its source: no import cycles, pytest only in the glue,
evidence file names only in the evidence package, views apart from the run machinery, no
module over 500 lines and no function over 80."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from pytest_skill_eval.evidence import layout

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_skill_eval"
GLUE = {"plugin", "options", "rootdir", "session", "items", "subresults", "xdist", "features"}
# Every file name `evidence/layout.py` declares (`run.json`, `events.jsonl`, `stderr.log`, …).
EVIDENCE_NAMES = tuple(
    value
    for name, value in vars(layout).items()
    if name.isupper() and isinstance(value, str) and re.fullmatch(r"[a-z-]+\.[a-z]+", value)
)
# What runs subjects: the read-only views import none of it.
RUN_MACHINERY = ("hosts", "run", "modelserver", "session", "scale")  # providers: in run/


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per test process (read, never changed)."""
    return ast.parse(path.read_text())


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path], *, typing: bool = False) -> set[str]:
    """Package modules `name` imports, outside `if TYPE_CHECKING:` blocks unless `typing`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = _tree(path)
    skipped = (
        set()
        if typing
        else {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
    )
    edges: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                edges.add(target if target in modules else base)
    return {e for e in edges if e in modules and e != name}


def _layers() -> dict[str, int]:
    """The entry of each layer in `docs/architecture.md`'s list, mapped to its line (0 = ground)."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    block = text.split("<!-- layers -->")[1].split("<!-- /layers -->")[0]
    lines = [line for line in block.splitlines() if line.strip()]
    return {entry: row for row, line in enumerate(lines) for entry in re.findall(r"`(\w+)`", line)}


def _entry(module: str) -> str:
    """A module's layer entry: its top-level folder or root module (the package root is glue)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "plugin"


# Imports that run back up the layer list (module names below the package): none. One that
# must stay would be named here with why; the list only shrinks.
UPWARD_ALLOWED: set[tuple[str, str]] = set()
# Imports that close a circle (typing-only ones included): none; the list only shrinks.
CIRCLE_ALLOWED: set[tuple[str, str]] = set()


def _short(name: str) -> str:
    return name.removeprefix("pytest_skill_eval.")


def test_every_import_runs_down_the_layer_list() -> None:
    layers = _layers()
    modules = _modules()
    assert {_entry(name) for name in modules} <= set(layers), "a module outside the layer list"
    upward = {
        (_short(name), _short(target))
        for name, path in modules.items()
        for target in _imports(name, path, modules, typing=True)
        if layers[_entry(target)] > layers[_entry(name)]
    }
    assert sorted(upward - UPWARD_ALLOWED) == []
    assert sorted(UPWARD_ALLOWED - upward) == [], "an allowed arrow is gone: strike it"


def test_no_modules_import_each_other_even_for_typing() -> None:
    modules = _modules()
    graph = {
        name: {
            target
            for target in _imports(name, path, modules, typing=True)
            if (_short(name), _short(target)) not in CIRCLE_ALLOWED
        }
        for name, path in modules.items()
    }
    assert _cycles(graph) == []
    present = {
        (_short(name), _short(target))
        for name, path in modules.items()
        for target in _imports(name, path, modules, typing=True)
    }
    assert sorted(CIRCLE_ALLOWED - present) == [], "an allowed import is gone: strike it"


def test_the_import_graph_has_no_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_only_the_pytest_glue_imports_pytest() -> None:
    offenders = []
    for name, path in _modules().items():
        if name.split(".")[1:2] and name.split(".")[1] in GLUE:  # a glue module or package
            continue
        for node in ast.walk(_tree(path)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] in ("pytest", "_pytest", "xdist") for n in names):
                offenders.append(name)
    assert offenders == []


def test_only_the_evidence_package_names_evidence_files() -> None:
    offenders = []
    for name, path in _modules().items():
        if name.startswith("pytest_skill_eval.evidence"):
            continue
        tree = _tree(path)
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and any(
                    re.search(rf"(?<![\w.-]){re.escape(n)}(?!\w)", node.value)
                    for n in EVIDENCE_NAMES
                )
            ):
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []


def test_no_module_is_over_500_lines() -> None:
    long = {n: len(p.read_text().splitlines()) for n, p in _modules().items()}
    assert {n: lines for n, lines in long.items() if lines > 500} == {}


def test_the_evidence_names_are_read_from_the_layout() -> None:
    assert {"run.json", "events.jsonl", "stderr.log", "transcript.json", "final.md"} <= set(
        EVIDENCE_NAMES
    )


def test_the_views_import_no_run_machinery() -> None:
    modules = _modules()
    forbidden = tuple(f"pytest_skill_eval.{name}" for name in RUN_MACHINERY)
    offenders = {
        f"{name} imports {target}"
        for name, path in modules.items()
        if name.startswith("pytest_skill_eval.views")
        for target in _imports(name, path, modules)
        if any(target == f or target.startswith(f + ".") for f in forbidden)
    }
    assert sorted(offenders) == []


def test_no_function_is_over_80_lines() -> None:
    long = []
    for name, path in _modules().items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > 80:
                    long.append(f"{name}.{node.name}: {size} lines")
    assert long == []


def test_the_package_root_holds_the_pytest_glue_and_the_error_base_only() -> None:
    # Everything else lives in the package of its layer (docs/architecture.md): a new root
    # module is a layer nobody named.
    root = {path.stem for path in PACKAGE.glob("*.py")}
    assert root - {"__init__"} <= GLUE | {"nodeids", "errors"}


def test_a_loop_feature_is_its_module_and_its_registration_only() -> None:
    # Deleting a feature is deleting its module and its line in REGISTERED: no other module
    # imports it (typing-only imports included), and no other names its own options.
    from pytest_skill_eval import features

    modules = _modules()
    # Each module read once: what it imports (typing-only imports included), its strings.
    imports = {name: _imports(name, path, modules, typing=True) for name, path in modules.items()}
    strings = {
        name: [
            node.value
            for node in ast.walk(_tree(path))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
        for name, path in modules.items()
    }
    for feature in features.REGISTERED:
        own = feature.__module__
        importers = {name for name, imported in imports.items() if own in imported}
        assert importers == {"pytest_skill_eval.features"}, f"{own} is imported by {importers}"
        options = [f"--skill-eval-{name}" for name, _, _ in feature.options]
        for name, texts in strings.items():
            if name == own:
                continue
            named = [o for o in options for text in texts if o in text]
            assert named == [], f"{name} names {feature.__name__}'s {named}"


def test_each_loop_feature_is_one_plugin_object_registered_by_name() -> None:
    # Adding a feature is one module in features/ and one line in REGISTERED: each module
    # defines one Feature, registered under its own stable name; plugin.py names no feature.
    import importlib

    from pytest_skill_eval import features
    from pytest_skill_eval.features.base import Feature

    found = []
    for path in sorted((PACKAGE / "features").glob("*.py")):
        if path.stem in ("__init__", "base"):
            continue
        module = importlib.import_module(f"pytest_skill_eval.features.{path.stem}")
        defined = [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, Feature)
            and value is not Feature
            and value.__module__ == module.__name__
        ]
        assert len(defined) == 1, f"{path.name} defines {defined}: one feature per module"
        found.append(defined[0])
    assert sorted(f.__name__ for f in features.REGISTERED) == sorted(f.__name__ for f in found)
    names = [f.name for f in features.REGISTERED]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"skill-eval-[a-z-]+", name) for name in names)
    plugin = (PACKAGE / "plugin.py").read_text()
    strings = [
        node.value
        for node in ast.walk(ast.parse(plugin))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert [s for s in strings if s.startswith("--skill-eval")] == []
    imported = {
        node.module or ""
        for node in ast.walk(ast.parse(plugin))
        if isinstance(node, ast.ImportFrom)
    }
    layers = ("analysis", "budget", "scale", "run")
    assert sorted(m for m in imported if m.split(".")[0] in layers) == []

"""The package's layout: the import graph of src/tokenforge has no cycle.

Every import counts, at module level or inside a function (a deferred import still ties the two
modules together), and importing `tokenforge.a.b` counts as importing the package `tokenforge.a`
too (Python runs its __init__ first), unless the importer is itself inside `tokenforge.a` (its own
packages are loaded before it).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tokenforge"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}

    def add(src: str, target: str) -> None:
        # the target and every package above it that is part of tokenforge and not above src
        parts = target.split(".")
        for k in range(2, len(parts) + 1):
            name = ".".join(parts[:k])
            if name in modules and name != src and not src.startswith(name + "."):
                graph[src].add(name)

    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("tokenforge"):
                        add(module, alias.name)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, is_package, node.level, node.module)
                if not target.startswith("tokenforge"):
                    continue
                add(module, target)
                for alias in node.names:  # `from . import x` may import the submodule x
                    add(module, f"{target}.{alias.name}")
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


KNOWN: list[list[str]] = []  # cycles allowed for now: none


def test_import_graph_has_no_cycle():
    graph = import_graph()
    assert "tokenforge.tokenizer" in graph and graph["tokenforge.tokenizer"]
    found = [c for c in cycles(graph) if c not in KNOWN]
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_pipeline_never_imports_the_formats():
    """formats/ is at the edge: it imports the pipeline, the pipeline (stages, models, the
    Tokenizer) never imports it."""
    graph = import_graph()
    pipeline = [m for m in graph if m.count(".") and m.split(".")[1] in ("tokenizer", "encoding", "special", "stage", "normalizers",
                                                           "pre_tokenizers", "models", "post_processors", "decoders")]
    for m in pipeline:
        assert not {t for t in graph[m] if t.startswith("tokenforge.formats") or t == "tokenforge.io"}, m


def test_importing_the_package_does_not_load_numpy():
    # numpy is imported where it is used (encode_to_numpy, padding, datasets, training): loading it
    # was 60 of the 160 ms `import tokenforge` took, paid by every command-line call.
    import subprocess
    import sys

    code = "import sys, tokenforge; tokenforge.get_encoding; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

"""Layering: the tree shows the data flow, and nothing climbs back up it.

    cli → server → admission | audit → config, cluster, render → validation | scheduler
        | install → api, errors

Inside audit/ the stages run one way too (state → measure → plan → drills → workloads →
act → report → pipeline → serve): a stage imports only itself and the stages before it.

Imports are read with ast (nothing is executed): every import statement of every
module, function-level and TYPE_CHECKING ones included, relative ones resolved. A
module may import its own package and any package on a lower layer, never a sibling
on its own layer nor anything above; the module graph has no cycle; and an import
inside a function is allowed only where a listed reason other than breaking a cycle
needs it. The pure layers import no web, cluster-client or metrics library.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import paths

ROOT = paths.ROOT
WEBHOOK = ROOT / "webhook"

# Top-level part of webhook -> layer (higher imports lower).
LAYERS: dict[str, int] = {
    "__main__": 7,
    "cli": 6,
    "server": 5,
    "admission": 4,
    "audit": 4,
    "config": 3,
    "cluster": 3,
    "render": 3,
    "validation": 2,
    "scheduler": 2,
    "controllers": 2,
    "install": 2,
    "api": 1,
    "errors": 0,
    "__init__": 0,
}
PURE = ("api", "validation", "scheduler", "controllers", "render")
# Parts that sit beside another on the same layer and may use it: the controllers ask
# the scheduler's public face to count pods as it counts them (the face rule below
# still applies); the scheduler never imports them.
BESIDE: frozenset[tuple[str, str]] = frozenset({("controllers", "scheduler")})
# Scheduler modules above placement: they ask the scheduler's public face (placement's
# __all__) and the snapshot store, and no scheduler module imports them.
ABOVE_PLACEMENT = ("webhook.scheduler.scaleup",)
# What a module above placement may import of the scheduler besides placement's
# public names.
BELOW_PLACEMENT_ALLOWED = ("webhook.scheduler.framework.snapshot",)
FORBIDDEN = ("flask", "werkzeug", "gunicorn", "kubernetes", "prometheus_client", "urllib3")

# Imports inside functions, each with the reason it is not at the top of its module.
LATE_IMPORTS: dict[tuple[str, str], str] = {
    # PEP 562 attribute: importing webhook.server (for gunicorn_conf) must not import
    # prometheus_client before serve sets PROMETHEUS_MULTIPROC_DIR.
    ("webhook.server", "webhook.server.app"): "multiprocess metrics directory first",
    # gunicorn hooks run in the arbiter and in workers; metrics must not be imported
    # before the multiprocess directory is set, nor the app in the arbiter.
    ("webhook.server.gunicorn_conf", "webhook.server.metrics"): "multiprocess metrics first",
    ("webhook.server.gunicorn_conf", "webhook.server.app"): "app only in a worker",
    ("webhook.server.worker", "webhook.server.app"): "app only in a worker",
    # serve imports the app, metrics and logs only once the environment is set.
    ("webhook.server.serve", "webhook.server.app"): "multiprocess metrics first",
    ("webhook.server.serve", "webhook.server.logs"): "logging configured when serving",
    ("webhook.server.serve", "webhook.install.certs"): "cryptography only when serving",
    ("webhook.server.serve", "webhook.server.worker"): "gunicorn only when serving",
    ("webhook.server.serve", "webhook.cluster.informer"): "kubernetes client when live",
    # logs is configured (gunicorn's logconfig) before serve sets the metrics directory.
    ("webhook.server.logs", "webhook.server.metrics"): "multiprocess metrics first",
    ("webhook.server.logs", "webhook.admission.review"): "logging set up before the app",
    # Each subcommand imports only what it runs: `topospread check` starts fast.
    ("webhook.cli.main", "*"): "a subcommand's imports only when it runs",
    ("webhook.cli.common", "webhook.cluster.lister"): "kubernetes client only when live",
    ("webhook.cli.audit", "webhook.cluster.lister"): "kubernetes client only when live",
    ("webhook.cli.audit", "webhook.cli.apply"): "kubernetes client only when live",
    ("webhook.cli.audit", "webhook.audit.act.evictor"): "kubernetes client only when live",
    ("webhook.audit.state.reader", "webhook.cluster.lister"): "kubernetes client only when live",
    ("webhook.cli.audit", "webhook.audit.act.applier"): "kubernetes client only when live",
    ("webhook.cli.simulate", "webhook.validation.rules"): "validation only when asked",
    ("webhook.cluster.source", "webhook.cluster.files"): "file reading only for FileSource",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(WEBHOOK.rglob("*.py"))}


def imports_of(path: Path, package: str | None = None) -> list[tuple[str, bool]]:
    """(imported module or module.name, whether the import is inside a function) for every
    import statement in `path`, relative imports resolved against its package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if package is None:
        name = module_name(path) if path.is_relative_to(ROOT) else "probe"
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    parent = ".".join(parts[: len(parts) - child.level + 1])
                    base = f"{parent}.{base}" if base else parent
                found.append((base, inside))
                found.extend((f"{base}.{alias.name}", inside) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The project module an imported name refers to (a module, or a module's member)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def graph() -> dict[str, dict[str, bool]]:
    """module -> {imported project module: imported only inside functions}."""
    known = modules()
    out: dict[str, dict[str, bool]] = {}
    for name, path in known.items():
        edges: dict[str, bool] = {}
        for imported, inside in imports_of(path):
            target = resolve(imported, known)
            if target is None or target == name or name.startswith(target + "."):
                continue  # not ours, itself, or a package it is part of (imported anyway)
            edges[target] = edges.get(target, True) and inside
        out[name] = edges
    return out


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_of_the_tree_has_a_layer() -> None:
    assert {part(m) for m in modules()} <= set(LAYERS)


def test_no_import_runs_up_or_sideways() -> None:
    bad = [
        f"{src} -> {dst}"
        for src, edges in graph().items()
        for dst in edges
        if part(src) != part(dst)
        and LAYERS[part(dst)] >= LAYERS[part(src)]
        and (part(src), part(dst)) not in BESIDE
    ]
    assert bad == []


def test_modules_above_placement_use_only_its_public_face() -> None:
    """scaleup imports placement's public names (its __all__), the snapshot store, the
    memo a copy adopts and the Framework type; nothing of the scheduler imports it."""
    import webhook.scheduler.placement as placement

    known = modules()
    bad = []
    for src in ABOVE_PLACEMENT:
        for imported, _ in imports_of(known[src]):
            target = resolve(imported, known)
            if target is None or not target.startswith("webhook.scheduler"):
                continue
            if target == "webhook.scheduler.placement":
                name = imported.removeprefix("webhook.scheduler.placement").lstrip(".")
                if name and name not in placement.__all__:
                    bad.append(f"{src} -> placement.{name}")
            elif target not in BELOW_PLACEMENT_ALLOWED and target != src:
                bad.append(f"{src} -> {target}")
    users = [
        f"{src} -> {dst}"
        for src, edges in graph().items()
        if part(src) == "scheduler" and src not in ABOVE_PLACEMENT
        for dst in edges
        if dst in ABOVE_PLACEMENT
    ]
    assert bad == [] and users == []


def _cycles(g: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles() -> None:
    """Function-level imports count: a cycle hidden inside a function is still a cycle
    (only a package importing its own submodule is not one)."""
    g = {
        src: {dst: inside for dst, inside in edges.items() if not dst.startswith(src + ".")}
        for src, edges in graph().items()
    }
    assert _cycles(g) == []


def test_imports_inside_functions_have_a_listed_reason() -> None:
    late = {
        (src, dst)
        for src, edges in graph().items()
        for dst, inside in edges.items()
        if inside and not dst.startswith(src + ".")
    }
    unexplained = sorted(
        f"{src} -> {dst}"
        for src, dst in late
        if (src, dst) not in LATE_IMPORTS and (src, "*") not in LATE_IMPORTS
    )
    assert unexplained == []


def test_the_late_import_list_has_no_stale_entries() -> None:
    g = graph()
    stale = [
        key for key in LATE_IMPORTS if key[1] != "*" and not g.get(key[0], {}).get(key[1], False)
    ]
    assert stale == []


@pytest.mark.parametrize("layer", PURE)
def test_pure_layers_import_no_web_or_cluster_client(layer: str) -> None:
    bad = sorted(
        f"{module_name(path)}: {name}"
        for path in sorted((WEBHOOK / layer).rglob("*.py"))
        for name, _ in imports_of(path)
        if name.split(".")[0] in FORBIDDEN
    )
    assert bad == []


def test_the_checker_sees_function_level_relative_and_type_checking_imports(
    tmp_path: Path,
) -> None:
    """The parser is not blind: lazy, relative and TYPE_CHECKING imports all count."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from webhook.cli import main\n"
        "def f():\n    import flask\n    from .x import y\n    from .. import kube\n"
    )
    found = dict(imports_of(probe, package="webhook.scheduler"))
    assert found["flask"] is True
    assert found["webhook.scheduler.x.y"] is True
    assert found["webhook.kube"] is True
    assert found["webhook.cli.main"] is False


def test_the_checker_finds_a_cycle_and_an_upward_import() -> None:
    """The rules can fail: a made-up graph with a cycle and an upward edge is caught."""
    g = {"webhook.api.a": {"webhook.api.b": False}, "webhook.api.b": {"webhook.api.a": True}}
    assert _cycles(g) == [["webhook.api.a", "webhook.api.b"]]
    assert LAYERS[part("webhook.server.app")] > LAYERS[part("webhook.api.kube")]


# ---- inside the scheduler --------------------------------------------------------------

# The scheduler's own order (upstream's: apis/config < framework < plugins < profile <
# schedule_one < the scheduler): a module imports only its own part and parts below.
# Modules of scheduler/ not listed here sit above placement (they build on its face).
SCHEDULER_ORDER: dict[str, int] = {
    "config": 0,
    "framework": 1,
    "plugins": 2,
    "profile": 3,
    "schedule_one": 4,
    "placement": 5,
}
ABOVE_PLACEMENT_RANK = 6

# What code outside scheduler/ may import of it: the public face (placement and the
# modules built on it) and the vocabulary.
SCHEDULER_FACE = (
    "webhook.scheduler",
    "webhook.scheduler.placement",
    *ABOVE_PLACEMENT,
    "webhook.scheduler.framework.types",
    "webhook.scheduler.framework.snapshot",
)


def scheduler_rank(module: str) -> int:
    parts = module.split(".")
    return SCHEDULER_ORDER.get(parts[2] if len(parts) > 2 else "", ABOVE_PLACEMENT_RANK)


def test_the_scheduler_imports_in_its_own_order() -> None:
    """framework < plugins < profile < schedule_one < placement: the runtime never
    imports a plugin, a plugin never a profile, and so on up."""
    bad = [
        f"{src} -> {dst}"
        for src, edges in graph().items()
        if src.startswith("webhook.scheduler.")
        for dst in edges
        if dst.startswith("webhook.scheduler.")
        and scheduler_rank(dst) >= scheduler_rank(src)
        and scheduler_rank(dst) != ABOVE_PLACEMENT_RANK  # above placement: checked below
        and src.split(".")[2] != dst.split(".")[2]
    ]
    # Nothing of the scheduler imports a module above placement.
    bad += [
        f"{src} -> {dst}"
        for src, edges in graph().items()
        if src.startswith("webhook.scheduler.") and scheduler_rank(src) < ABOVE_PLACEMENT_RANK
        for dst in edges
        if dst.startswith("webhook.scheduler.") and scheduler_rank(dst) == ABOVE_PLACEMENT_RANK
    ]
    assert bad == []


def _past_the_face(g: dict[str, dict[str, bool]] | None = None) -> set[tuple[str, str]]:
    return {
        (src, dst)
        for src, edges in (graph() if g is None else g).items()
        if not src.startswith("webhook.scheduler")
        for dst in edges
        if dst.startswith("webhook.scheduler")
        and dst not in SCHEDULER_FACE
        and not dst.startswith("webhook.scheduler.config")
    }


def test_code_outside_the_scheduler_imports_only_its_face() -> None:
    """Outside scheduler/: placement (and the modules built on it), framework.types,
    framework.snapshot and config, nothing else."""
    assert sorted(_past_the_face()) == []


def test_the_face_defines_every_name_it_exports() -> None:
    from webhook.scheduler import placement

    assert all(hasattr(placement, name) for name in placement.__all__)


def test_every_name_imported_from_the_face_is_there() -> None:
    """What webhook/, tests/ and bench/ import from webhook.scheduler.placement, __all__
    or not, is an attribute of the face (the package, not one of its files)."""
    from webhook.scheduler import placement

    wanted = {
        (path.relative_to(ROOT).as_posix(), alias.name)
        for folder in ("webhook", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == PLACEMENT and not node.level
        for alias in node.names
    }
    assert wanted and [w for w in sorted(wanted) if not hasattr(placement, w[1])] == []


# ---- inside placement ------------------------------------------------------------------

# placement is a package: its face (__init__) re-exports, and its files import one way,
# each only the ones ranked below it (never the face: that would run in a circle).
PLACEMENT = "webhook.scheduler.placement"
PLACEMENT_FILES: dict[str, int] = {
    "results": 0,
    "cycle": 1,
    "explanation": 2,
    "simulation": 2,
    "queries": 2,
}


def _inside_placement_out_of_order(g: dict[str, dict[str, bool]]) -> list[str]:
    bad = []
    for src, edges in g.items():
        if not src.startswith(PLACEMENT + "."):
            continue
        for dst in edges:
            if dst == PLACEMENT or (
                dst.startswith(PLACEMENT + ".")
                and PLACEMENT_FILES[dst.split(".")[3]] >= PLACEMENT_FILES[src.split(".")[3]]
            ):
                bad.append(f"{src} -> {dst}")
    return bad


def test_the_files_of_placement_are_the_listed_ones() -> None:
    files = {p.stem for p in (WEBHOOK / "scheduler" / "placement").glob("*.py")}
    assert files == {"__init__", *PLACEMENT_FILES}


def test_the_files_of_placement_import_one_way() -> None:
    """results < cycle < explanation | simulation | queries < the face; the face is
    imported by no file of its own package (the cycle test cannot see that edge: a
    module importing its own package is skipped)."""
    known = modules()
    g = {src: dict(edges) for src, edges in graph().items()}
    for src in [m for m in known if m.startswith(PLACEMENT + ".")]:
        # graph() leaves out a module's import of its own package: count it here.
        if any(resolve(name, known) == PLACEMENT for name, _ in imports_of(known[src])):
            g[src][PLACEMENT] = False
    assert _inside_placement_out_of_order(g) == []


def test_no_file_of_placement_is_named_like_a_name_it_exports() -> None:
    """`from webhook.scheduler.placement import simulate` must mean the function, for
    Python and for the import graph above (which resolves a dotted name to a module
    first)."""
    from webhook.scheduler import placement

    assert set(PLACEMENT_FILES) & set(placement.__all__) == set()


def test_the_placement_checkers_catch_a_file_past_the_face_and_one_going_back() -> None:
    """The rules can fail: outside code importing an inner file, a file importing the
    face, and results importing cycle are each caught."""
    g = {
        "webhook.admission.foresight": {f"{PLACEMENT}.cycle": False},
        f"{PLACEMENT}.cycle": {PLACEMENT: False},
        f"{PLACEMENT}.results": {f"{PLACEMENT}.cycle": False},
    }
    assert _past_the_face(g) == {("webhook.admission.foresight", f"{PLACEMENT}.cycle")}
    assert _inside_placement_out_of_order(g) == [
        f"{PLACEMENT}.cycle -> {PLACEMENT}",
        f"{PLACEMENT}.results -> {PLACEMENT}.cycle",
    ]


def test_the_scheduler_order_checker_catches_a_runtime_importing_a_plugin() -> None:
    src, dst = "webhook.scheduler.framework.runtime.score", "webhook.scheduler.plugins.nodename"
    assert scheduler_rank(dst) >= scheduler_rank(src)
    assert scheduler_rank("webhook.scheduler.scaleup") > scheduler_rank(
        "webhook.scheduler.placement"
    )


# ---- inside the audit ------------------------------------------------------------------

# The audit's stages, in the order data flows through them: each imports only itself and
# earlier stages (a decision never imports a renderer; the one write path, act.evictor,
# imports no decision). The package face (audit/__init__) imports nothing of its stages.
AUDIT_STAGES: dict[str, int] = {
    "state": 0,
    "measure": 1,
    "plan": 2,
    "drills": 3,
    "workloads": 4,
    "act": 5,
    "report": 6,
    "pipeline": 7,
    "serve": 8,
}


def audit_stage(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def test_the_audit_root_holds_only_its_face_and_the_pipeline() -> None:
    root = {p.name for p in (WEBHOOK / "audit").iterdir() if p.suffix == ".py"}
    folders = {
        p.name for p in (WEBHOOK / "audit").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert root == {"__init__.py", "pipeline.py"}
    assert folders == set(AUDIT_STAGES) - {"pipeline"}


def test_the_audit_stages_import_only_earlier_stages() -> None:
    bad = [
        f"{src} -> {dst}"
        for src, edges in graph().items()
        if src.startswith("webhook.audit.")
        for dst in edges
        if dst.startswith("webhook.audit.")
        and audit_stage(dst) != audit_stage(src)
        and AUDIT_STAGES[audit_stage(dst)] > AUDIT_STAGES[audit_stage(src)]
    ]
    assert bad == []


def test_the_one_write_path_and_the_decisions_stay_apart() -> None:
    """The pure step decisions import no renderer and no cluster client; the evictor
    imports no decision."""
    g = graph()
    steps = g["webhook.audit.act.steps"]
    assert not [d for d in steps if d.startswith(("webhook.audit.report", "webhook.cluster"))]
    evictor = g["webhook.audit.act.evictor"]
    assert not [d for d in evictor if d in ("webhook.audit.act.steps", "webhook.audit.plan")]

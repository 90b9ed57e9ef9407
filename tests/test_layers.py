"""Imports point one way: base < config < engine < kernels | store | loader < defs < the
application modules.

Every import in every module of the package is read with ``ast`` (imports inside functions
included); one that points up, or sideways between kernels, store and loader, fails with its
location. The loader (read by training code) never imports Dagster, and importing the
expectations module does not import Great Expectations. Kernels are grouped by stage family, the
families of ``defs/``; importing the package changes nothing in ``os.environ``. Every Arrow
hash aggregate and join runs single-threaded: with threads, Arrow gives their rows in no fixed
order, and an order that changes from run to run breaks byte-identical outputs.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import corpus_platform

PACKAGE = Path(corpus_platform.__file__).parent
LAYERS = {"base": 0, "config": 1, "engine": 2, "kernels": 3, "store": 3, "loader": 3, "defs": 4}
APPLICATION = 5  # definitions, console, runner, cli, audit, trace, sample
DAGSTER_FREE = {"base", "config", "engine", "kernels", "store", "loader"}
PEERS = LAYERS["kernels"]  # kernels, store and loader never import one another
FAMILIES = {"ingest", "filtering", "dedup", "splitting", "statistics", "mixing", "sharding"}
MAX_LINES = 400


def layer_of(module: str) -> tuple[str, int]:
    """``corpus_platform.kernels.splitting.split`` -> ("kernels", 3)."""
    part = module.split(".")[1]
    return part, LAYERS.get(part, APPLICATION)


def imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [
                (node.lineno, node.module if node.module.count(".") >= 1 else n) for n in names
            ]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append((".".join(p for p in parts if p != "__init__"), path))
    return out


def test_every_import_points_down() -> None:
    wrong = []
    for module, path in modules():
        if module == "corpus_platform":
            continue
        part, level = layer_of(module)
        for line, target in imports(path):
            if target == "dagster" or target.startswith("dagster."):
                if part in DAGSTER_FREE:
                    wrong.append(f"{path.name}:{line} imports dagster ({part} is Dagster-free)")
                continue
            if not target.startswith("corpus_platform.") or target == "corpus_platform":
                continue
            other, other_level = layer_of(target)
            sideways = part != other and other_level == level == PEERS
            if other_level > level or sideways:
                wrong.append(f"{module}:{line} imports {target} ({part} -> {other})")
    assert not wrong, "\n".join(wrong)


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for _, path in modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_the_layer_rule_catches_a_wrong_import() -> None:
    assert layer_of("corpus_platform.kernels.splitting.split") == ("kernels", 3)
    assert layer_of("corpus_platform.store.datasets")[1] == 3
    assert layer_of("corpus_platform.engine.graph")[1] < layer_of("corpus_platform.kernels.x")[1]
    assert layer_of("corpus_platform.defs.publish")[1] > layer_of("corpus_platform.store.x")[1]
    assert layer_of("corpus_platform.cli")[1] == APPLICATION
    assert layer_of("corpus_platform.loader.dataset") == ("loader", 3)


def unordered_arrow_calls(source: str) -> list[int]:
    """Lines of ``source`` calling Arrow's ``group_by`` or ``join`` (two or more arguments,
    unlike ``str.join``; not a filesystem's or ``os.path``'s ``join``) without
    ``use_threads=False``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, receiver = node.func.attr, ast.unparse(node.func.value)
        paths = receiver.endswith(("fs", "path"))
        if name == "group_by" or (name == "join" and len(node.args) >= 2 and not paths):
            threads = [k.value for k in node.keywords if k.arg == "use_threads"]
            if not (threads and isinstance(threads[0], ast.Constant) and threads[0].value is False):
                found.append(node.lineno)
    return sorted(found)


def test_every_arrow_aggregate_and_join_keeps_a_fixed_row_order() -> None:
    """Arrow's threaded group_by and join return rows in an order that can change between runs
    of the same input (pyarrow: "no stable ordering of the output is guaranteed"): the package
    runs every one single-threaded."""
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for _, path in modules()
        for line in unordered_arrow_calls(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"group_by/join without use_threads=False: {offenders}"


def test_the_row_order_rule_catches_a_threaded_call_and_spares_str_join() -> None:
    source = (
        "a = t.group_by('k').aggregate([])\n"
        "b = t.join(u, 'k', use_threads=False)\n"
        "c = ', '.join(names)\n"
        "d = t.join(u, 'k', join_type='inner')\n"
        "e = t.group_by(['k'], use_threads=False)\n"
        "f = self.fs.join(base, 'files', name)\n"
    )
    assert unordered_arrow_calls(source) == [1, 4]


@pytest.mark.parametrize(
    ("module", "heavy"),
    [
        ("corpus_platform.loader", ("dagster", "torch")),  # read by training code
        # the Dagster process hands shards to workers; only they build the suite
        ("corpus_platform.kernels.ingest.expectations", ("great_expectations",)),
    ],
)
def test_importing_a_light_module_loads_no_heavy_package(module: str, heavy: tuple) -> None:
    code = (
        f"import sys, {module}; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_kernels_are_grouped_by_the_stage_families_of_defs() -> None:
    """``kernels/`` holds one package per stage family, the same families as ``defs/``; a module
    directly under ``kernels/`` would have to serve every family (none does: shared code lives in
    ``base/`` or ``engine/``)."""
    kernels, defs = PACKAGE / "kernels", PACKAGE / "defs"
    loose = sorted(p.name for p in kernels.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules directly under kernels/: {loose}"
    packages = {p.name for p in kernels.iterdir() if (p / "__init__.py").is_file()}
    assert packages == FAMILIES
    assert {p.name for p in defs.iterdir() if (p / "__init__.py").is_file()} >= FAMILIES


def test_tests_mirror_the_package() -> None:
    """Every kernel family has its test folder, and so has every other layer."""
    tests = Path(__file__).parent
    expected = {f"kernels/{family}" for family in FAMILIES}
    expected |= {"base", "config", "engine", "loader", "store", "defs"}
    assert not {d for d in expected if not (tests / d).is_dir()}


def test_importing_the_loader_leaves_the_environment_unchanged() -> None:
    """Training code imports the loader; it must not find its environment changed (allocators,
    Great Expectations settings): per-process settings belong to the engine's workers. The child
    starts from a minimal environment, since this test process has imported the package."""
    minimal = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    code = (
        "import json, os; before = dict(os.environ); import corpus_platform.loader; "
        "import corpus_platform.definitions; "
        "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=minimal
    )
    assert done.stdout.strip() == "[]"

"""The import direction of docs/architecture.md holds: import-linter's contracts (pyproject.toml,
[tool.importlinter]) are kept by the package, and broken by a copy of it with one upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torchdoctor

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(torchdoctor.__file__).parent


def _lint_imports(python_path: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(python_path)}, capture_output=True, text=True,
                          timeout=120)


def test_the_package_keeps_every_import_contract():
    proc = _lint_imports(PACKAGE.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_analysis_that_imports_the_workflow_breaks_the_layers(tmp_path):
    copy = tmp_path / "src" / "torchdoctor"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "trace" / "__init__.py").open("a") as f:
        f.write("\nfrom torchdoctor.workflow import diagnose_traces  # an upward import\n")
    proc = _lint_imports(copy.parent)
    assert proc.returncode != 0
    assert "torchdoctor.trace -> torchdoctor.workflow" in proc.stdout, proc.stdout


def _import_cycles(graph) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def test_no_two_modules_import_each_other_even_indirectly():
    import grimp

    graph = grimp.build_graph("torchdoctor", include_external_packages=False)
    # A package's __init__ re-exporting its submodules is not a cycle of behaviour: leave out the
    # edges from a package to its own children.
    for module in list(graph.modules):
        for child in graph.find_children(module):
            if graph.direct_import_exists(importer=module, imported=child):
                graph.remove_import(importer=module, imported=child)
    assert _import_cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    import grimp

    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert _import_cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_diagnose_leaves_torch_to_the_observed_script(tmp_path):
    """The parent process reads Records and traces, never tensors: importing torch there would cost
    every `diagnose` about 2 s of CPU and 180 MB (it once came in through a knob's helper)."""
    script = ROOT / "tests" / "observe" / "scripts" / "train_tensors.py"
    argv = ["torchdoctor", "diagnose", "--warmup-steps", "2", "--steps", "6", "--profile-wait", "0", "--profile-warmup",
            "1", "--profile-active", "1", "--json", str(tmp_path / "record.json"), "--store", str(tmp_path / "runs.db"),
            "--", str(script)]
    report = ("import atexit, runpy, sys\n"
              "atexit.register(lambda: print('MODULES', 'torch' in sys.modules,"
              " 'torchdoctor.rules.data' in sys.modules, file=sys.stderr))\n"
              f"sys.argv = {argv!r}\n"
              "runpy.run_module('torchdoctor', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", report], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert (tmp_path / "record.json").exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "MODULES False True" in proc.stderr, proc.stderr[-2000:]  # the rules ran, torch was not imported


def test_the_scripts_process_carries_no_source_editor(tmp_path):
    """`run --apply` and an observed run import torchdoctor's knobs into the user's process; the
    code that writes knobs into source files (libcst) stays out of it: it cost every run ~0.25 s
    and 15,000 objects the script's garbage collections walked."""
    from torchdoctor.launch import LaunchConfig, ObserveConfig, observe

    script = tmp_path / "train.py"
    script.write_text("import sys, torch\n"
                      "print('LIBCST', 'libcst' in sys.modules, file=sys.stderr)\n"
                      "model = torch.nn.Linear(2, 1)\n"
                      "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                      "for _ in range(12):\n"
                      "    model(torch.randn(4, 2)).sum().backward(); opt.step(); opt.zero_grad()\n")
    kept = tmp_path / "kept.json"
    kept.write_text('{"schema_version": 1, "kept": {"zero_grad_set_to_none": true}}')
    applied = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--apply", str(kept), "--", str(script)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert "LIBCST False" in applied.stderr, applied.stderr[-2000:]
    log = tmp_path / "observed.log"
    record = observe(script, [], ObserveConfig(warmup_steps=2, timing_steps=5, profile=False, memory=False,
                                               knobs={"zero_grad_set_to_none": True}),
                     LaunchConfig(log_path=str(log)), out_dir=tmp_path / "run")
    assert record.steps and "LIBCST False" in log.read_text(), log.read_text()[-2000:]

"""`torchdoctor bench`: is B faster than A? Interleaved runs, a CI of the ratio, a verdict.

Three modes, one per invocation:
  torchdoctor bench --vs 'CMD_B' -- CMD_A            whole commands (A after `--`)
  torchdoctor bench --script a.py --script b.py      Python scripts (the first is the baseline)
  torchdoctor bench --stmt 'x @ x' --stmt 'torch.mm(x, x)' --setup 'x = torch.randn(N, N)' \\
      --param N=256,512                              statements, one table row per value
"""

from __future__ import annotations

import ast
import shlex
import string
import sys
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

import typer

from torchdoctor.bench.errors import BenchInputError

if TYPE_CHECKING:
    from torchdoctor.bench import BenchResult, Policy, RoundInfo

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("bench", context_settings=_CONTEXT)(bench)


def bench(
    command_a: Optional[list[str]] = typer.Argument(None, help="Command A (the baseline), after `--`."),
    vs: Optional[list[str]] = typer.Option(None, "--vs", help="Command B, as one quoted string; repeatable."),
    script: Optional[list[Path]] = typer.Option(None, "--script", help="A Python script; repeatable, first is A."),
    stmt: Optional[list[str]] = typer.Option(None, "--stmt", help="A statement; repeatable, first is A."),
    setup: str = typer.Option("pass", help="Statement mode: code run once per variant before timing."),
    param: Optional[str] = typer.Option(None, help="Statement mode: a sweep NAME=v1,v2,... (table rows)."),
    name: Optional[list[str]] = typer.Option(None, "--name", help="Variant names, in order."),
    budget_s: float = typer.Option(60.0, help="Measuring time allowed per table row, seconds."),
    min_rounds: int = typer.Option(5, help="Rounds before the first verdict."),
    max_rounds: int = typer.Option(40, help="Most rounds per table row."),
    min_effect: float = typer.Option(0.02, help="Smallest relative effect ever claimed (0.02 = 2%)."),
    aa: bool = typer.Option(True, "--aa/--no-aa", help="Measure A twice per round to set the noise floor."),
    confidence: float = typer.Option(0.95, help="Confidence of the decision, over all looks."),
    round_s: float = typer.Option(0.1, help="Statement mode: time per variant per round, seconds."),
    clock: str = typer.Option("wall", help="Statement mode: 'wall', or 'cpu' (CPU-bound code on a busy machine)."),
    timeout_s: float = typer.Option(600.0, help="Per-run timeout, seconds."),
    allow_mixed_devices: bool = typer.Option(False, help="Allow variants on different devices."),
    seed: int = typer.Option(0, help="Seed of the run order and the bootstrap."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the JSON document here ('-': stdout)."),
) -> None:
    """Decide whether B is faster than A, honestly: interleaved runs, bootstrap CI, noise floor."""
    from torchdoctor.bench import Policy

    policy = Policy(min_rounds, max_rounds, budget_s, min_effect, confidence, aa, seed)
    mode = _mode(command_a, vs, script, stmt)
    if mode == "statements":
        variants = _names(name, list(stmt or []), letters=True)
        results = _run_statements(variants, setup, param, policy, round_s, timeout_s, allow_mixed_devices, clock)
    else:
        argvs = _argvs(mode, command_a or [], vs or [], script or [])
        names = _names(name, [str(p) for p in script] if script else [shlex.join(a) for a in argvs],
                       letters=mode == "commands")
        variants = {n: shlex.join(argv) for n, argv in zip(names, argvs)}
        results = _run_processes(dict(zip(names, argvs)), policy, timeout_s)
    _emit(mode, variants, policy, results, json_out)


def _mode(command_a: Any, vs: Any, script: Any, stmt: Any) -> str:
    chosen = [m for m, given in (("commands", vs or command_a), ("scripts", script), ("statements", stmt)) if given]
    if len(chosen) != 1:
        raise BenchInputError(
            "give exactly one kind of variant: `--vs 'CMD_B' -- CMD_A`, `--script a.py --script b.py`, "
            f"or `--stmt A --stmt B`; got {chosen or 'none'}"
        )
    return chosen[0]


def _argvs(mode: str, command_a: list[str], vs: list[str], scripts: list[Path]) -> list[list[str]]:
    if mode == "scripts":
        argvs = [[sys.executable, str(path)] for path in scripts]
    else:
        if not command_a or not vs:
            raise BenchInputError("command mode needs both `--vs 'CMD_B'` and `-- CMD_A`")
        argvs = [list(command_a), *[shlex.split(b) for b in vs]]
    if len(argvs) < 2:
        raise BenchInputError("give at least two variants to compare")
    return argvs


def _names(given: list[str] | None, texts: list[str], letters: bool = False) -> dict[str, str]:
    """Variant name -> what it runs. Default names: A, B, ... (or, for scripts, their paths)."""
    if len(texts) < 2:
        raise BenchInputError("give at least two variants to compare")
    if given and len(given) != len(texts):
        raise BenchInputError(f"--name given {len(given)} time(s) for {len(texts)} variants")
    names = given or (list(string.ascii_uppercase[: len(texts)]) if letters else texts)
    if len(set(names)) != len(names):
        raise BenchInputError(f"variant names must differ, got {names}; name them with --name")
    return dict(zip(names, texts))


def _sweep(param: str | None) -> list[dict[str, Any]]:
    """--param N=1,2,3 -> [{"N": 1}, {"N": 2}, {"N": 3}]; values are Python literals or strings."""
    if param is None:
        return [{}]
    key, sep, values = param.partition("=")
    if not sep or not key.isidentifier() or not values:
        raise BenchInputError(f"--param must look like NAME=v1,v2,...; got {param!r}")
    return [{key: _literal(v.strip())} for v in values.split(",")]


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _run_statements(
    variants: dict[str, str], setup: str, param: str | None, policy: Policy, round_s: float,
    timeout_s: float, allow_mixed_devices: bool, clock: str,
) -> list[BenchResult]:
    from torchdoctor.bench import Variant, compare_statements

    rows = _sweep(param)
    specs = [Variant(n, s, setup=setup) for n, s in variants.items()]
    labels = [",".join(f"{k}={v}" for k, v in row.items()) for row in rows]
    with _Progress(len(rows), policy) as progress:
        return [
            compare_statements(
                specs, policy=policy, params=row, label=label, round_s=round_s, timeout_s=timeout_s,
                allow_mixed_devices=allow_mixed_devices, clock=clock, on_round=progress.row(i, label),
            )
            for i, (row, label) in enumerate(zip(rows, labels))
        ]


def _run_processes(argvs: dict[str, list[str]], policy: Policy, timeout_s: float) -> list[BenchResult]:
    from torchdoctor.bench import Command, compare_processes

    commands = [Command(n, tuple(argv)) for n, argv in argvs.items()]
    with _Progress(1, policy) as progress:
        on_round = progress.row(0, "")
        return [compare_processes(commands, policy=policy, timeout_s=timeout_s, on_round=on_round)]


def _emit(
    mode: str, variants: dict[str, str], policy: Policy, results: list[BenchResult], json_out: str | None
) -> None:
    from rich.console import Console

    from torchdoctor.bench.document import bench_document
    from torchdoctor.report.bench_table import bench_table
    from torchdoctor.report.safe_text import markup

    console = Console(stderr=json_out == "-")
    for n, text in variants.items():
        if n != text:
            console.print(f"[bold]{markup(n)}[/bold]: {markup(text)}")
    console.print(bench_table(results))
    for result in results:
        for warning in result.warnings:
            console.print(f"[yellow]warning[/yellow] {markup(result.label)}: {markup(warning)}")
    if json_out is not None:
        import orjson

        data = orjson.dumps(bench_document(mode, variants, policy, results), option=orjson.OPT_INDENT_2)
        if json_out == "-":
            sys.stdout.write(data.decode() + "\n")
        else:
            Path(json_out).write_bytes(data)
            console.print(f"JSON written to {markup(json_out)}")


class _Progress:
    """A rich progress bar (stderr) over rounds; each table row counts max_rounds and jumps to its
    end when it settles early."""

    def __init__(self, rows: int, policy: Policy) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=Console(stderr=True))
        self._max_rounds = policy.max_rounds
        self._task = self._bar.add_task("benchmarking", total=rows * policy.max_rounds)

    def __enter__(self) -> _Progress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def row(self, index: int, label: str) -> Callable[[RoundInfo], None]:
        """The on_round callback for table row `index`."""
        base = index * self._max_rounds
        self._bar.update(self._task, completed=base, description=f"benchmarking {label}".strip())

        def on_round(info: RoundInfo) -> None:
            self._bar.update(self._task, completed=base + info.rounds_done)

        return on_round

"""What torch.compile did while a script ran: graphs, graph breaks, recompilations, compile time.

Sources (all private to torch, each behind a probe from torchdoctor.compile.probe):
- `torch._dynamo.utils.get_compilation_metrics()`: one entry per compiled frame (compile id,
  function and file, graph op count, compile time, `recompile_reason` = the guard that failed,
  `fail_reason` = why Dynamo gave up on the frame);
- `torch._dynamo.utils.counters`: `stats.unique_graphs`, `graph_break` reasons with counts;
- the `graph_breaks` / `recompiles` log artifacts (switched on here unless TORCH_LOGS is set):
  the user's file and line of each graph break, and the recompile-limit warning.
Figures are the difference between `start()` and `stop()`, so earlier compilations do not count.

Dynamo is never imported here: importing it costs about 2 s of CPU, which every observation of a
script that does not compile would pay. `torch.compile` imports it when first called, so a script
that compiles after `start()` had nothing compiled before it: its counts start from zero.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import Counter
from dataclasses import replace
from typing import Any

from torchdoctor.compile import logs, probe
from torchdoctor.compile.report import CompileReport, Failure, Frame, GraphBreak, Recompile, RecompileLimit

def _dynamo_imported() -> bool:
    return "torch._dynamo.utils" in sys.modules


def _frame(metric: Any) -> Frame:
    return Frame(
        compile_id=str(getattr(metric, "compile_id", "")),
        function=getattr(metric, "co_name", None),
        filename=getattr(metric, "co_filename", None),
        lineno=getattr(metric, "co_firstlineno", None),
        graph_op_count=getattr(metric, "graph_op_count", None),
        compile_time_s=getattr(metric, "entire_frame_compile_time_s", None),
        start_time_s=getattr(metric, "start_time", None),
        recompile_reason=getattr(metric, "recompile_reason", None),
        fail_reason=getattr(metric, "fail_reason", None),
    )


class CompileCapture:
    """Collects torch.compile activity between `start()` and `stop()` in this process."""

    def __init__(self) -> None:
        self._collector = logs.RecordCollector()
        self._quiet = logs.QuietArtifacts()
        self._quieted: list[logging.Handler] = []
        self._metrics_before = 0
        self._counters_before: dict[str, Counter] = {}
        self._enabled_logs = False
        self.active = False

    def start(self) -> None:
        if _dynamo_imported() and probe.compilation_metrics_support() is None:
            from torch._dynamo.utils import get_compilation_metrics

            self._metrics_before = len(get_compilation_metrics())
        if _dynamo_imported() and probe.counters_support() is None:
            from torch._dynamo.utils import counters

            self._counters_before = {k: Counter(v) for k, v in counters.items()}
        self._enable_logs()
        logging.getLogger("torch._dynamo").addHandler(self._collector)
        self.active = True

    def _enable_logs(self) -> None:
        if probe.logging_support() is not None or os.environ.get("TORCH_LOGS"):
            return  # the user's own log settings win; lines come from their output then
        import torch._logging

        torch._logging.set_logs(graph_breaks=True, recompiles=True)
        self._enabled_logs = True
        for name in ("torch", "torch._dynamo"):
            for handler in logging.getLogger(name).handlers:
                handler.addFilter(self._quiet)
                self._quieted.append(handler)

    def stop(self) -> CompileReport:
        """Undo the logging changes and return what was compiled since `start()`."""
        self.active = False
        logging.getLogger("torch._dynamo").removeHandler(self._collector)
        for handler in self._quieted:
            handler.removeFilter(self._quiet)
        if self._enabled_logs:
            import torch._logging

            torch._logging.set_logs()
        report = self._read_logs(CompileReport())
        if _dynamo_imported():  # else nothing was compiled: no figure to read, none unavailable
            report = self._read_counters(self._read_metrics(report))
            report = replace(report, unavailable=tuple(r for r in (
                probe.compilation_metrics_support(), probe.counters_support(), probe.logging_support()) if r))
        breaks = sum(report.graph_break_reasons.values()) or sum(b.count for b in report.graph_breaks)
        return replace(report, graph_break_count=breaks)

    def _read_metrics(self, report: CompileReport) -> CompileReport:
        if probe.compilation_metrics_support() is not None:
            return report
        from torch._dynamo.utils import get_compilation_metrics

        frames = tuple(_frame(m) for m in list(get_compilation_metrics())[self._metrics_before:])
        return replace(
            report, frames=frames, compile_time_s=sum(f.compile_time_s or 0.0 for f in frames),
            recompiles=tuple(Recompile(f.function, f.filename, f.lineno,
                                       f.recompile_reason.splitlines()[0].split("  #")[0].strip())
                             for f in frames if f.recompile_reason),
            failures=tuple(Failure(f.function, f.filename, f.lineno, f.fail_reason) for f in frames if f.fail_reason))

    def _read_counters(self, report: CompileReport) -> CompileReport:
        if probe.counters_support() is not None:
            return report
        from torch._dynamo.utils import counters

        before = self._counters_before
        delta = {k: Counter(v) - before.get(k, Counter()) for k, v in counters.items()}
        return replace(report, graph_count=delta.get("stats", Counter()).get("unique_graphs", 0),
                       graph_break_reasons={logs.reason_of(reason): n
                                            for reason, n in delta.get("graph_break", Counter()).items()})

    def _read_logs(self, report: CompileReport) -> CompileReport:
        lines: Counter = Counter()
        for _, message in self._collector.messages:
            found = logs.parse_graph_break(message)
            if found is not None:
                lines[found] += 1
            limit = logs.parse_limit(message)
            if limit is not None:
                report = replace(report, recompile_limit_hit=RecompileLimit(*limit))
        return replace(report, graph_breaks=tuple(GraphBreak(b.filename, b.lineno, b.reason, n)
                                                  for b, n in lines.most_common()))

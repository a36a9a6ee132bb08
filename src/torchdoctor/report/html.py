"""HTML renderer: one self-contained, offline page (no network requests) for one Record.

The page is a Jinja2 template (`static/report.html.j2`, autoescaped: every string from a trace,
a script or a path goes through HTML escaping) with the CSS and the script of `static/` inlined.
Tables and the breakdown bars are drawn here; the per-step chart, the step timeline, the memory
chart and the whole run's timeline (report/whole_run_html.py prepares its bands) are drawn in the
browser by `static/report.js` from the Record's JSON (and the whole run's view), embedded in a
`<script type="application/json">` block with `<`, `>`, `&`, U+2028 and U+2029 written as `\\uXXXX`
escapes, and put into the page with `textContent` only. A Content-Security-Policy allows only that
one inline script (by its hash) and inline styles, so even a missed escape could not load anything.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import orjson
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from torchdoctor.analyse.caveats import record_caveats
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.environment import Environment
from torchdoctor.jsonfields import Keyed, readable
from torchdoctor.report.accounting_html import accounting_view
from torchdoctor.report.rank_heatmap import rank_step_heatmap, slow_device_rows
from torchdoctor.report.distributed_html import rank_bars
from torchdoctor.report.whole_run_html import whole_run_view
from torchdoctor.rules import all_rules
from torchdoctor.record import Record
from torchdoctor.trace.summary.rank import RankSummary
from torchdoctor.trace.summary.trace_summary import TraceSummary
from torchdoctor.report.format import fmt_count, fmt_percent, fmt_seconds, median_step_parts
from torchdoctor.report.console_findings import evidence_text, fix_parts, ranked

_BREAKDOWN = (
    ("data_wait_fraction", "DataLoader wait", "#c0399b"),
    ("forward_fraction", "forward", "#1f9fbf"),
    ("backward_fraction", "backward", "#3366cc"),
    ("optimizer_fraction", "optimizer step", "#2e9e50"),
    ("other_fraction", "other (not in a hook)", "#9a9a9a"),
)
_TRACE_BREAKDOWN = (
    ("kernel_us", "device kernels", "#2e9e50"), ("memcpy_us", "memcpy", "#d9534f"),
    ("memset_us", "memset", "#e6a700"), ("communication_us", "communication", "#8e44ad"),
    ("runtime_us", "CUDA runtime", "#f08a24"), ("dataloader_us", "DataLoader", "#c0399b"),
    ("cpu_exec_us", "CPU execution", "#3366cc"), ("other_us", "other", "#9a9a9a"),
)  # fmt: skip
_FORMATTER = HtmlFormatter(nowrap=True, style="friendly")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _static(name: str) -> str:
    return resources.files("torchdoctor.report").joinpath("static", name).read_text(encoding="utf-8")


def script_json(value: Any) -> Markup:
    """JSON safe inside a `<script>` element: no `<`, `>`, `&` (so no `</script>`), no line separators."""
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=str).decode("utf-8")
    return Markup("".join(_JSON_ESCAPES.get(ch, ch) for ch in text))


def _bar(parts: list[tuple[str, str, float, str]]) -> list[dict[str, Any]]:
    """Segments of a 100%-wide bar: label, colour, share of the total, and a caption."""
    total = sum(value for _, _, value, _ in parts) or 1.0
    return [{"label": label, "colour": colour, "share": value / total, "caption": caption}
            for label, colour, value, caption in parts if value > 0]  # fmt: skip


def breakdown_bars(record: Record) -> list[dict[str, Any]]:
    """The step-time bars: measured host wall time (always), and the profiled steps by trace category."""
    s, bars = record.summary, []
    if s.num_steps:
        medians = median_step_parts(record.steps)  # the statistic the console table and the rules use
        if medians is not None:
            step = medians["step"] or 1.0
            parts = [(label, colour, medians[key.removesuffix("_fraction")] / step,
                      f"{fmt_percent(medians[key.removesuffix('_fraction')] / step)}, "
                      f"{fmt_seconds(medians[key.removesuffix('_fraction')])} per step")
                     for key, label, colour in _BREAKDOWN]  # fmt: skip
        else:
            parts = [(label, colour, getattr(s, key) or 0.0, f"{fmt_percent(getattr(s, key))}, "
                      f"{fmt_seconds((getattr(s, key) or 0.0) * (s.step_s or 0.0))} per step")
                     for key, label, colour in _BREAKDOWN]  # fmt: skip
        bars.append({"title": f"Median step {fmt_seconds(s.step_s)}, host wall time", "segments": _bar(parts)})
    rank = _first_rank(record)
    breakdown = rank.breakdown_us if rank is not None else {}
    steps = (rank.steps_count if rank is not None else 0) or 1
    if breakdown:
        total = sum(breakdown.values()) or 1.0
        parts = [(label, colour, breakdown.get(key, 0.0), f"{100 * breakdown.get(key, 0.0) / total:.1f}%, "
                  f"{fmt_seconds(breakdown.get(key, 0.0) / steps / 1e6)} per step")
                 for key, label, colour in _TRACE_BREAKDOWN]  # fmt: skip
        bars.append({"title": f"Profiled steps ({steps}), by what ran (trace)", "segments": _bar(parts)})
    return bars


def _trace(record: Record) -> TraceSummary | None:
    """The Record's trace summary; None when absent or unreadable (then drawn as absent)."""
    return readable(TraceSummary.from_dict, record.trace)


def _has_timeline(trace: TraceSummary | None) -> bool:
    return trace is not None and bool(trace.timeline or trace.rank_timelines)


def _heatmap(trace: TraceSummary | None) -> dict[str, Any] | None:
    return rank_step_heatmap(trace.multi_rank.step_matrix) if trace is not None else None


def _slow_devices(trace: TraceSummary | None) -> dict[str, Any] | None:
    return slow_device_rows(trace.multi_rank.slow_devices) if trace is not None else None


def _first_rank(record: Record) -> RankSummary | None:
    trace = _trace(record)
    return trace.ranks[0] if trace is not None and trace.ranks else None


def top_operators(record: Record, limit: int = 12) -> dict[str, list[dict[str, Any]]]:
    """Top host operators by self time and top device kernels, per profiled step (first rank)."""
    rank = _first_rank(record)
    if rank is None:
        return {"host": [], "device": []}
    steps = rank.steps_count or 1
    host = [{"name": op.name, "count": fmt_count(op.count / steps),
             "time": fmt_seconds(op.self_us / steps / 1e6), "mean": fmt_seconds(op.mean_self_us / 1e6)}
            for op in rank.host.top_by_self_time[:limit]]  # fmt: skip
    kernels = rank.device.kernels.top[:limit] if rank.device is not None else ()
    device = [{"name": k.name, "count": fmt_count(k.count / steps),
               "time": fmt_seconds(k.total_us / steps / 1e6), "mean": fmt_seconds(k.mean_us / 1e6),
               "share": fmt_percent(k.share_fraction)}
              for k in kernels]  # fmt: skip
    return {"host": host, "device": device}


def finding_views(record: Record) -> list[dict[str, Any]]:
    """Findings, ranked, with their fix code highlighted by Pygments (which escapes it)."""
    views = []
    for finding in ranked(record.findings):
        text, code = fix_parts(finding)
        views.append({
            "id": finding.id, "layer": finding.layer, "severity": finding.severity, "title": finding.title,
            "explanation": finding.explanation, "knob": finding.knob or "",
            "upside": f"{100 * finding.upside:.0f}%",
            "upside_width": min(max(float(finding.upside), 0.0), 1.0),
            "evidence": [(str(k), evidence_text({k: v})[len(str(k)) + 1 :]) for k, v in finding.evidence.items()],
            "fix_text": text,
            "fix_code": Markup(highlight(code, PythonLexer(), _FORMATTER)) if code else "",
        })  # fmt: skip
    return views


def environment_sections(record: Record) -> list[tuple[str, list[tuple[str, str]]]]:
    """Environment fingerprint sections as (title, [(key, value)]); nested values as compact JSON."""
    env = Environment.or_empty(record.env)
    parts = (("versions", env.versions), ("devices", env.devices), ("cpu", env.cpu), ("torch", env.torch),
             ("env vars", env.env_vars), ("distributed", env.distributed))
    out = []
    for title, part in parts:
        section = part.to_dict() if isinstance(part, Keyed) else part or {}
        if section:
            rows = [(str(k), v if isinstance(v, str) else orjson.dumps(v, default=str).decode()) for k, v in section.items()]
            out.append((title, rows))
    return out


def _figures(record: Record) -> list[tuple[str, str]]:
    s = record.summary
    rows = [("script", " ".join([record.script or "(trace files)", *record.argv])), ("run", record.run_id),
            ("recorded", record.created_at), ("exit", f"{record.exit.reason} ({record.exit.status})")]  # fmt: skip
    if s.num_steps:
        rows.append(("median step", f"{fmt_seconds(s.step_s)} (p10 {fmt_seconds(s.step_s_p10)}, "
                                    f"p90 {fmt_seconds(s.step_s_p90)}) over {s.num_steps} steps"))  # fmt: skip
    if s.samples_per_s:
        rows.append(("throughput", f"{s.samples_per_s:,.1f} samples/s"))
    return rows + [("trace", str(path)) for path in record.artifacts.get("traces", [])]


class HtmlRenderer:
    """The Record as one self-contained HTML page (see the module docstring)."""

    extension = "html"

    def render(self, record: Record) -> str:
        env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
        script = _static("report.js")
        digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
        whole_run = whole_run_view(record)
        return env.from_string(_static("report.html.j2")).render(
            title=Path(record.script).name if record.script else "trace files", figures=_figures(record),
            bars=breakdown_bars(record), rank_bars=rank_bars(readable(DistributedSection.from_dict, record.distributed)), ops=top_operators(record), findings=finding_views(record),
            accounting=accounting_view(record, len(all_rules())),
            environment=environment_sections(record), warnings=record.warnings, caveats=record_caveats(record),
            memory=record.memory is not None,
            timeline=_has_timeline(_trace(record)), heatmap=_heatmap(_trace(record)), slow_devices=_slow_devices(_trace(record)), record_json=script_json(record.to_dict()),
            whole_run=whole_run, whole_run_json=script_json(whole_run),
            css=Markup(_static("report.css")), code_css=Markup(_FORMATTER.get_style_defs(".code")),
            script=Markup(script), script_hash=digest,
        )  # fmt: skip

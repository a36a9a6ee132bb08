"""HTML pieces of the distributed analysis: per-rank step-time bars (for the Record's report) and
the scaling curve of `torchdoctor scale` as a self-contained page with an inline SVG chart.

Both are drawn here as plain markup (no script), through Jinja2's autoescaping, so they need no
change to the report's Content-Security-Policy.
"""

from __future__ import annotations

from typing import Any

import jinja2

from torchdoctor.distributed.section import DistributedSection
from torchdoctor.report.format import fmt_seconds


def rank_bars(distributed: DistributedSection | None) -> list[dict[str, Any]]:
    """One bar per rank: width = its median step over the slowest rank's, split into the time
    outside backward (`work_s`) and in backward (where DDP ranks wait for each other)."""
    rows = distributed.per_rank if distributed is not None else ()
    longest = max((r.step_s for r in rows), default=0.0)
    if distributed is None or longest <= 0:
        return []
    stragglers = {s.rank for s in distributed.stragglers}
    return [{"rank": r.rank, "width": r.step_s / longest,
             "work_share": r.work_s / r.step_s if r.step_s > 0 else 0.0,
             "caption": f"step {fmt_seconds(r.step_s)}: {fmt_seconds(r.work_s)} outside backward, "
                        f"{fmt_seconds(r.backward_s)} in backward, {fmt_seconds(r.data_wait_s)} data wait",
             "straggler": r.rank in stragglers} for r in rows]  # fmt: skip


_W, _H, _PAD = 560, 320, 48
_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>torchdoctor scale: {{ script }}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}
td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}.subtle{color:#777}</style></head>
<body><h1>Scaling of {{ script }} <span class="subtle">{{ unit }}</span></h1>
<svg width="{{ w }}" height="{{ h }}" role="img" aria-label="throughput per number of processes">
<line x1="{{ pad }}" y1="{{ h - pad }}" x2="{{ w - pad }}" y2="{{ h - pad }}" stroke="#999"/>
<line x1="{{ pad }}" y1="{{ pad }}" x2="{{ pad }}" y2="{{ h - pad }}" stroke="#999"/>
{% if ideal %}<polyline points="{{ ideal }}" fill="none" stroke="#bbb" stroke-dasharray="4 4"/>{% endif %}
<polyline points="{{ measured }}" fill="none" stroke="#3366cc" stroke-width="2"/>
{% for p in points %}<circle cx="{{ p.x }}" cy="{{ p.y }}" r="4" fill="#3366cc"><title>{{ p.label }}</title></circle>
<text x="{{ p.x }}" y="{{ h - pad + 16 }}" text-anchor="middle" font-size="12">{{ p.nproc }}</text>{% endfor %}
<text x="{{ w / 2 }}" y="{{ h - 8 }}" text-anchor="middle" font-size="12">processes</text>
<text x="12" y="{{ pad - 12 }}" font-size="12">throughput ({{ unit }}); dashed: linear scaling</text>
</svg>
<table><tr><th>processes</th><th>throughput</th><th>speed-up</th><th>efficiency</th><th>exit</th></tr>
{% for s in sizes %}<tr><td>{{ s.nproc }}</td><td>{{ s.throughput }}</td><td>{{ s.speedup }}</td><td>{{ s.efficiency }}</td><td>{{ s.exit_reason }}</td></tr>{% endfor %}
</table>
<ul>{% for f in findings %}<li>{{ f.id }} ({{ f.severity }}): {{ f.title }}. {{ f.fix.text }}</li>{% endfor %}</ul>
</body></html>
"""


def _fmt(value: float | None, pattern: str) -> str:
    return pattern.format(value) if value is not None else "-"


def _points(sizes: list[dict[str, Any]], top: float) -> tuple[list[dict[str, Any]], dict[int, float]]:
    """Chart coordinates: sizes evenly spaced along x, throughput from 0 to `top` along y."""
    measured = [s for s in sizes if s["throughput_per_s"] is not None]
    span = max(len(sizes) - 1, 1)
    xs = {s["nproc"]: _PAD + i * (_W - 2 * _PAD) / span for i, s in enumerate(sizes)}
    points = [{"nproc": s["nproc"], "x": round(xs[s["nproc"]], 1),
               "y": round(_H - _PAD - (_H - 2 * _PAD) * s["throughput_per_s"] / top, 1),
               "label": f"{s['nproc']} processes: {s['throughput_per_s']:,.1f}"} for s in measured]  # fmt: skip
    return points, xs


def scale_html(doc: dict[str, Any]) -> str:
    """The `scale` document (docs/distributed.md) as one self-contained HTML page."""
    sizes = doc["sizes"]
    base = next((s["throughput_per_s"] for s in sizes if s["nproc"] == 1 and s["throughput_per_s"]), None)
    ideal_top = base * sizes[-1]["nproc"] if base else 0.0
    top = max([ideal_top] + [s["throughput_per_s"] or 0.0 for s in sizes]) or 1.0
    points, xs = _points(sizes, top)
    ideal = " ".join(f"{xs[s['nproc']]:.1f},{_H - _PAD - (_H - 2 * _PAD) * base * s['nproc'] / top:.1f}"
                     for s in sizes) if base else ""  # fmt: skip
    rows = [{"nproc": s["nproc"], "throughput": _fmt(s["throughput_per_s"], "{:,.1f}"),
             "speedup": _fmt(s.get("speedup"), "{:.2f}x"), "efficiency": _fmt(s.get("efficiency"), "{:.0%}"),
             "exit_reason": s["exit_reason"]} for s in sizes]  # fmt: skip
    unit = next((s["unit"] for s in sizes if s.get("unit")), "")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return env.from_string(_PAGE).render(
        script=doc["script"], unit=unit, w=_W, h=_H, pad=_PAD, points=points, ideal=ideal,
        measured=" ".join(f"{p['x']},{p['y']}" for p in points), sizes=rows, findings=doc["findings"])

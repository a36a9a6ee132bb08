// torchdoctor HTML report: draws the per-step chart, the step timeline (per rank), the memory chart
// and the whole run's timeline from the embedded Record (and the whole run's view). Every string goes into the page through textContent (never innerHTML),
// so names taken from traces or scripts stay text.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var record = JSON.parse(document.getElementById("td-record").textContent);
  var STEP_PARTS = [["data_wait_s", "DataLoader wait", "#c0399b"], ["forward_s", "forward", "#1f9fbf"],
    ["backward_s", "backward", "#3366cc"], ["optimizer_s", "optimizer step", "#2e9e50"]];
  var KIND_COLOURS = { annotation: "#b9a6d8", cpu_op: "#5b8fd6", runtime: "#f08a24", kernel: "#2e9e50",
    memcpy: "#d9534f", memset: "#e6a700" };
  var MEMORY_COLOURS = ["#3366cc", "#2e9e50", "#f08a24", "#c0399b", "#1f9fbf", "#9a9a9a", "#e6a700"];

  function el(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function svg(width, height) {
    return el("svg", { viewBox: "0 0 " + width + " " + height, preserveAspectRatio: "xMinYMin meet", role: "img" });
  }
  function tip(node, text) { node.appendChild(el("title", {}, text)); return node; }
  function fmt(seconds) {
    if (seconds >= 1) return seconds.toFixed(3) + " s";
    if (seconds >= 1e-3) return (seconds * 1e3).toFixed(2) + " ms";
    return (seconds * 1e6).toFixed(1) + " \u00b5s";
  }
  function fmtBytes(bytes) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i++; }
    return bytes.toFixed(i ? 1 : 0) + " " + units[i];
  }
  function legend(root, items) {
    var ul = document.createElement("ul");
    ul.className = "legend";
    items.forEach(function (item) {
      var li = document.createElement("li"), sw = document.createElement("span");
      sw.className = "swatch"; sw.style.background = item[1];
      li.appendChild(sw); li.appendChild(document.createTextNode(item[0])); ul.appendChild(li);
    });
    root.appendChild(ul);
  }

  // Stacked column per measured step; "other" is the step's wall time not inside a hook.
  function drawSteps(root, steps) {
    if (!root || !steps || !steps.length) return;
    var W = 1100, H = 170, left = 64, bottom = 22, top = 8;
    var max = Math.max.apply(null, steps.map(function (s) { return s.wall_s; })) || 1;
    var chart = svg(W, H), colW = (W - left) / steps.length;
    [0, 0.5, 1].forEach(function (f) {
      var y = top + (H - top - bottom) * (1 - f);
      chart.appendChild(el("line", { x1: left, x2: W, y1: y, y2: y, stroke: "#dfe3e8" }));
      chart.appendChild(el("text", { x: left - 6, y: y + 4, "text-anchor": "end", "class": "axis" }, fmt(max * f)));
    });
    steps.forEach(function (s, i) {
      var y = H - bottom, scale = (H - top - bottom) / max, used = 0;
      var parts = STEP_PARTS.concat([["other", "other", "#9a9a9a"]]);
      parts.forEach(function (p) {
        var value = p[0] === "other" ? Math.max(s.wall_s - used, 0) : (s[p[0]] || 0);
        used += value;
        var h = value * scale;
        if (h <= 0) return;
        y -= h;
        chart.appendChild(tip(el("rect", { x: left + i * colW + 1, y: y, width: Math.max(colW - 2, 1), height: h, fill: p[2] }),
          "step " + s.index + ": " + p[1] + " " + fmt(value) + " of " + fmt(s.wall_s)));
      });
      if (steps.length <= 40 || i % Math.ceil(steps.length / 40) === 0)
        chart.appendChild(el("text", { x: left + (i + 0.5) * colW, y: H - 6, "text-anchor": "middle", "class": "axis" }, s.index));
    });
    root.appendChild(chart);
    legend(root, STEP_PARTS.map(function (p) { return [p[1], p[2]]; }).concat([["other", "#9a9a9a"]]));
  }

  // One row per nesting depth in each lane (host thread or device stream); x is time in the step.
  // Several timelines (one per rank) are stacked as lane groups on one shared time axis, each
  // aligned at its own step start, with a dark tick at the end of that rank's step.
  function drawTimelines(root, tls) {
    tls = (tls || []).filter(function (tl) { return tl && tl.events && tl.events.length; });
    if (!root || !tls.length) return;
    var multi = tls.length > 1, W = 1100, left = multi ? 210 : 150, row = 16, maxDepth = 10, y = 20;
    var span = Math.max.apply(null, tls.map(function (tl) { return tl.span_us || 0; })) || 1, scale = (W - left) / span;
    var layouts = tls.map(function (tl) {
      var depth = tl.lanes.map(function () { return 0; }), offsets = [], top = y;
      tl.events.forEach(function (e) { depth[e.lane] = Math.max(depth[e.lane], Math.min(e.depth, maxDepth) + 1); });
      depth.forEach(function (d) { offsets.push(y); y += d * row + 10; });
      y += multi ? 8 : 0;
      return { tl: tl, offsets: offsets, top: top, bottom: y - (multi ? 12 : 4) };
    });
    var chart = svg(W, y + 4);
    for (var i = 0; i <= 4; i++) {
      var x = left + (W - left) * i / 4;
      chart.appendChild(el("line", { x1: x, x2: x, y1: 14, y2: y, stroke: "#eef0f3" }));
      chart.appendChild(el("text", { x: x, y: 11, "text-anchor": i === 4 ? "end" : "middle", "class": "axis" }, fmt(span * i / 4 / 1e6)));
    }
    layouts.forEach(function (layout) { chart.appendChild(laneGroup(layout, multi, left, scale, row, maxDepth)); });
    var caption = document.createElement("p");
    caption.className = "subtle";
    caption.textContent = timelineCaption(tls) + " Hover a bar for its name and duration.";
    root.appendChild(caption);
    root.appendChild(chart);
    legend(root, Object.keys(KIND_COLOURS).map(function (k) { return [k, KIND_COLOURS[k]]; }));
  }

  function laneGroup(layout, multi, left, scale, row, maxDepth) {
    var tl = layout.tl, group = el("g", { "class": "rank-lanes", "data-rank": tl.rank });
    if (multi) {
      group.appendChild(el("line", { x1: 0, x2: 1100, y1: layout.top - 5, y2: layout.top - 5, stroke: "#c4cad1" }));
      var end = left + tl.wall_us * scale;
      group.appendChild(tip(el("line", { x1: end, x2: end, y1: layout.top - 3, y2: layout.bottom, stroke: "#1d232a", "stroke-width": 1.5 }),
        "rank " + tl.rank + ": ProfilerStep#" + tl.step + " ends at +" + fmt(tl.wall_us / 1e6)));
    }
    tl.lanes.forEach(function (lane, i) {
      group.appendChild(el("text", { x: 4, y: layout.offsets[i] + 12, "class": "axis lane-label" }, (multi ? "rank " + tl.rank + " · " : "") + lane.label));
    });
    tl.events.forEach(function (e) {
      if (e.depth > maxDepth) return;
      var x = left + e.start_us * scale, w = Math.max(e.dur_us * scale, 0.5), yy = layout.offsets[e.lane] + e.depth * row;
      var g = el("g", {});
      g.appendChild(el("rect", { x: x, y: yy, width: w, height: row - 2, fill: KIND_COLOURS[e.kind] || "#999", rx: 1 }));
      if (w > 40) {
        var chars = Math.floor((w - 6) / 6.2), name = e.name.length > chars ? e.name.slice(0, chars - 1) + "\u2026" : e.name;
        g.appendChild(el("text", { x: x + 3, y: yy + row - 5 }, name));
      }
      group.appendChild(tip(g, e.name + " (" + e.kind + "): " + fmt(e.dur_us / 1e6) + " at +" + fmt(e.start_us / 1e6)));
    });
    return group;
  }

  function timelineCaption(tls) {
    var drawn = 0, total = 0, dropped = false;
    tls.forEach(function (tl) { drawn += tl.events_count - tl.dropped_count; total += tl.events_count; dropped = dropped || tl.dropped_count > 0; });
    var counts = drawn + " of " + total + " events drawn" + (dropped ? " (the longest)" : "") + ".";
    if (tls.length === 1)
      return "ProfilerStep#" + tls[0].step + " (median step of the trace), " + fmt(tls[0].wall_us / 1e6) + " host wall time; " + counts;
    return "ProfilerStep#" + tls[0].step + " of " + tls.length + " ranks, each aligned at its step start (host wall time: " +
      tls.map(function (tl) { return "rank " + tl.rank + " " + fmt(tl.wall_us / 1e6) + (tl.step !== tls[0].step ? " (step " + tl.step + ")" : ""); }).join(", ") +
      "); " + counts;
  }

  // Stacked areas of memory.timeline = {t_s: [...], series: {name: [bytes, ...]}}, else the peak's
  // memory.categories_bytes as one stack, else the figures as text.
  function drawMemory(root, memory) {
    if (!root || !memory) return;
    var tl = memory.timeline, cats = memory.categories_bytes || (memory.breakdown || {}).categories_bytes;
    if (!(tl && tl.series) && cats && typeof cats === "object") {  // composition at the peak: one flat stack
      tl = { t_s: [0, 1], series: {} };
      Object.keys(cats).forEach(function (k) { if (cats[k] > 0) tl.series[k] = [cats[k], cats[k]]; });
    }
    var names = tl && tl.series ? Object.keys(tl.series) : [];
    if (!names.length || !tl.t_s || tl.t_s.length < 2) {
      var p = document.createElement("p");
      p.className = "subtle";
      p.textContent = "No memory timeline in this Record; figures: " + JSON.stringify(memory).slice(0, 400);
      root.appendChild(p);
      return;
    }
    var W = 1100, H = 200, left = 70, t = tl.t_s, n = t.length, base = t.map(function () { return 0; });
    var total = t.map(function (_, i) { return names.reduce(function (a, k) { return a + (tl.series[k][i] || 0); }, 0); });
    var max = Math.max.apply(null, total) || 1, t0 = t[0], dt = (t[n - 1] - t0) || 1, chart = svg(W, H + 20);
    function px(i, v) { return (left + (t[i] - t0) / dt * (W - left)).toFixed(1) + "," + (H - v / max * (H - 10)).toFixed(1); }
    names.forEach(function (k, j) {
      var lower = base.slice(), upper = base.map(function (b, i) { return b + (tl.series[k][i] || 0); }), pts = [];
      for (var i = 0; i < n; i++) pts.push(px(i, upper[i]));
      for (i = n - 1; i >= 0; i--) pts.push(px(i, lower[i]));
      chart.appendChild(tip(el("polygon", { points: pts.join(" "), fill: MEMORY_COLOURS[j % MEMORY_COLOURS.length], opacity: 0.85 }), k));
      base = upper;
    });
    chart.appendChild(el("text", { x: left - 6, y: 14, "text-anchor": "end", "class": "axis" }, fmtBytes(max)));
    chart.appendChild(el("text", { x: left - 6, y: H, "text-anchor": "end", "class": "axis" }, "0"));
    root.appendChild(chart);
    legend(root, names.map(function (k, j) { return [k, MEMORY_COLOURS[j % MEMORY_COLOURS.length]]; }));
  }

  function fmtClock(seconds) {
    if (seconds < 120) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
    if (seconds < 7200) return (seconds / 60).toFixed(1) + " min";
    return (seconds / 3600).toFixed(1) + " h";
  }
  var BAND_COLOURS = { startup: "#9a9a9a", end: "#9a9a9a", slow: "#d9534f", warmup: "#e6a700", windows: "#8e44ad", straggler: "#ff7f0e" };

  // The run's clock on x; above, each step's time (log scale: steady steps and stalls both show);
  // below, memory; shaded bands across both where the badput lies, each with its cause on hover.
  function drawWholeRun(root, view) {
    if (!root || !view || !(view.wall_s > 0)) return;
    var W = 1100, left = 70, top = 8, H1 = 150, gap = 26, H2 = 100, wall = view.wall_s;
    var chart = svg(W, top + H1 + gap + H2 + 20), x = function (t) { return left + t / wall * (W - left); };
    view.bands.forEach(function (b) {
      chart.appendChild(tip(el("rect", { x: x(b.start_s), y: top, width: Math.max(x(b.end_s) - x(b.start_s), 1),
        height: H1 + gap + H2, fill: BAND_COLOURS[b.kind] || "#d9534f", opacity: 0.25, "class": "band band-" + b.kind }), b.label));
    });
    for (var i = 0; i <= 4; i++)
      chart.appendChild(el("text", { x: x(wall * i / 4), y: top + H1 + gap + H2 + 14, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle", "class": "axis" }, fmtClock(wall * i / 4)));
    stepLine(chart, view, x, top, H1, left);
    memoryLine(chart, view, x, top + H1 + gap, H2, left);
    root.appendChild(chart);
    var items = [["step time", "#3366cc"], ["memory", "#2e9e50"], ["slow steps", BAND_COLOURS.slow],
      ["start-up and the end", BAND_COLOURS.startup]];
    if (view.stragglers && view.stragglers.length) items.push(["a straggling rank", BAND_COLOURS.straggler]);
    legend(root, items);
  }

  function stepLine(chart, view, x, top, H, left) {
    var pts = [], t = view.t_s || [], d = view.step_s || [];
    var values = d.filter(function (v) { return v > 0; });
    if (!values.length) return;
    var lo = Math.log10(Math.min.apply(null, values)), hi = Math.log10(Math.max.apply(null, values));
    if (hi - lo < 1) hi = lo + 1;
    var y = function (v) { return top + H - (Math.log10(v) - lo) / (hi - lo) * H; };
    for (var i = 0; i < t.length; i++) {  // a staircase: each step flat from its start to its end
      if (!(d[i] > 0)) continue;
      pts.push(x(t[i] - d[i]).toFixed(1) + "," + y(d[i]).toFixed(1), x(t[i]).toFixed(1) + "," + y(d[i]).toFixed(1));
    }
    chart.appendChild(el("polyline", { points: pts.join(" "), fill: "none", stroke: "#3366cc", "stroke-width": 1.2, "class": "step-line" }));
    chart.appendChild(el("text", { x: left - 6, y: top + 10, "text-anchor": "end", "class": "axis" }, fmt(Math.pow(10, hi))));
    chart.appendChild(el("text", { x: left - 6, y: top + H, "text-anchor": "end", "class": "axis" }, fmt(Math.pow(10, lo))));
    chart.appendChild(el("text", { x: left + 4, y: top + 10, "class": "axis" }, "step time (log scale)"));
  }

  function memoryLine(chart, view, x, top, H, left) {
    var pts = [], t = view.memory_t_s || [], m = view.memory_bytes || [];
    var max = Math.max.apply(null, m.filter(function (v) { return v !== null; }).concat([0]));
    if (!(max > 0)) return;
    for (var i = 0; i < t.length; i++) if (m[i] !== null) pts.push(x(t[i]).toFixed(1) + "," + (top + H - m[i] / max * H).toFixed(1));
    chart.appendChild(el("polyline", { points: pts.join(" "), fill: "none", stroke: "#2e9e50", "stroke-width": 1.2, "class": "memory-line" }));
    chart.appendChild(el("text", { x: left - 6, y: top + 10, "text-anchor": "end", "class": "axis" }, fmtBytes(max)));
    chart.appendChild(el("text", { x: left - 6, y: top + H, "text-anchor": "end", "class": "axis" }, "0"));
    chart.appendChild(el("text", { x: left + 4, y: top + 10, "class": "axis" }, "memory"));
  }

  var wholeRun = document.getElementById("td-whole-run-data");
  drawWholeRun(document.getElementById("td-whole-run"), wholeRun ? JSON.parse(wholeRun.textContent) : null);
  drawSteps(document.getElementById("td-steps"), record.steps);
  var trace = record.trace || {}, ranks = trace.rank_timelines || [];
  drawTimelines(document.getElementById("td-timeline"), ranks.length >= 2 ? ranks : [trace.timeline]);
  drawMemory(document.getElementById("td-memory"), record.memory);
})();

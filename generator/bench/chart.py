"""A workload's figures as an SVG chart, and a run as a text table."""


from __future__ import annotations

import math
from xml.sax.saxutils import escape

from generator.bench.measure import FRAMEWORK_COLOURS, SHORT_LABELS


# --- chart -----------------------------------------------------------------------------------------------
def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _fmt_tick(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale * 0.999:
            return f"{seconds / scale:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def _log_axis(values: list[float]) -> tuple[float, float]:
    lo = 10 ** math.floor(math.log10(min(values)))
    if min(values) / lo < 2:  # leave the shortest bar some length
        lo /= 10
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10
    return lo, hi


def render_chart_svg(workload_result: dict) -> str:
    """A static, accessible SVG bar chart of one workload: steady-state step time (median, with the p10-p90
    range as a whisker) and first-step time, per variant, on log scales. No script; every bar has a text label."""
    wid = "".join(c if c.isalnum() or c == "-" else "-" for c in str(workload_result.get("id", "workload")))
    title = str(workload_result.get("title", wid))
    variants = list(workload_result.get("variants", {}).items())
    row_h, top, label_w, panel_w, value_w, gap = 22, 58, 180, 200, 70, 14
    panels = [("Steady-state step (median, p10-p90)", "step_median_s"), ("First step, incl. compile", "compile_s")]
    width = label_w + len(panels) * (panel_w + value_w + gap)
    height = top + row_h * max(1, len(variants)) + 40
    ok = [(vid, v) for vid, v in variants if v.get("status") == "ok" and v.get("step_median_s")]
    desc_parts = [f"{v.get('label', vid)}: median step {_fmt_s(v['step_median_s'])} wall, {_fmt_s(v.get('step_cpu_median_s'))} CPU, "
                  f"first step {_fmt_s(v.get('compile_s'))}" for vid, v in ok]  # fmt: skip
    desc_parts += [f"{v.get('label', vid)}: {v.get('status')}" for vid, v in variants if (vid, v) not in ok]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="bench-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="chart-{wid}-title chart-{wid}-desc">',
        f'<title id="chart-{wid}-title">{escape(title)}: time per step by framework and mode (log scale, shorter is faster)</title>',
        f'<desc id="chart-{wid}-desc">{escape("; ".join(desc_parts) or "no measurements")}.</desc>',
    ]  # styled by the site's stylesheet (.bench-chart): a strict CSP forbids inline <style>
    for p, (caption, key) in enumerate(panels):
        x0 = label_w + p * (panel_w + value_w + gap)
        out.append(f'<text x="{x0}" y="16" font-weight="bold">{escape(caption)}</text>')
        values = [v[key] for _, v in ok if v.get(key)]
        if key == "step_median_s":
            values += [v[k] for _, v in ok for k in ("step_p10_s", "step_p90_s", "step_cpu_median_s") if v.get(k)]
        if not values:
            continue
        lo, hi = _log_axis(values)
        decades = round(math.log10(hi / lo))

        def xpos(value, x0=x0, lo=lo, decades=decades):
            return x0 + panel_w * (math.log10(max(value, lo)) - math.log10(lo)) / decades

        for d in range(decades + 1):
            tick = lo * 10**d
            x = x0 + panel_w * d / decades
            out.append(
                f'<line class="grid" x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{top + row_h * len(variants)}"/>'
            )
            out.append(
                f'<text class="axis" x="{x:.1f}" y="{top - 12}" text-anchor="middle">{escape(_fmt_tick(tick))}</text>'
            )
        for i, (_vid, v) in enumerate(variants):
            y = top + i * row_h
            value = v.get(key) if v.get("status") == "ok" else None
            if not value:
                continue
            colour = FRAMEWORK_COLOURS.get(v.get("framework", ""), "#666")
            x1 = xpos(value)
            out.append(
                f'<rect x="{x0}" y="{y + 4}" width="{max(1.0, x1 - x0):.1f}" height="{row_h - 8}" fill="{colour}"/>'
            )
            if key == "step_median_s" and v.get("step_p10_s") and v.get("step_p90_s"):
                a, b = xpos(v["step_p10_s"]), xpos(v["step_p90_s"])
                yc = y + row_h / 2
                out.append(f'<line class="whisker" x1="{a:.1f}" y1="{yc}" x2="{b:.1f}" y2="{yc}"/>')
                out.append(f'<line class="whisker" x1="{a:.1f}" y1="{yc - 4}" x2="{a:.1f}" y2="{yc + 4}"/>')
                out.append(f'<line class="whisker" x1="{b:.1f}" y1="{yc - 4}" x2="{b:.1f}" y2="{yc + 4}"/>')
            if key == "step_median_s" and v.get("step_cpu_median_s"):
                xc, yc = xpos(v["step_cpu_median_s"]), y + row_h / 2
                out.append(
                    f'<path class="cpu" d="M{xc:.1f} {yc - 5:.1f} L{xc + 4:.1f} {yc:.1f} L{xc:.1f} {yc + 5:.1f} L{xc - 4:.1f} {yc:.1f} Z"/>'
                )
            out.append(f'<text x="{x0 + panel_w + 6}" y="{y + row_h - 7}">{escape(_fmt_s(value))}</text>')
    for i, (vid, v) in enumerate(variants):
        y = top + i * row_h
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h - 7}" text-anchor="end">{escape(SHORT_LABELS.get(vid, v.get("label", vid)))}</text>'
        )
        if v.get("status") != "ok" or not v.get("step_median_s"):
            out.append(f'<text class="status" x="{label_w}" y="{y + row_h - 7}">{escape(_status_text(v))}</text>')
    steps = max((v.get("steps") or 0) for _, v in variants) if variants else 0
    out.append(f'<text class="axis" x="8" y="{height - 18}">Log scales. Bars: median wall time, whiskers: 10th-90th percentile '
               f'of up to {steps} timed steps;</text>')  # fmt: skip
    out.append(
        f'<text class="axis" x="8" y="{height - 5}">Diamonds: median CPU time per step (short of the bar end: the step waited '
        "for a core; beyond it: work on a second thread).</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _status_text(v: dict) -> str:
    status = v.get("status", "missing")
    return {"failed": "failed the equal-work check", "error": "error: did not run",
            "skipped": "skipped: time budget", "none": "none: no such API"}.get(status, status)  # fmt: skip


# --- the table ---------------------------------------------------------------------------------------------
def format_table(bench: dict) -> str:
    lines = []
    m = bench["machine"]
    load = bench.get("load_avg")
    lines.append(f"CPU benchmarks: {m['cpu']}, {m['cores']} cores; {bench['date']}; wall {bench['wall_s']:.1f}s "
                 f"(budget {bench['budget_s']:.0f}s){f'; load average {load[0]:.1f}' if load else ''}"
                 f"{'; from cache' if bench.get('cached') else ''}{'' if bench.get('complete', True) else '; INCOMPLETE'}")  # fmt: skip
    lines.append(
        "medians and percentiles of wall time per step; cpu ms: median CPU time per step (one thread per framework)"
    )
    lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in bench["versions"].items()))
    head = (f"{'workload':<19} {'variant':<42} {'status':<8} {'loss':>10} {'first s':>8} {'median ms':>10} {'p10 ms':>8} "
            f"{'p90 ms':>8} {'cpu ms':>8} {'steps':>5}")  # fmt: skip
    lines.append(head)
    lines.append("-" * len(head))
    for wid, w in bench["workloads"].items():
        for vid, v in w["variants"].items():

            def ms(key, v=v):
                return f"{v[key] * 1e3:.2f}" if v.get(key) is not None else "-"

            loss = f"{v['loss']:.6f}" if v.get("loss") is not None else "-"
            first = f"{v['compile_s']:.2f}" if v.get("compile_s") is not None else "-"
            lines.append(f"{wid:<19} {v.get('label', vid):<42} {v['status']:<8} {loss:>10} {first:>8} {ms('step_median_s'):>10} "
                         f"{ms('step_p10_s'):>8} {ms('step_p90_s'):>8} {ms('step_cpu_median_s'):>8} {v.get('steps') or 0:>5}")  # fmt: skip
        ref = w.get("reference") or {}
        lines.append(f"{'':<19} reference (NumPy float64): " + ", ".join(f"{k} {val:.6f}" for k, val in ref.items()))
    problems = [
        (wid, vid, v.get("reason", ""))
        for wid, w in bench["workloads"].items()
        for vid, v in w["variants"].items()
        if v["status"] in ("failed", "error", "skipped")
    ]
    if problems:
        lines.append("")
        lines += [f"  {wid}/{vid}: {reason}" for wid, vid, reason in problems]
    lines.append("")
    lines.append(
        "workers: "
        + "; ".join(
            f"{k} {i['status']} {i['wall_s']:.1f}s (import {i['import_s'] or 0:.1f}s)"
            for k, i in bench["workers"].items()
        )
    )
    return "\n".join(lines)

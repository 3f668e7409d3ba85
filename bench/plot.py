#!/usr/bin/env python3
"""Draws the server suite's charts from bench-results/server.json.

    python3 bench/plot.py bench-results/server.json docs/

writes three PNGs into the output directory:

* bench-memory.png      resident bytes per entry per workload, densekv beside redis-server
                        (a missing bar is n/a: densekv lacks the workload's commands);
* bench-throughput.png  densekv / redis-server requests per second per redis-benchmark test,
                        at -P 1 and -P 16, with the 1.0 line (the issues' target);
* bench-growth.png      bytes per entry against N (log scale) per workload and server.

The Rust harness (`cargo run --release -p bench -- server`) runs this after writing the JSON;
it only reads the JSON, so it can be rerun by hand after editing the style.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on the benchmark machine
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLORS = {"densekv": "#2a9d8f", "redis": "#d1495b"}


def memory_chart(report, out):
    rows = report["memory"]
    if not rows:
        return
    names = [r["workload"] for r in rows]
    width = 0.38
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for offset, server in ((-width / 2, "densekv"), (width / 2, "redis")):
        values = [r[f"{server}_rss_per_entry"] for r in rows]
        xs = [i + offset for i, v in enumerate(values) if v is not None]
        ys = [v for v in values if v is not None]
        bars = ax.bar(xs, ys, width, label=server, color=COLORS[server])
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
        for i, v in enumerate(values):
            if v is None:
                ax.text(i + offset, 0, "n/a", ha="center", va="bottom", fontsize=8, color="grey")
    ax.set_xticks(range(len(names)), [f"{r['workload']}\nper {r['entry_unit']}" for r in rows],
                  fontsize=8)
    ax.set_ylabel("resident bytes per entry (ΔVmRSS / N)")
    ax.set_title(f"Memory per entry, N = {report['config']['n']:,}")
    # Patches rather than the bars: a server with no bar at all (n/a) still gets its colour.
    ax.legend(handles=[Patch(color=c, label=s) for s, c in COLORS.items()])
    fig.tight_layout()
    fig.savefig(out / "bench-memory.png", dpi=110)
    plt.close(fig)


def throughput_chart(report, out):
    rows = report["throughput"]
    if not rows:
        return
    tests = list(dict.fromkeys(r["test"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.38
    any_ratio = False
    depths = ((-width / 2, 1, "#264653"), (width / 2, 16, "#e9c46a"))
    for offset, pipeline, color in depths:
        ratio = {r["test"]: r["rps_ratio"] for r in rows if r["pipeline"] == pipeline}
        xs = [i + offset for i, t in enumerate(tests) if ratio.get(t) is not None]
        ys = [ratio[t] for t in tests if ratio.get(t) is not None]
        any_ratio |= bool(ys)
        ax.bar(xs, ys, width, label=f"-P {pipeline}", color=color)
        for i, t in enumerate(tests):
            if ratio.get(t) is None:
                ax.text(i + offset, 0.02, "n/a", ha="center", va="bottom", fontsize=7,
                        color="grey", rotation=90)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(tests)), tests, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("densekv / redis-server requests/s")
    ax.set_ylim(bottom=0, top=max(1.5, ax.get_ylim()[1]) if any_ratio else 1.5)
    title = "Throughput ratio per redis-benchmark test (above 1: densekv faster)"
    if not any_ratio:
        title += "\n(no test measured on both servers yet)"
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=c, label=f"-P {p}") for _, p, c in depths])
    fig.tight_layout()
    fig.savefig(out / "bench-throughput.png", dpi=110)
    plt.close(fig)


def growth_chart(report, out):
    rows = report["growth_memory"]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    cmap = plt.get_cmap("tab10")
    for index, workload in enumerate(workloads):
        points = sorted((r for r in rows if r["workload"] == workload), key=lambda r: r["entries"])
        for server, style in (("densekv", "-"), ("redis", "--")):
            pts = [(r["entries"], r[f"{server}_rss_per_entry"]) for r in points
                   if r[f"{server}_rss_per_entry"] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                        color=cmap(index % 10), label=f"{workload} ({server})")
    ax.set_xscale("log")
    ax.set_xlabel("N entries")
    ax.set_ylabel("resident bytes per entry")
    ax.set_title("Memory per entry as N grows (solid: densekv, dashed: redis-server)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "bench-growth.png", dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py SERVER_JSON OUT_DIR")
    report = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    memory_chart(report, out)
    throughput_chart(report, out)
    growth_chart(report, out)


if __name__ == "__main__":
    main()

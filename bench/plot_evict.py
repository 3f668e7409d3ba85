#!/usr/bin/env python3
"""Draws the evict suite's charts from its JSON (evict.json).

    python3 bench/plot_evict.py bench-results/evict.json docs/

writes two PNGs into the output directory:

* bench-evict-delete.png  VmRSS (MiB) against seconds from the last DEL, for delete-half and
                          delete-all side by side, densekv beside redis-server (one line per
                          round; the dotted line marks when the figure is read);
* bench-evict-fill.png    used_memory and VmRSS (MiB) against SETs sent during the lru-fill
                          run, both servers, with the maxmemory line.

The Rust harness (`cargo run --release -p bench -- evict`) runs this after writing the JSON; it
only reads the JSON, so it can be rerun by hand after editing the style. A chart whose scenario
did not run is skipped.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on the benchmark machine
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {"densekv": "#2a9d8f", "redis": "#d1495b"}
MIB = 1024 * 1024


def legend_handles(styles=None):
    """One entry per server (and per line style, when a chart draws two figures)."""
    handles = [Line2D([], [], color=c, label=s) for s, c in COLORS.items()]
    for label, style in (styles or {}).items():
        handles.append(Line2D([], [], color="grey", linestyle=style, label=label))
    return handles


def delete_chart(report, out):
    rounds = report["delete_rounds"]
    if not rounds:
        return
    at = report["config"]["at_secs"]
    panels = (("half", "delete-half: DEL of every other key"), ("all", "delete-all: DEL of every key"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, (deletion, title) in zip(axes, panels):
        drawn = False
        for sample in (s for s in rounds if s["deletion"] == deletion):
            series = sample["series"]
            if not series:
                continue
            ax.plot([p["t_secs"] for p in series], [p["rss_bytes"] / MIB for p in series],
                    color=COLORS[sample["server"]], linewidth=1.2, alpha=0.8)
            drawn = True
        ax.axvline(0.0, color="black", linewidth=0.6)
        ax.axvline(at, color="black", linewidth=0.8, linestyle=":")
        ax.set_title(title if drawn else f"{title}\n(not measured)", fontsize=10)
        ax.set_xlabel("seconds from the last DEL reply (before 0: deleting)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("VmRSS (MiB)")
    axes[0].legend(handles=legend_handles(), fontsize=8)
    n = report["config"]["n"]
    fig.suptitle(f"Memory returned after DEL, {n:,} keys of 16 bytes (dotted: read at {at} s)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "bench-evict-delete.png", dpi=110)
    plt.close(fig)


def fill_chart(report, out):
    rounds = report["fill_rounds"]
    if not rounds:
        return
    fig, ax = plt.subplots(figsize=(9, 4.8))
    limits = set()
    for sample in rounds:
        series = sample["series"]
        color = COLORS[sample["server"]]
        xs = [p["done"] for p in series]
        ax.plot(xs, [p["rss_bytes"] / MIB for p in series], color=color, linestyle="--",
                linewidth=1.0, alpha=0.8)
        used = [(p["done"], p["used_bytes"] / MIB) for p in series if p["used_bytes"] is not None]
        if used:
            ax.plot([u[0] for u in used], [u[1] for u in used], color=color, linewidth=1.4,
                    alpha=0.9)
        if sample["maxmemory_bytes"]:
            limits.add(sample["maxmemory_bytes"])
    for limit in limits:
        ax.axhline(limit / MIB, color="black", linewidth=0.8, linestyle=":")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e6:g}M" if x else "0"))
    ax.set_xlabel("SETs sent")
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    config = report["config"]
    ax.set_title(f"{config['fill_sets']:,} SETs of {config['fill_value_bytes']}-byte values under "
                 f"--maxmemory {config['fill_maxmemory']} allkeys-lru (dotted: maxmemory)",
                 fontsize=10)
    ax.legend(handles=legend_handles({"used_memory": "-", "VmRSS": "--"}), fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "bench-evict-fill.png", dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_evict.py EVICT_JSON OUT_DIR")
    report = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    delete_chart(report, out)
    fill_chart(report, out)


if __name__ == "__main__":
    main()

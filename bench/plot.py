#!/usr/bin/env python3
"""plot: pictures of `convgen bench` JSON reports, as SVG and PNG: a roofline, per-layer speedups, a network breakdown.

Usage: convgen plot [--out DIR] [--gpu DESCRIPTOR.json] REPORT.json[.gz]...   (or bench/plot.py with the same arguments)

For each suite of each report (written next to the report unless --out), with STEM the report's file name without
.json/.json.gz (STEM_SUITE when the report holds several suites):
  STEM_roofline.{svg,png}  every layer's achieved FLOP/s against its arithmetic intensity (FLOPs / fewest bytes),
                           ours and cuDNN's best, under the descriptor's compute peak (of the report's precision) and
                           DRAM bandwidth; one colour per batch
  STEM_speedup.{svg,png}   cuDNN best / ours per layer, one panel per batch, with the 1.0 line
  STEM_network.{svg,png}   Σ count × time and Σ count × energy per call, stacked by layer, cuDNN's best beside ours,
                           one column per batch
Times are each row's headline mode (graph replay where both sides were captured, bench/README.md). The GPU
descriptor is the gpus/*.json of the report's architecture whose file name's model (h100 of h100_sxm.json) is a
word of the report's GPU name, or words of it joined (rtx2080ti); --gpu names one. Descriptors carry no L2
bandwidth, so the roofline has no L2 ceiling.
"""
import argparse
import gzip
import io
import json
import math
import re
import sys
from pathlib import Path

try:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from PIL import Image
except ImportError:
    sys.exit(f"convgen plot: error: {sys.executable} has no matplotlib (Debian: apt-get install python3-matplotlib, "
             "which scripts/setup.sh does; $CONVGEN_PYTHON chooses the interpreter)")

from network_table import headline, layer_times  # noqa: E402 (this folder)

# Text stays text in the SVG (searchable layer names); no dates or random ids, so a regenerated picture diffs clean.
plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "convgen", "font.size": 9})
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
MATH = {"strict_fp32": "strict FP32 FMA", "tf32": "TF32 tensor cores", "tensor_op": "tensor cores, FP32 accumulation"}
# The repository's gpus/ beside bench/, or the copy the build puts beside convgen-plot/plot.py.
GPUS = next((d for d in (Path(__file__).resolve().parent.parent / "gpus", Path(__file__).resolve().parent / "gpus")
             if d.is_dir()), Path(__file__).resolve().parent.parent / "gpus")


class PlotError(Exception):
    pass


def load_json(path, what):
    """The parsed JSON file `path` (gzipped when it ends in .gz); PlotError naming the file and `what` it should be."""
    path = Path(path)
    if not path.is_file():
        raise PlotError(f"{path}: no such file (expected {what})")
    try:
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlotError(f"{path}: expected {what}, but it does not parse: {e}") from None


def load_report(path):
    report = load_json(path, "a `convgen bench` JSON report, .json or .json.gz")
    if not isinstance(report, dict) or report.get("schema") != 1 or "provenance" not in report or "rows" not in report:
        raise PlotError(f"{path}: expected a `convgen bench` JSON report (\"schema\": 1 with provenance and rows)")
    if not report["rows"]:
        raise PlotError(f"{path}: the report has no rows")
    # `convgen bench` keeps what a run cut short measured as <stem>.partial.json: its pictures say so, since the
    # network totals then cover only the layers measured.
    report["partial"] = ".partial.json" in Path(path).name
    return report


def load_descriptor(report, path, named):
    """The GPU descriptor: the --gpu file, or the gpus/*.json that matches the report's GPU name and architecture."""
    if named:
        return load_json(named, "a GPU descriptor like gpus/h100_sxm.json")
    gpu, arch = report["provenance"]["gpu"], report["provenance"]["arch"]
    words = re.split(r"[\s-]+", gpu.lower())
    # Runs of whole words, joined: "rtx2080ti" in "NVIDIA GeForce RTX 2080 Ti", but no "l4" in "NVIDIA L40S".
    models = {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    for candidate in sorted(GPUS.glob("*.json")):
        descriptor = load_json(candidate, "a GPU descriptor")
        if candidate.stem.split("_")[0] in models and descriptor.get("arch") == arch:
            return descriptor
    raise PlotError(f"{path}: no descriptor in gpus/ matches the report's GPU '{gpu}' ({arch}); name one with --gpu")


def flops(problem):
    """FLOPs of one forward pass, 2 per multiply-add (include/convgen/problem.hpp)."""
    return 2 * problem["n"] * problem["k"] * problem["o"] * problem["p"] * problem["q"] * (
        problem["c"] // problem["groups"]) * problem["t"] * problem["r"] * problem["s"]


def min_bytes(problem):
    """The fewest bytes a forward pass moves: each tensor once."""
    p = problem
    elements = (p["n"] * p["c"] * p["d"] * p["h"] * p["w"] + p["k"] * (p["c"] // p["groups"]) * p["t"] * p["r"] * p["s"]
                + p["n"] * p["k"] * p["o"] * p["p"] * p["q"])
    return elements * ELEMENT_BYTES[p["precision"]]


def batches(rows):
    return sorted({row["batch"] for row in rows})


def layer_names(rows):
    return list(dict.fromkeys(row["layer"] for row in rows))


def activation_text(rows):
    """What the activations were: dense, one zero fraction, or per-layer zero fractions."""
    kinds = {row.get("activation") or "dense random" for row in rows}
    if kinds == {"dense random"}:
        return "dense activations"
    if len(kinds) == 1:
        return f"activations {kinds.pop()}"
    zeros = [row.get("zero_fraction", 0) for row in rows]
    return f"sparse activations, {100 * min(zeros):.0f}–{100 * max(zeros):.0f}% zeros by layer"


def title(report, suite, rows, what):
    provenance = report["provenance"]
    precisions = ", ".join(dict.fromkeys(f"{row['precision']} ({MATH.get(row['math'], row['math'])})" for row in rows))
    batch_list = ", ".join(str(b) for b in batches(rows))
    modes = " and ".join(sorted({"graph-replay" if row["headline_mode"] == "graph" else "stream" for row in rows}))
    partial = ", a partial run (its first layers only)" if report.get("partial") else ""
    return (f"{suite}: {what} ({modes} medians{partial})\n{provenance['gpu']} ({provenance['arch']}), {precisions}, "
            f"batch {batch_list}, {activation_text(rows)}, {'warm' if report.get('warm') else 'cold'} L2, "
            f"cuDNN {provenance['cudnn']}")


def batch_colours(rows):
    palette = plt.get_cmap("tab10")
    return {b: palette(i % 10) for i, b in enumerate(batches(rows))}


def plot_roofline(report, suite, rows, descriptor):
    fig, ax = plt.subplots(figsize=(8, 5.5), layout="constrained")
    precision = rows[0]["precision"]
    peak = descriptor[f"peak_{precision}_tflops"] * 1e12
    bandwidth = descriptor["dram_bandwidth_gbs"] * 1e9
    colours = batch_colours(rows)
    intensities = [flops(row["problem"]) / min_bytes(row["problem"]) for row in rows]
    lowest, highest = peak / 100, peak
    for batch, colour in colours.items():
        for side, marker in (("ours", "o"), ("cudnn_best", "x")):
            points = [(intensity, flops(row["problem"]) / (us * 1e-6)) for intensity, row in zip(intensities, rows)
                      if row["batch"] == batch and (us := headline(row[side], row["headline_mode"]))
                      and (side != "ours" or row["ours"]["status"] == "ok")]
            if points:
                lowest = min([lowest] + [y for _, y in points])
                highest = max([highest] + [y for _, y in points])  # Winograd's fewer multiplies: above the peak
                ax.scatter(*zip(*points), marker=marker, s=28, linewidths=1.2, color=colour,
                           facecolors="none" if marker == "o" else None)
    ridge = peak / bandwidth
    x = [min(min(intensities), ridge) / 2, max(max(intensities), ridge) * 2]
    ax.plot([x[0], ridge, x[1]], [x[0] * bandwidth, peak, peak], color="black", linewidth=1.5)
    ax.annotate(f"{precision.upper()} peak {descriptor[f'peak_{precision}_tflops']:g} TFLOP/s", (ridge, peak),
                xytext=(4, 4), textcoords="offset points", ha="left", va="bottom")
    ax.annotate(f"DRAM {descriptor['dram_bandwidth_gbs']:g} GB/s", (x[0], x[0] * bandwidth), xytext=(6, -4),
                textcoords="offset points", ha="left", va="top")
    ax.set(xscale="log", yscale="log", xlim=x, xlabel="arithmetic intensity, FLOPs / fewest bytes (FLOP/B, log scale)",
           ylabel="achieved TFLOP/s (log scale)", title=title(report, suite, rows, "roofline"))
    for axis, scale in ((ax.xaxis, 1), (ax.yaxis, 1e12)):
        axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _, scale=scale: f"{v / scale:g}"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(lowest / 1.5, max(peak, highest) * 2)
    ax.grid(True, which="major", alpha=0.3)
    handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="gray", label="ours"),
               Line2D([], [], marker="x", linestyle="", color="gray", label="cuDNN best")]
    handles += [Line2D([], [], marker="s", linestyle="", color=c, label=f"batch {b}") for b, c in colours.items()]
    ax.legend(handles=handles, loc="lower right")
    sparse = any(row.get("zero_fraction", 0) > 0 for row in rows)
    fig.supxlabel(f"ceilings: gpus/ descriptor '{descriptor['name']}'; no L2 ceiling (the descriptor has no L2 "
                  "bandwidth)\nFLOP/s = the direct convolution's FLOPs ÷ time: Winograd and FFT routes do fewer "
                  "multiplies" + (", skipped zeros too," if sparse else ",") + " so a point can lie above the peak",
                  fontsize=8, color="dimgray", x=0.01, ha="left")
    return fig


def plot_speedup(report, suite, rows):
    names = layer_names(rows)
    groups = batches(rows)
    present = [row["speedup"] for row in rows if row["speedup"]] + [1]
    ticks = [2.0**e for e in range(-6, 7) if min(present) / 1.6 <= 2.0**e <= max(present) * 1.6]
    fig, axes = plt.subplots(1, len(groups), sharey=True, squeeze=False, layout="constrained",
                             figsize=(1.5 + 3 * len(groups), 1.6 + 0.2 * len(names)))
    for ax, batch in zip(axes[0], groups):
        speedups = {row["layer"]: row["speedup"] for row in rows if row["batch"] == batch and row["speedup"]}
        y = range(len(names))
        values = [speedups.get(name, math.nan) for name in names]
        ax.barh(y, [v - 1 for v in values], left=1, height=0.7,
                color=["tab:green" if v >= 1 else "tab:red" for v in values])
        for i, v in zip(y, values):
            ax.annotate("—" if math.isnan(v) else f"{v:.2f}×", (1 if math.isnan(v) else v, i), fontsize=7,
                        xytext=(3 if math.isnan(v) or v >= 1 else -3, 0), textcoords="offset points", va="center",
                        ha="left" if math.isnan(v) or v >= 1 else "right")
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set(xscale="log", xlim=(min(present) / 1.6, max(present) * 1.6), xlabel="cuDNN best ÷ ours (log scale)")
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        measured = [v for v in values if not math.isnan(v)]
        ax.set_title(f"batch {batch}: geometric mean {math.exp(sum(map(math.log, measured)) / len(measured)):.2f}×"
                     if measured else f"batch {batch}: no layer compared")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0][0].set(yticks=range(len(names)), yticklabels=names, ylim=(len(names) - 0.5, -0.5))
    fig.suptitle(title(report, suite, rows, "speedup per layer, > 1: ours faster, —: not compared"))
    return fig


def plot_network(report, suite, rows):
    names = layer_names(rows)
    groups = batches(rows)
    colours = [plt.get_cmap(m)(i) for m in ("tab20", "tab20b", "tab20c") for i in range(20)]
    fig, axes = plt.subplots(2, len(groups), squeeze=False, layout="constrained",
                             figsize=(3.2 * max(len(groups), 2), 7.5))
    left_out = []
    for column, batch in enumerate(groups):
        by_layer = {row["layer"]: row for row in rows if row["batch"] == batch}
        compared = {name: layer_times(row) for name, row in by_layer.items() if layer_times(row)}
        left_out += [f"{name} (batch {batch})" for name in by_layer if name not in compared]
        for ax, (cudnn, ours, unit, what) in zip(axes[:, column], ((0, 1, "µs", "time"), (2, 3, "mJ", "energy"))):
            if any(t[cudnn] is None or t[ours] is None for t in compared.values()) or not compared:
                ax.text(0.5, 0.5, f"{what}: not measured for every layer\n(NVML absent or without the energy counter)",
                        ha="center", va="center", transform=ax.transAxes)
                ax.set(xticks=[], yticks=[])
                continue
            totals = []
            for x, side in enumerate((cudnn, ours)):
                bottom = 0
                for i, name in enumerate(names):
                    if name in compared:
                        value = by_layer[name]["count"] * compared[name][side]
                        ax.bar(x, value, bottom=bottom, width=0.6, color=colours[i % len(colours)], edgecolor="white",
                               linewidth=0.3, label=f"{name} ×{by_layer[name]['count']}" if x == 0 else None)
                        bottom += value
                totals.append(bottom)
                label = f"{bottom:,.0f}" if bottom >= 100 else f"{bottom:.3g}"
                ax.annotate(label, (x, bottom), xytext=(0, 2), textcoords="offset points", ha="center")
            ax.set(xticks=[0, 1], xticklabels=["cuDNN best", "ours"], ylim=(0, max(totals) * 1.1),
                   ylabel=f"Σ count × {what} per call ({unit})",
                   title=f"batch {batch}, {what}\ncuDNN ÷ ours {totals[0] / totals[1]:.2f}×")
    handles, labels = next((ax.get_legend_handles_labels() for ax in axes.flat if ax.get_legend_handles_labels()[0]),
                           ([], []))
    fig.legend(handles[::-1], labels[::-1], loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7,
               title="layer × count (top first)", ncol=1 + len(names) // 30)
    note = f"\nleft out (not compared): {', '.join(left_out)}" if left_out else ""
    fig.suptitle(title(report, suite, rows, "network time and energy by layer") + note)
    return fig


def save(fig, out, stem):
    """Writes STEM.svg and STEM.png; the PNG with a 256-colour palette, a third of the size, for checking in."""
    fig.savefig(out / f"{stem}.svg", bbox_inches="tight", metadata={"Date": None})
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    Image.open(png).convert("RGB").quantize(256).save(out / f"{stem}.png", optimize=True)
    plt.close(fig)
    print(out / f"{stem}.svg", out / f"{stem}.png")


def plot_report(path, out, gpu):
    report = load_report(path)
    descriptor = load_descriptor(report, path, gpu)
    out = Path(out) if out else Path(path).parent
    out.mkdir(parents=True, exist_ok=True)
    stem = Path(path).name.removesuffix(".gz").removesuffix(".json")
    suites = list(dict.fromkeys(row["suite"] for row in report["rows"]))
    for suite in suites:
        rows = [row for row in report["rows"] if row["suite"] == suite]
        prefix = stem if len(suites) == 1 else f"{stem}_{suite}"
        save(plot_roofline(report, suite, rows, descriptor), out, f"{prefix}_roofline")
        if report.get("cudnn_routes", True):
            save(plot_speedup(report, suite, rows), out, f"{prefix}_speedup")
            save(plot_network(report, suite, rows), out, f"{prefix}_network")
    if not report.get("cudnn_routes", True):
        print(f"{path}: cuDNN was not run (convgen bench --ours-only): the roofline only, no speedup or network "
              "picture")


def main():
    parser = argparse.ArgumentParser(prog="convgen plot", description="\n\n".join(__doc__.split("\n\n")[::2]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="`convgen bench` JSON report (.json or .json.gz)")
    parser.add_argument("--out", metavar="DIR", help="folder for the pictures (default: each report's own folder)")
    parser.add_argument("--gpu", metavar="FILE",
                        help="GPU descriptor file for the ceilings (default: matched in gpus/)")
    args = parser.parse_args()
    for path in args.reports:
        try:
            plot_report(path, args.out, args.gpu)
        except PlotError as e:
            sys.exit(f"convgen plot: error: {e}")
        except (KeyError, TypeError) as e:
            sys.exit(f"convgen plot: error: {path}: expected `convgen bench` rows (bench/README.md), missing {e}")


if __name__ == "__main__":
    main()

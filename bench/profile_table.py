#!/usr/bin/env python3
"""profile_table: a network profiled layer by layer, as the ResNet-20 profiling seed did, from `convgen bench` reports.

Usage: bench/profile_table.py REPORT.json[.gz]... > profile.md

Per (suite, precision, batch): each layer's time per call and count × time, its share of the network's total, ours
and cuDNN's best route side by side, in each row's headline mode (graph replay where both sides were captured);
then one summary row per batch: the totals, cuDNN ÷ ours, and the layer that takes the largest share of our time.
A layer either side could not compare is left out of the totals and named below its table.
"""
import sys
from collections import OrderedDict

from fold_table import load
from network_table import layer_times


def share(part, whole):
    return f"{100 * part / whole:.1f}%" if whole else "—"


def profile(rows):
    """(markdown lines, summary) of one (suite, precision, batch) group's rows."""
    compared = [(row, layer_times(row)) for row in rows]
    left_out = [row["layer"] for row, times in compared if times is None]
    compared = [(row, times) for row, times in compared if times is not None]
    cudnn_total = sum(row["count"] * times[0] for row, times in compared)
    ours_total = sum(row["count"] * times[1] for row, times in compared)
    lines = ["| layer | shape | count | cuDNN µs | ours µs | cuDNN count × µs | cuDNN share | ours count × µs | "
             "ours share | speedup |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row, (cudnn_us, ours_us, _, _) in compared:
        count = row["count"]
        lines.append(f"| {row['layer']} | {row['shape']} | {count} | {cudnn_us:.2f} | {ours_us:.2f} | "
                     f"{count * cudnn_us:.2f} | {share(count * cudnn_us, cudnn_total)} | {count * ours_us:.2f} | "
                     f"{share(count * ours_us, ours_total)} | {cudnn_us / ours_us:.2f}× |")
    lines.append(f"| **total** | | {sum(row['count'] for row, _ in compared)} | | | **{cudnn_total:.2f}** | 100% | "
                 f"**{ours_total:.2f}** | 100% | **{cudnn_total / ours_total:.2f}×** |")
    if left_out:
        lines.append(f"\nLeft out (no comparison): {', '.join(left_out)}.")
    heaviest = max(compared, key=lambda c: c[0]["count"] * c[1][1]) if compared else None
    summary = {
        "layers": len(compared),
        "cudnn_total": cudnn_total,
        "ours_total": ours_total,
        "heaviest": (f"{heaviest[0]['layer']} ({share(heaviest[0]['count'] * heaviest[1][1], ours_total)})"
                     if heaviest else "—"),
    }
    return lines, summary


def main():
    paths = sys.argv[1:]
    if not paths or any(p.startswith("-") for p in paths):
        sys.exit(__doc__)
    groups = OrderedDict()
    provenance = []
    for path in paths:
        report = load(path)
        provenance.append((path, report["provenance"]))
        for row in report["rows"]:
            groups.setdefault((row["suite"], row["precision"], row["batch"]), []).append(row)
    first = provenance[0][1]
    print("# Layer-by-layer profile\n")
    print(f"GPU: {first['gpu']} ({first['arch']}); cuDNN {first['cudnn']}; convgen {first['convgen_commit']}.\n")
    for path, p in provenance:
        print(f"- `{p['command_line']}` ({path})")
    print("\nTimes are medians in µs per call (graph replay where both sides were captured). count × µs is the "
          "layer's part of one forward pass; share is that part of the network's total on the same side.\n")
    summaries = []
    for (suite, precision, batch), rows in groups.items():
        lines, summary = profile(rows)
        summaries.append((suite, precision, batch, summary))
        print(f"## {suite}, batch {batch}, {precision}\n")
        print("\n".join(lines))
        print()
    print("## Summary\n")
    print("| suite | precision | batch | layers | cuDNN total µs | ours total µs | cuDNN ÷ ours | "
          "our largest share |")
    print("|---|---|--:|--:|--:|--:|--:|---|")
    for suite, precision, batch, s in summaries:
        ratio = s["cudnn_total"] / s["ours_total"] if s["ours_total"] else float("nan")
        print(f"| {suite} | {precision} | {batch} | {s['layers']} | {s['cudnn_total']:.2f} | {s['ours_total']:.2f} | "
              f"{ratio:.2f}× | {s['heaviest']} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""crosscheck: compares the cuDNN best of bench JSON reports with independently measured figures (a CSV).

Usage: bench/crosscheck.py FIGURES.csv REPORT.json [REPORT.json ...] > crosscheck.md
The figures were taken with back-to-back stream launches, so the comparison uses the bench's stream-mode best
over every verified cuDNN route; the graph-replay best is shown beside it.
"""
import csv
import json
import sys


def key(c, k, h, w, r, s, stride, pad, n):
    return tuple(int(x) for x in (c, k, h, w, r, s, stride, pad, n))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    figures = {}
    with open(sys.argv[1]) as f:
        lines = [line for line in f if not line.startswith("#")]
    for row in csv.DictReader(lines):
        figures[key(row["c"], row["k"], row["h"], row["w"], row["r"], row["s"], row["stride"], row["pad"],
                    row["n"])] = float(row["us"])
    found = {}
    for path in sys.argv[2:]:
        for row in json.load(open(path))["rows"]:
            p = row["problem"]
            if p["layout"] != "nchw" or p["groups"] != 1 or p["d"] != 1:
                continue
            k = key(p["c"], p["k"], p["h"], p["w"], p["r"], p["s"], p["stride"][2], p["padding"][2], p["n"])
            if k not in figures or k in found:
                continue
            ok = [e for e in row["cudnn"] if e["status"] == "ok" and e["median_us"] is not None]
            stream_best = min(ok, key=lambda e: e["median_us"])
            graph = [e for e in ok if e["graph_median_us"] is not None]
            graph_best = min(graph, key=lambda e: e["graph_median_us"]) if graph else None
            found[k] = (row["suite"], row["layer"], stream_best, graph_best)
    print("| layer (C->K RxS stride pad at HxW) | N | reference µs | bench stream best µs | route | bench / reference |"
          " bench graph best µs | graph route |")
    print("|---|--:|--:|--:|---|--:|--:|---|")
    for k, ref in figures.items():
        if k not in found:
            print(f"| {k} | | {ref} | not in the reports | | | | |")
            continue
        c, kk, h, w, r, s, stride, pad, n = k
        suite, layer, sb, gb = found[k]
        ratio = sb["median_us"] / ref
        flag = " **>10%**" if abs(ratio - 1) > 0.10 else ""
        route = f'{sb["route"]}:{sb["algo"]}'
        graph_text = (f'{gb["graph_median_us"]:.1f} | {gb["route"]}:{gb["algo"]}' if gb else "— | —")
        print(f"| {suite}/{layer} ({c}->{kk} {r}x{s} s{stride} p{pad} at {h}x{w}) | {n} | {ref:.1f} | "
              f'{sb["median_us"]:.1f} | {route} | {ratio:.2f}{flag} | {graph_text} |')


if __name__ == "__main__":
    main()

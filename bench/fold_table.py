#!/usr/bin/env python3
"""fold_table: FoldedCNNs' throughput table, folded against unfolded, ours and cuDNN's, from `convgen bench` reports.

Usage: bench/fold_table.py REPORT.json[.gz]... [--analysis DIR] > fold.md

Each report is a bench run of one suite at one batch: an unfolded suite (e.g. noscope_coral at --batch 1024) or its
folded copy written by `convgen fold` (suite name noscope_coral_fold4, seed way, or noscope_coral_xfold4, exact
way; its batch is the images ÷ 4). Per suite, precision and fold: images per pass (batch × f), Σ count × time per
pass over the layers both sides compared (each row's headline mode: graph replay where both were captured), and
the throughput in images per second, ours and cuDNN's best route, and each folded row against the same side
unfolded. With --analysis DIR, the arithmetic intensity of the network (the seed's ai.py: Σ FLOPs over the bytes of
every weight once and every activation in and out) from DIR/<suite>_n<batch>.json (`convgen analyze --json`).
A layer either side could not compare leaves its whole row out (named below the table).
"""
import argparse
import gzip
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

FOLDED = re.compile(r"^(?P<base>.+)_(?P<kind>x?)fold(?P<f>\d+)$")


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def headline(entry, mode):
    if entry is None:
        return None
    return entry["graph_median_us"] if mode == "graph" else entry["median_us"]


def suite_fold(name):
    """(base suite, kind, factor): kind 'none', 'seed' or 'exact'."""
    m = FOLDED.match(name)
    if not m:
        return name, "none", 1
    return m["base"], "exact" if m["kind"] == "x" else "seed", int(m["f"])


def passes(report):
    """Per (suite, batch, precision): Σ count × µs for cuDNN and ours, and the layers left out."""
    out = defaultdict(lambda: {"cudnn": 0.0, "ours": 0.0, "layers": 0, "missing": []})
    for row in report["rows"]:
        key = (row["suite"], row["batch"], row["precision"])
        entry = out[key]
        if row.get("speedup") is None:
            entry["missing"].append(row["layer"])
            continue
        mode = row["headline_mode"]
        entry["cudnn"] += row["count"] * headline(row["cudnn_best"], mode)
        entry["ours"] += row["count"] * headline(row["ours"], mode)
        entry["layers"] += 1
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--analysis", help="folder of `convgen analyze --json` files, <suite>_n<batch>.json")
    args = parser.parse_args()
    rows, gpu = [], None
    for path in args.reports:
        report = load(path)
        gpu = gpu or report["provenance"].get("gpu")
        for (suite, batch, precision), t in passes(report).items():
            base, kind, factor = suite_fold(suite)
            intensity = None
            if args.analysis:
                analysis = Path(args.analysis) / f"{suite}_n{batch}.json"
                if analysis.exists():
                    intensity = load(analysis)["total"]["intensity"]
            rows.append(dict(base=base, kind=kind, factor=factor, suite=suite, batch=batch, precision=precision,
                             images=batch * factor, intensity=intensity, **t))
    if not rows:
        sys.exit("fold_table: error: the reports hold no rows")
    print(f"# FoldedCNNs: throughput folded against unfolded ({gpu})\n")
    print("Images per second = images per pass ÷ Σ count × time per pass (each layer's headline mode). "
          "\"÷ unfolded\": the throughput against the same side's unfolded run of the suite, precision and images.\n")
    print("| suite | precision | fold | images | batch | FLOP/B | cuDNN µs | ours µs | cuDNN img/s | ours img/s | "
          "ours ÷ cuDNN | cuDNN ÷ unfolded | ours ÷ unfolded |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    unfolded = {(r["base"], r["precision"], r["images"]): r for r in rows if r["kind"] == "none"}
    order = {"none": 0, "seed": 1, "exact": 2}
    missing = []
    for r in sorted(rows, key=lambda r: (r["base"], r["precision"], r["images"], order[r["kind"]], r["factor"])):
        if r["missing"]:
            missing.append(f"{r['suite']} n{r['batch']} {r['precision']}: {', '.join(r['missing'])}")
            continue
        cudnn_rate = r["images"] / (r["cudnn"] * 1e-6)
        ours_rate = r["images"] / (r["ours"] * 1e-6)
        base = unfolded.get((r["base"], r["precision"], r["images"]))
        rel = lambda side, rate: (f"{rate / (base['images'] / (base[side] * 1e-6)):.2f}×"
                                  if base and not base["missing"] and r["kind"] != "none" else "—")
        fold = "—" if r["kind"] == "none" else f"{r['factor']} ({r['kind']})"
        intensity = "—" if r["intensity"] is None else f"{r['intensity']:.1f}"
        print(f"| {r['base']} | {r['precision']} | {fold} | {r['images']} | {r['batch']} | {intensity} | "
              f"{r['cudnn']:.1f} | {r['ours']:.1f} | {cudnn_rate:,.0f} | {ours_rate:,.0f} | "
              f"{ours_rate / cudnn_rate:.2f}× | {rel('cudnn', cudnn_rate)} | {rel('ours', ours_rate)} |")
    if missing:
        print("\nLeft out (a layer not compared): " + "; ".join(missing))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""seer_routes: SEER's own job on cuDNN's routes: from measured layers, fit a time model per route and predict which
route is fastest on layers the fit never saw; against cuDNN's own heuristic and against always taking one route.

Usage: bench/seer_routes.py REPORT.json[.gz]... > seer_routes.md

Every row of the `convgen bench` reports (one precision per report; each row's every cuDNN route timed) is a layer.
A route is a legacy algorithm, or a graph-API engine with its knobs (the heuristics' ranks in its name left out). Per
route, the model is SEER's for a route whose launch it cannot see: time = a·FLOPs + b·bytes + c (bytes: activation,
filter and output once), a, b, c ≥ 0, fitted by least squares on the relative error over the layers where it ran.
Cross-validation leaves one suite out at a time (its layers at every batch): the routes are fitted on the other
suites, then for each of its layers the route predicted fastest, among those that ran there, is the pick. SEER's
definition: a pick is right when its measured time is within 10% of the fastest route's. Beside it: cuDNN's
heuristic (the graph API's engine ranked first by heur_a, else by heur_b), and the one route that is best most often
in the other suites. Times are each row's headline mode (graph replay where both sides were captured).
"""
import argparse
import gzip
import itertools
import json
import re
import sys
from collections import Counter, defaultdict

import numpy as np

RIGHT = 1.10  # SEER: within 10% of the best


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def route_id(entry):
    algo = re.sub(r"\s*\[[^\]]*\]", "", entry["algo"]).strip()
    return f"{entry['route']}:{algo}" + (f"{{{entry['knobs']}}}" if entry.get("knobs") else "")


def heuristic_rank(entry):
    """cuDNN's heuristic rank of a graph-API engine (heur_a, else heur_b), or None."""
    for mode in ("heur_a", "heur_b"):
        m = re.search(mode + r" #(\d+)", entry["algo"])
        if m:
            return (0 if mode == "heur_a" else 1, int(m.group(1)))
    return None


def features(problem, precision):
    size = 4 if precision in ("fp32", "tf32") else 2
    p = problem
    cg = p["c"] // p["groups"]
    flops = 2.0 * p["n"] * p["k"] * cg * p["t"] * p["r"] * p["s"] * p["o"] * p["p"] * p["q"]
    elements = (p["n"] * p["c"] * p["d"] * p["h"] * p["w"] + p["k"] * cg * p["t"] * p["r"] * p["s"]
                + p["n"] * p["k"] * p["o"] * p["p"] * p["q"])
    return np.array([flops / 1e9, elements * size / 1e6, 1.0])  # GFLOP, MB, launch


def layers_of(report):
    out = []
    for row in report["rows"]:
        graph = row.get("headline_mode") == "graph"
        times = {}
        heuristic = None
        for e in row.get("cudnn", []):
            if e.get("status") != "ok":
                continue
            t = e.get("graph_median_us") if graph else e.get("median_us")
            if not t:
                continue
            rid = route_id(e)
            times[rid] = min(t, times.get(rid, float("inf")))
            rank = heuristic_rank(e)
            if rank is not None and (heuristic is None or rank < heuristic[0]):
                heuristic = (rank, rid)
        if times:
            out.append(dict(suite=row["suite"], layer=row["layer"], batch=row["batch"], precision=row["precision"],
                            x=features(row["problem"], row["precision"]), times=times,
                            heuristic=heuristic[1] if heuristic else None))
    return out


def fit(xs, ts):
    """Non-negative a, b, c minimizing Σ ((x·w - t) / t)²: every subset of the columns, the best feasible one."""
    a = np.array(xs) / np.array(ts)[:, None]
    y = np.ones(len(ts))
    best, best_err = np.zeros(3), float("inf")
    for k in (1, 2, 3):
        for cols in itertools.combinations(range(3), k):
            w, *_ = np.linalg.lstsq(a[:, cols], y, rcond=None)
            if (w < 0).any():
                continue
            full = np.zeros(3)
            full[list(cols)] = w
            err = float(((a @ full - y) ** 2).sum())
            if err < best_err:
                best, best_err = full, err
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+")
    args = parser.parse_args()
    layers, gpus = [], set()
    for path in args.reports:
        report = load(path)
        gpus.add(report["provenance"].get("gpu"))
        layers += layers_of(report)
    if not layers:
        sys.exit("seer_routes: error: no row with a timed cuDNN route")
    suites = sorted({l["suite"] for l in layers})
    if len(suites) < 2:
        sys.exit("seer_routes: error: leaving one suite out needs layers of at least two suites")
    tally = defaultdict(Counter)
    for held_out in suites:
        train = [l for l in layers if l["suite"] != held_out]
        samples = defaultdict(lambda: ([], []))
        for l in train:
            for rid, t in l["times"].items():
                samples[rid][0].append(l["x"])
                samples[rid][1].append(t)
        weights = {rid: fit(xs, ts) for rid, (xs, ts) in samples.items() if len(ts) >= 3}
        favourite = Counter(min(l["times"], key=l["times"].get) for l in train).most_common(1)[0][0]
        for l in (l for l in layers if l["suite"] == held_out):
            key = (l["suite"], l["precision"])
            best = min(l["times"].values())
            known = {rid: float(l["x"] @ weights[rid]) for rid in l["times"] if rid in weights}
            tally[key]["layers"] += 1
            if known:
                pick = min(known, key=known.get)
                tally[key]["model"] += l["times"][pick] <= RIGHT * best
                tally[key]["model_loss"] += l["times"][pick] / best
            if l["heuristic"]:
                tally[key]["heuristic_layers"] += 1
                tally[key]["heuristic"] += l["times"][l["heuristic"]] <= RIGHT * best
            if favourite in l["times"]:
                tally[key]["favourite_layers"] += 1
                tally[key]["favourite"] += l["times"][favourite] <= RIGHT * best
    print(f"# SEER's question on cuDNN's routes ({', '.join(sorted(g for g in gpus if g))})\n")
    print(f"{len(layers)} layers (a row a layer and batch), {len({r for l in layers for r in l['times']})} routes; "
          "right pick: within 10% of the fastest route measured on the layer. The model of each held-out suite is "
          "fitted on the other suites only.\n")
    print("| suite | precision | layers | model right | model's pick ÷ best (mean) | cuDNN heuristic right | "
          "one route right |")
    print("|---|---|--:|--:|--:|--:|--:|")
    total = Counter()
    pct = lambda a, b: f"{100 * a / b:.0f}% ({a}/{b})" if b else "—"
    for (suite, precision), t in sorted(tally.items()):
        total.update(t)
        print(f"| {suite} | {precision} | {t['layers']} | {pct(t['model'], t['layers'])} | "
              f"{t['model_loss'] / t['layers']:.2f} | {pct(t['heuristic'], t['heuristic_layers'])} | "
              f"{pct(t['favourite'], t['favourite_layers'])} |")
    print(f"| **all** | | {total['layers']} | {pct(total['model'], total['layers'])} | "
          f"{total['model_loss'] / total['layers']:.2f} | {pct(total['heuristic'], total['heuristic_layers'])} | "
          f"{pct(total['favourite'], total['favourite_layers'])} |")


if __name__ == "__main__":
    main()

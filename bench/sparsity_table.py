#!/usr/bin/env python3
"""sparsity_table: the activation-sparsity summaries of issue 11 from `convgen bench` JSON reports.

Usage:
  bench/sparsity_table.py speedup REPORT.json[.gz]...     geometric-mean speedup over cuDNN's best route per zero
                                                          fraction, pattern and batch (a batch with fewer layers
                                                          than the others says how many), over the batches, the
                                                          worst layer, and at batch 1 over the seed's legacy GEMM
                                                          routes
  bench/sparsity_table.py dense-check SPARSE.json DENSE.json
                                                          per layer and batch on dense input: act_sparse's time
                                                          (a run with --families act_sparse) against our best dense
                                                          family's (a run with --families direct,igemm,winograd)

Every speedup is the report's own: cuDNN's best verified route ÷ ours, timed in the same run, in the row's headline
mode (graph replay where both sides were captured). Rows without a speedup (a side failed) are left out and counted.
"""
import math
import sys
from collections import defaultdict

from report_file import read_report


def load(path):
    return read_report(path, "sparsity_table")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def ours_us(row):
    ours = row["ours"]
    return ours["graph_median_us"] if row["headline_mode"] == "graph" else ours["median_us"]


def speedup_table(paths):
    groups = defaultdict(lambda: defaultdict(list))  # (pattern, zeros) -> batch -> [(speedup, layer, gemm)]
    skipped = 0
    for path in paths:
        for row in load(path)["rows"]:
            if row.get("speedup") is None:
                skipped += 1
                continue
            key = (_pattern_of(row), row["act_sparsity"])
            groups[key][row["batch"]].append((row["speedup"], row["layer"], row.get("gemm_speedup")))
    batches = sorted({b for g in groups.values() for b in g})
    print("| pattern | zeros | " + " | ".join(f"batch {b}" for b in batches) +
          " | over the batches | worst layer (batch) | batch 1 over the seed's GEMM routes |")
    print("|---|--:|" + "--:|" * len(batches) + "--:|---|--:|")
    for (pattern, zeros), by_batch in sorted(groups.items()):
        cells, all_rows = [], []
        layers = len({layer for rows in by_batch.values() for _, layer, _ in rows})
        for b in batches:
            rows = by_batch.get(b, [])
            # A batch with fewer layers than the group's (a run cut short, or rows without a speedup) says so.
            partial = f" ({len(rows)} of {layers} layers)" if 0 < len(rows) < layers else ""
            cells.append(f"{geomean([s for s, _, _ in rows]):.2f}×{partial}" if rows else "")
            all_rows += [(s, layer, b) for s, layer, _ in rows]
        per_batch = [geomean([s for s, _, _ in by_batch[b]]) for b in batches if by_batch.get(b)]
        worst = min(all_rows)
        gemm = [g for _, _, g in by_batch.get(1, []) if g]
        print(f"| {pattern} | {zeros:.0%} | " + " | ".join(cells) + f" | {geomean(per_batch):.2f}× | "
              f"{worst[1]} ({worst[2]}): {worst[0]:.2f}× | " + (f"{geomean(gemm):.2f}×" if gemm else "") + " |")
    if skipped:
        print(f"\n{skipped} rows without a speedup left out.")


def _pattern_of(row):
    """The sparsity pattern of a row, from its activation description ("sparse blob, 50% zeros" and the like)."""
    text = row.get("activation", "")
    for pattern in ("uniform", "channel", "blob"):
        if pattern in text:
            return pattern
    return "dense"


def dense_check(sparse_path, dense_path):
    dense = {(r["layer"], r["batch"]): r for r in load(dense_path)["rows"] if r.get("speedup") is not None}
    ratios = []
    print("| layer | batch | act_sparse µs | our best dense µs | its kernel | act_sparse ÷ dense best |")
    print("|---|--:|--:|--:|---|--:|")
    for row in load(sparse_path)["rows"]:
        other = dense.get((row["layer"], row["batch"]))
        if row.get("speedup") is None or other is None:
            continue
        ratio = ours_us(row) / ours_us(other)
        ratios.append((ratio, row["layer"], row["batch"]))
        print(f"| {row['layer']} | {row['batch']} | {ours_us(row):.2f} | {ours_us(other):.2f} | "
              f"{other['ours']['kernel']} | {ratio:.3f}{' (over 3%)' if ratio > 1.03 else ''} |")
    within = sum(1 for r, _, _ in ratios if r <= 1.03)
    worst = max(ratios)
    print(f"\nWithin 3% of our best dense kernel (or faster): {within} of {len(ratios)} rows; "
          f"geometric mean act_sparse ÷ dense best {geomean([r for r, _, _ in ratios]):.3f}; "
          f"worst {worst[1]} at batch {worst[2]}: {worst[0]:.3f}.")


def main(argv):
    if len(argv) >= 3 and argv[1] == "speedup":
        speedup_table(argv[2:])
    elif len(argv) == 4 and argv[1] == "dense-check":
        dense_check(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

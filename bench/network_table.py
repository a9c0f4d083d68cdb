#!/usr/bin/env python3
"""network_table: whole-network time and energy, dense against sparse, from two `convgen bench` JSON reports.

Usage: bench/network_table.py DENSE.json[.gz] SPARSE.json[.gz] > network.md

DENSE.json is a run on dense activations (`--act-sparsity 0`), SPARSE.json a run of the same suite and batches
where each layer's activation has its expected zeros (no --act-sparsity: the shapes file's act_sparsity column).
Per (suite, batch): Σ count × time over the layers both runs compared, in each row's headline mode (graph replay
where both sides were captured), for cuDNN's best route on the dense input, ours on the dense input, ours on the
sparse input (and cuDNN's best on the sparse input, which does not skip zeros), with the energies the same way.
A layer that either run could not compare is left out of every total of its group and named below the table.
"""
import math
import sys
from collections import OrderedDict

from report_file import read_report


def headline(entry, mode):
    """The entry's median µs in the row's headline mode ("graph" or "stream")."""
    if entry is None:
        return None
    return entry["graph_median_us"] if mode == "graph" else entry["median_us"]


def layer_times(row):
    """(cuDNN best µs, ours µs, cuDNN mJ, ours mJ) of a row, or None when the row has no speedup."""
    if row.get("speedup") is None:
        return None
    mode = row["headline_mode"]
    return (headline(row["cudnn_best"], mode), headline(row["ours"], mode), row["cudnn_energy_mj"],
            row["ours"]["energy_mj"])


def rows_by_layer(path):
    """The report at path and its rows by (suite, batch, layer)."""
    report = read_report(path, "network_table")
    rows = OrderedDict()
    for row in report["rows"]:
        rows[(row["suite"], row["batch"], row["layer"])] = row
    return report, rows


def total(values):
    """Σ of the values, or None when any is missing."""
    return None if any(v is None for v in values) else sum(values)


def fmt(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dense_report, dense = rows_by_layer(sys.argv[1])
    sparse_report, sparse = rows_by_layer(sys.argv[2])
    groups = OrderedDict()
    for key in dense:
        groups.setdefault(key[:2], []).append(key)
    print("# Whole network: dense and sparse activations\n")
    print(f"GPU: {dense_report['provenance']['gpu']} ({dense_report['provenance']['arch']}); "
          f"cuDNN {dense_report['provenance']['cudnn']}.\n")
    print(f"Dense run: `{dense_report['provenance']['command_line']}`  ")
    print(f"Sparse run: `{sparse_report['provenance']['command_line']}`\n")
    print("Σ count × time (µs) and Σ count × energy per call (mJ) over the layers both runs compared; cuDNN does not "
          "skip zeros, so its sparse-input time is shown only as a check.\n")
    print("| network | batch | layers | zeros (count-weighted) | cuDNN dense µs | ours dense µs | ours sparse µs | "
          "cuDNN on sparse µs | cuDNN ÷ ours sparse | cuDNN dense mJ | ours dense mJ | ours sparse mJ |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    notes = []
    for (suite, batch), keys in groups.items():
        sums = [[] for _ in range(7)]
        zeros_weighted, weights, used, left_out = 0.0, 0, 0, []
        for key in keys:
            d = layer_times(dense[key])
            s = layer_times(sparse[key]) if key in sparse else None
            if d is None or s is None:
                left_out.append(key[2])
                continue
            count = dense[key]["count"]
            for i, v in enumerate((d[0], d[1], s[1], s[0], d[2], d[3], s[3])):
                sums[i].append(None if v is None else count * v)
            zeros_weighted += count * sparse[key]["zero_fraction"]
            weights += count
            used += 1
        t = [total(v) for v in sums]
        ratio = t[0] / t[2] if t[0] is not None and t[2] else None
        print(f"| {suite} | {batch} | {used} of {len(keys)} | {100 * zeros_weighted / max(weights, 1):.0f}% | "
              f"{fmt(t[0])} | {fmt(t[1])} | {fmt(t[2])} | {fmt(t[3])} | "
              f"{'—' if ratio is None else f'{ratio:.2f}×'} | {fmt(t[4], 3)} | {fmt(t[5], 3)} | {fmt(t[6], 3)} |")
        if left_out:
            notes.append(f"{suite} batch {batch}: left out (not compared in both runs): {', '.join(left_out)}.")
    if notes:
        print()
        for note in notes:
            print(note)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ncu-stalls: where a kernel's warps wait, from Nsight Compute's source page as CSV (SASS, warp stall sampling).

  scripts/ncu-stalls.py SOURCE.csv[.gz] [--min-share PERCENT]

SOURCE.csv is what `ncu --import REPORT.ncu-rep --page source --csv --print-source sass` prints (a report made with
`--set full`, whose source counters sample the warps' stalls). Markdown on stdout: the samples by stall reason, then
the instructions that hold at least PERCENT (default 1) of the samples, in program order, each with its line in the
listing, its samples, its share and its two largest reasons. What to read before guessing why a kernel is slow: a loop
of one instruction per lane, a barrier the consumers wait on, a wait for the tensor cores (scripts/profile-layer.sh
writes it beside each report)."""
import argparse
import csv
import gzip
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def read_rows(path):
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        return list(csv.reader(f))


def number(text):
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", help="ncu's source page as CSV (plain or gzipped)")
    parser.add_argument("--min-share", type=float, default=1.0, help="list instructions with at least this %% of samples")
    args = parser.parse_args(argv)
    rows = read_rows(args.source)
    # The first line names the kernel ("Kernel Name", name); the second is the header.
    header_at = next((i for i, row in enumerate(rows[:3]) if SAMPLES in row), None)
    if header_at is None:
        sys.exit(f"ncu-stalls: error: {args.source} has no '{SAMPLES}' column: not ncu's source page as CSV "
                 "(ncu --import R.ncu-rep --page source --csv --print-source sass, from a --set full report)")
    header = rows[header_at]
    kernel = rows[0][1] if header_at > 0 and len(rows[0]) > 1 else "(kernel not named)"
    samples_at, source_at = header.index(SAMPLES), header.index("Source")
    reasons = [(i, name[len("stall_"):]) for i, name in enumerate(header)
               if name.startswith("stall_") and "(Not Issued)" not in name]
    body = [row for row in rows[header_at + 1:] if len(row) == len(header)]
    total = sum(number(row[samples_at]) for row in body)
    if total == 0:
        sys.exit(f"ncu-stalls: error: {args.source} has no warp stall samples (was the report made with --set full?)")

    print(f"# Warp stall samples of {kernel}\n")
    print(f"{total:,} samples over {len(body)} instructions ({args.source.split('/')[-1]}).\n")
    by_reason = sorted(((sum(number(row[i]) for row in body), name) for i, name in reasons), reverse=True)
    print("| reason | samples | share |")
    print("|---|--:|--:|")
    for count, name in by_reason:
        if count:
            print(f"| {name} | {count:,} | {100 * count / total:.1f}% |")
    print(f"\nInstructions with at least {args.min_share:g}% of the samples, in program order:\n")
    print("| line | instruction | samples | share | largest reasons |")
    print("|--:|---|--:|--:|---|")
    for line, row in enumerate(body):
        count = number(row[samples_at])
        if 100 * count < args.min_share * total:
            continue
        top = sorted(((number(row[i]), name) for i, name in reasons), reverse=True)[:2]
        why = ", ".join(f"{name} {n}" for n, name in top if n)
        instruction = " ".join(row[source_at].split()).replace("|", "\\|")
        print(f"| {line} | `{instruction}` | {count} | {100 * count / total:.1f}% | {why} |")


if __name__ == "__main__":
    main(sys.argv[1:])

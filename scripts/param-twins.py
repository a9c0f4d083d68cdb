#!/usr/bin/env python3
"""param-twins: from `convgen db export` files, how kernels with a parameter set to one value fare against their twins
(the same kernel name with the parameter at another value), per problem, and the best of each side.

  scripts/param-twins.py TOKEN ON OFF EXPORT.json[.gz]...

  e.g. scripts/param-twins.py bs 1 0 measurements.json.gz   (act_sparse's block-staged loop against the plain one)

Per problem: the best measured time of the kernels whose name has _TOKEN<OFF>, of those with _TOKEN<ON>, their ratio
(> 1: the ON side's best is faster), and the geometric mean and maximum over the pairs of twins measured both ways.
Markdown on stdout."""
import gzip
import json
import math
import re
import sys


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    token, on, off, paths = argv[1], argv[2], argv[3], argv[4:]
    field = re.compile(rf"_{re.escape(token)}(\d+)(?=_|$)")
    for path in paths:
        times = {}
        for m in load(path)["measurements"]:
            if m.get("median_us") is None or m.get("error_text"):
                continue
            times.setdefault(m["problem"], {})[m["kernel"]] = m["median_us"]
        print(f"## {path.rsplit('/', 1)[-1]}\n")
        print(f"| problem | best {token}{off} µs | best {token}{on} µs | {token}{off} ÷ {token}{on} | twins ({token}{off} ÷ "
              f"{token}{on}): geomean, max, pairs | fastest {token}{on} |")
        print("|---|--:|--:|--:|---|---|")
        ratios = []
        for problem, kernels in times.items():
            def side(value):
                return {k: t for k, t in kernels.items() if (f := field.search(k)) and f.group(1) == value}
            offs, ons = side(off), side(on)
            if not offs or not ons:
                continue
            pairs = [offs[field.sub(f"_{token}{off}", k)] / t for k, t in ons.items()
                     if field.sub(f"_{token}{off}", k) in offs]
            best_off, best_on = min(offs.values()), min(ons.items(), key=lambda kv: kv[1])
            ratios.append(best_off / best_on[1])
            print(f"| {problem} | {best_off:.2f} | {best_on[1]:.2f} | {best_off / best_on[1]:.2f} | "
                  f"{geomean(pairs):.2f}, {max(pairs, default=float('nan')):.2f}, {len(pairs)} | {best_on[0]} |")
        print(f"\nGeometric mean of best {token}{off} ÷ best {token}{on} over {len(ratios)} problems: "
              f"{geomean(ratios):.3f}; {token}{on} fastest on {sum(r > 1 for r in ratios)}.\n")


if __name__ == "__main__":
    main(sys.argv)

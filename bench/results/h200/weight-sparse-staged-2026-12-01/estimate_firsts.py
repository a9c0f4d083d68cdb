#!/usr/bin/env python3
"""Usage: estimate_firsts.py MEASUREMENTS.json.gz ... (`convgen db export` of a `convgen tune --family weight_sparse
--budget 0` database; each measurement carries the cost model's estimate, predicted_us, from the tune).
Per export, over its problems: the measured time of the candidate with the best estimate, divided by the fastest
measured, as a geometric mean, for the estimate's first of every variant, its first but a staged table (tb2), and
its first staged table; and the fastest but a staged table. What weight_sparse's default_spec takes (enumerate's
first) against what it took before 2026-12-01 (the first that is no staged table)."""
import gzip, json, math, sys


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')


print('| export | problems | first of all | first but tb2 | first tb2 | fastest but tb2 |')
print('|---|--:|--:|--:|--:|--:|')
for path in sys.argv[1:]:
    data = json.load(gzip.open(path) if path.endswith('.gz') else open(path))
    by_problem = {}
    for m in data['measurements']:
        if m.get('status', 'ok') == 'ok' and m.get('predicted_us') is not None:
            by_problem.setdefault(m['problem'], []).append(m)
    ratios = {'all': [], 'other': [], 'staged': [], 'fastest other': []}
    for ms in by_problem.values():
        best = min(m['median_us'] for m in ms)
        first = lambda group: min(group, key=lambda m: m['predicted_us'])['median_us'] / best
        other = [m for m in ms if '_tb2_' not in m['kernel']]
        staged = [m for m in ms if '_tb2_' in m['kernel']]
        ratios['all'].append(first(ms))
        if other:
            ratios['other'].append(first(other))
            ratios['fastest other'].append(min(m['median_us'] for m in other) / best)
        if staged:
            ratios['staged'].append(first(staged))
    print(f"| {path} | {len(by_problem)} | {gmean(ratios['all']):.3f} | {gmean(ratios['other']):.3f} | "
          f"{gmean(ratios['staged']):.3f} | {gmean(ratios['fastest other']):.3f} |")

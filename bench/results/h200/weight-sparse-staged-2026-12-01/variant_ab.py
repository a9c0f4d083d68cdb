#!/usr/bin/env python3
"""Usage: variant_ab.py MEASUREMENTS.json.gz ... (`convgen db export` of a `convgen tune --family weight_sparse
--budget 0` database: every candidate of each problem measured in the same run).
Per problem: the fastest verified kernel of the staged table (tb2) against the fastest of the others (the baked code
tb0 and the rolled table tb1), medians in µs; then the geometric mean of best-overall / best-without-tb2."""
import gzip, json, math, re, sys


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')


best = {}
for path in sys.argv[1:]:
    data = json.load(gzip.open(path) if path.endswith('.gz') else open(path))
    for m in data['measurements']:
        if m.get('status', 'ok') != 'ok':
            continue
        variant = 'staged' if '_tb2_' in m['kernel'] else 'other'
        slot = best.setdefault(m['problem'], {})
        if variant not in slot or m['median_us'] < slot[variant][0]:
            slot[variant] = (m['median_us'], m['kernel'])
print('| problem | fastest tb0/tb1 µs | its kernel | fastest tb2 µs | its kernel | best ÷ best without tb2 |')
print('|---|--:|---|--:|---|--:|')
ratios = []
for problem, slot in sorted(best.items()):
    other, staged = slot.get('other'), slot.get('staged')
    if not other or not staged:
        continue
    ratio = min(other[0], staged[0]) / other[0]
    ratios.append(ratio)
    shape = re.sub(r'_d1x1x1_g1_nchw_fp32_w[0-9a-f]+$', '', problem)
    print(f'| {shape} | {other[0]:.2f} | {other[1]} | {staged[0]:.2f} | {staged[1]} | {ratio:.3f} |')
print()
print(f'geometric mean of best / best without tb2: {gmean(ratios):.3f} over {len(ratios)} problems '
      f'(tb2 fastest on {sum(r < 1 for r in ratios)})')

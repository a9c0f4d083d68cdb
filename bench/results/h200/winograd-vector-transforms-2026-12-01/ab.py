#!/usr/bin/env python3
"""Usage: ab.py OLD_DIR NEW_DIR (`convgen bench --ours-only` reports, *.json.gz, of the same kernels built twice).
Per layer and batch: the new build's time / the old one's, over the kernels both measured (geometric mean) and for
each build's fastest; then per suite and batch the geometric means. Times are graph-replay medians."""
import glob, gzip, json, math, os, sys


def times(directory):
    out = {}
    for path in glob.glob(os.path.join(directory, '*.json.gz')):
        report = json.load(gzip.open(path))
        suite = os.path.basename(path).split('_fp32')[0]
        for r in report['rows']:
            for c in r['our_candidates']:
                if c.get('status') == 'ok':
                    out[(suite, r['batch'], r['layer'], c['kernel'])] = c.get('graph_median_us') or c['median_us']
    return out


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


old, new = times(sys.argv[1]), times(sys.argv[2])
both = [k for k in old if k in new]
print('| suite | batch | layer | kernels | new ÷ old, geometric mean | fastest old µs | fastest new µs | new ÷ old |')
print('|---|--:|---|--:|--:|--:|--:|--:|')
summary = {}
for suite, batch, layer in sorted({k[:3] for k in both}):
    ks = [k for k in both if k[:3] == (suite, batch, layer)]
    ratio = gmean([new[k] / old[k] for k in ks])
    fo, fn = min(old[k] for k in ks), min(new[k] for k in ks)
    summary.setdefault((suite, batch), []).append((ratio, fn / fo))
    print(f'| {suite} | {batch} | {layer} | {len(ks)} | {ratio:.3f} | {fo:.2f} | {fn:.2f} | {fn / fo:.3f} |')
print()
print('| suite | batch | layers | every kernel, new ÷ old | fastest per layer, new ÷ old (range) |')
print('|---|--:|--:|--:|--:|')
for (suite, batch), v in sorted(summary.items()):
    best = [b for _, b in v]
    print(f'| {suite} | {batch} | {len(v)} | {gmean([a for a, _ in v]):.3f} | {gmean(best):.3f} '
          f'({min(best):.3f}–{max(best):.3f}) |')

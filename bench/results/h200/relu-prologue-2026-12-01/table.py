#!/usr/bin/env python3
"""Usage: table.py NEW_DIR OLD_DIR (cusnn bench reports with --relu-on-load, *.json.gz). Per layer of NEW_DIR's
reports: cuDNN's best after its ReLU pass, our best (any family; "prologue" where it runs behind the ReLU prologue, a
relu pass into its workspace, "relu1" where act_sparse applies max(0, x) as it loads), our best relu1 kernel, and the
speedups; then per batch and zero fraction the geometric means beside OLD_DIR's (the same bench before the prologue,
when act_sparse's relu1 kernels alone served such a layer). Times are graph-replay medians where measured."""
import gzip, json, math, sys, glob, os


def g(c):  # graph median, else stream
    return c.get('graph_median_us') or c['median_us']


def rows(directory):
    out = {}
    for path in glob.glob(os.path.join(directory, '*.json.gz')):
        for r in json.load(gzip.open(path))['rows']:
            out[(r['batch'], round(100 * r['act_sparsity']), r['layer'])] = r
    return out


def gmean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


new, old = rows(sys.argv[1]), rows(sys.argv[2])
print('| batch | zeros | layer | cuDNN + ReLU pass µs | ours µs | our kernel | how | our best relu1 µs | speedup | speedup before the prologue |')
print('|--:|--:|---|--:|--:|---|---|--:|--:|--:|')
summary = {}
for key in sorted(new):
    r = new[key]
    ours, cudnn = g(r['ours']), g(r['cudnn_best'])
    kernel = r['ours']['kernel']
    how = 'relu1' if '_relu1_' in kernel else 'prologue'
    relu1 = min((g(c) for c in r['our_candidates'] if '_relu1_' in c['kernel'] and c['status'] == 'ok'),
                default=float('nan'))
    before = old.get(key)
    before_speedup = g(before['cudnn_best']) / g(before['ours']) if before else float('nan')
    summary.setdefault(key[:2], []).append((cudnn / ours, before_speedup, how))
    print(f'| {key[0]} | {key[1]}% | {key[2]} | {cudnn:.2f} | {ours:.2f} | `{kernel}` | {how} | {relu1:.2f} | '
          f'{cudnn / ours:.2f}× | {before_speedup:.2f}× |')
print()
print('| batch | zeros | layers | speedup over cuDNN + ReLU pass, geometric mean (worst) | before the prologue, geometric mean (worst) | layers won behind the prologue |')
print('|--:|--:|--:|--:|--:|--:|')
for (batch, zeros), v in sorted(summary.items()):
    now = [x[0] for x in v]
    then = [x[1] for x in v if not math.isnan(x[1])]
    print(f'| {batch} | {zeros}% | {len(v)} | {gmean(now):.2f}× ({min(now):.2f}×) | '
          f'{gmean(then):.2f}× ({min(then):.2f}×) | {sum(x[2] == "prologue" for x in v)} of {len(v)} |')

#!/usr/bin/env python3
"""Usage: table.py PLAIN_DIR RELU_DIR (bench reports, *.json.gz). Pairs a cusnn bench with --relu-on-load and one without (same batch, zeros, pattern), per layer: cuDNN's best on
the rectified input, cuDNN's best after its ReLU pass, our best (any family), our best act_sparse (relu0), and our
relu1 act_sparse kernel."""
import gzip, json, math, sys, glob, os

def g(c):  # graph median, else stream
    return c.get('graph_median_us') or c['median_us']

def rows(path):
    return {r['layer']: r for r in json.load(gzip.open(path))['rows']}

plain_dir, relu_dir = sys.argv[1], sys.argv[2]
print('| batch | zeros | layer | cuDNN µs (input rectified) | cuDNN + ReLU pass µs | ours best µs (family) | ours act_sparse relu0 µs | ours relu1 µs | relu1 ÷ relu0 | (cuDNN + pass) ÷ relu1 | relu1 vs a ReLU pass + our best: pass µs needed to lose |')
print('|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|')
summary = {}
for rp in sorted(glob.glob(os.path.join(relu_dir, '*.json.gz'))):
    name = os.path.basename(rp)
    pp = os.path.join(plain_dir, name)
    R = rows(rp)
    P = rows(pp) if os.path.exists(pp) else {}
    for layer, r in R.items():
        zeros = round(100 * r['act_sparsity'])
        relu1 = g(r['ours'])
        cud_pass = g(r['cudnn_best'])
        cells = [str(r['batch']), f'{zeros}%', layer]
        if layer in P:
            p = P[layer]
            cud = g(p['cudnn_best'])
            best = g(p['ours'])
            fam = p['ours']['kernel'].split('_m')[0].split('_th')[0]
            as0 = min((g(c) for c in p['our_candidates'] if c['kernel'].startswith('act_sparse') and c['status'] == 'ok'), default=float('nan'))
            cells += [f'{cud:.2f}', f'{cud_pass:.2f}', f'{best:.2f} ({fam})', f'{as0:.2f}', f'{relu1:.2f}', f'{relu1/as0:.3f}', f'{cud_pass/relu1:.2f}×', f'{relu1-best:.2f}']
            summary.setdefault((r['batch'], zeros), []).append((relu1 / as0, cud_pass / relu1, cud_pass - cud))
        else:
            cells += ['—', f'{cud_pass:.2f}', '—', '—', f'{relu1:.2f}', '—', f'{cud_pass/relu1:.2f}×', '—']
            summary.setdefault((r['batch'], zeros), []).append((float('nan'), cud_pass / relu1, float('nan')))
        print('| ' + ' | '.join(cells) + ' |')
print()
print('| batch | zeros | layers | relu1 ÷ relu0, geometric mean (max) | (cuDNN + ReLU pass) ÷ relu1, geometric mean | cuDNN ReLU pass cost, median µs |')
print('|--:|--:|--:|--:|--:|--:|')
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for (b, z), v in sorted(summary.items()):
    a = [x[0] for x in v if not math.isnan(x[0])]
    c = sorted(x[2] for x in v if not math.isnan(x[2]))
    print(f'| {b} | {z}% | {len(v)} | ' + (f'{gm(a):.3f} ({max(a):.3f})' if a else '—') + f' | {gm([x[1] for x in v]):.2f}× | ' + (f'{c[len(c)//2]:.2f}' if c else '—') + ' |')

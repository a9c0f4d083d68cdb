#!/usr/bin/env python3
"""The default choice (no tuning) against the fastest family default, on published bench reports.

Usage (from the repository root, after building family_defaults.cpp beside this file, see README.md):
  analyze_defaults.py DEFAULTS.txt REPORT.json.gz...
DEFAULTS.txt: family_defaults' output for the reports' problem keys (one line per key: the key, the default
choice, then each registered family's default or '-', families in name order); `--keys` prints those keys.
Every bench row keeps each family's default configuration among `our_candidates`, so the fastest family default is
known for each row; the default choice is looked up in DEFAULTS.txt.
"""
import gzip, json, math, re, sys

FAMILIES = ['act_sparse', 'direct', 'igemm', 'igemm_tc', 'igemm_wgmma', 'pointwise', 'sparse24_tc', 'weight_sparse',
            'winograd', 'winograd_gemm']


def rows(reports):
    for path in reports:
        with gzip.open(path) as f:
            report = json.load(f)
        for r in report['rows']:
            if r.get('precision') != 'fp32' or not r.get('our_candidates'):
                continue
            times = {}
            for c in r['our_candidates']:
                t = c.get('graph_median_us') or c.get('median_us')
                if c.get('status') != 'ok' or not t:
                    continue
                name = c['kernel']
                # Names of earlier convgen versions: act_sparse without lb (lb1), direct with three unused fields.
                if name.startswith('act_sparse') and not re.search(r'_lb\d$', name):
                    name += '_lb1'
                if name.startswith('direct') and name.endswith('_st1_sk1_v1'):
                    name = name[:-len('_st1_sk1_v1')]
                times[name] = t
            if times:
                yield path, r['layer'], r['problem']['key'], times


def main():
    if sys.argv[1] == '--keys':
        print('\n'.join(sorted({key for _, _, key, _ in rows(sys.argv[2:])})))
        return
    defaults = {}
    for line in open(sys.argv[1]):
        fields = line.split()
        defaults[fields[0]] = (fields[1], dict(zip(FAMILIES, fields[2:])))
    ratios, off, unmeasured = [], [], 0
    for path, layer, key, times in rows(sys.argv[2:]):
        choice, family_defaults = defaults[key]
        measured = {f: times[k] for f, k in family_defaults.items() if k != '-' and k in times}
        if choice not in times or not measured:
            unmeasured += 1
            continue
        best = min(measured.values())
        ratios.append(times[choice] / best)
        if ratios[-1] > 1.15:
            chosen = next((f for f, k in family_defaults.items() if k == choice), choice)
            off.append((ratios[-1], path.split('/')[-2], layer, key, chosen, min(measured, key=measured.get)))
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f'{len(ratios)} layer-batches ({unmeasured} whose default choice was not among the measured): default choice '
          f'/ fastest family default, geometric mean {geomean:.3f}; more than 1.15x off on {len(off)}')
    for ratio, folder, layer, key, choice, best in sorted(off, reverse=True):
        print(f'  {ratio:.2f}  {folder}  {layer}  {key}  chosen {choice}, fastest default {best}')


if __name__ == '__main__':
    main()

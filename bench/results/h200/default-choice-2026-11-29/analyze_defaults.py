#!/usr/bin/env python3
"""The default choice (no tuning) against the fastest family default, on published bench reports.

Usage (from the repository root):
  analyze_defaults.py --keys REPORT.json.gz...        the reports' FP32 problem keys, one per line
  analyze_defaults.py DEFAULTS.txt REPORT.json.gz...  the comparison
DEFAULTS.txt: what `convgen analyze --defaults --problem KEY...` prints for those keys (per problem a line
"NAME KEY -> CHOICE", then one line per family: rank, family, its default or "-"). Every bench row keeps each
family's default configuration among `our_candidates`, so the fastest family default is known for each row.
"""
import gzip, json, math, re, sys

def rows(reports):
    for path in reports:
        with gzip.open(path) as f:
            report = json.load(f)
        for r in report.get('rows', []) if report.get('schema') else []:  # tuning exports are no bench report
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
    defaults, key = {}, None
    opener = gzip.open if sys.argv[1].endswith('.gz') else open
    for line in opener(sys.argv[1], 'rt'):
        if m := re.match(r'^\S+ (\S+) -> (\S+)$', line):
            key = m.group(1)
            defaults[key] = (m.group(2), {})
        elif key and (m := re.match(r'^\s+-?\d+\s+(\S+)\s+(\S+)', line)):
            defaults[key][1][m.group(1)] = m.group(2)
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

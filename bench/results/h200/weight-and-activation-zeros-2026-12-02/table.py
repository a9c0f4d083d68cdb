# Per layer: cuDNN's best dense routes (FP32 and FP16, from the bench report) beside each of our sparse kernels'
# best from the tune's export (every candidate measured) and the bench's own pick. Run in this folder.
import collections, gzip, json, math
def export(f):
    by = collections.defaultdict(dict)
    for m in json.load(gzip.open(f))['measurements']:
        if m['status'] == 'ok': by[m['problem'].split('_fp32')[0]][m['kernel']] = m['median_us']
    return by
def best(ks, pred):
    t = [v for k, v in ks.items() if pred(k)]
    return f'{min(t):.2f}' if t else '—'
for b in ('n1', 'n8'):
    ex = export(f'{b}-w90-a70-measurements.json.gz')
    rows = json.load(gzip.open(f'bench-{b}-w90-a70/cusnn_fp32_{b}_z70_blob.json.gz'))['rows']
    print(f'\n### batch {b[1:]}\n')
    print('| layer | cuDNN FP32 best µs | cuDNN FP16 best µs | act_sparse best | weight_sparse tb1 | tb2 lc0 | tb2 lc1 | ours (bench) | our kernel | ÷ FP32 | ÷ FP16 |')
    print('|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|')
    for r in rows:
        ks = ex.get(r['problem']['key'].split('_fp32')[0], {})
        ours = r['ours']['graph_median_us']
        f32 = r['cudnn_best']['graph_median_us']
        f16 = min(x['graph_median_us'] for x in r['cudnn_also']['routes'] if x['status'] == 'ok' and x['graph_median_us'])
        print(f"| {r['layer']} | {f32:.2f} | {f16:.2f} | {best(ks, lambda k: k.startswith('act_sparse'))} | "
              f"{best(ks, lambda k: '_tb1_' in k)} | {best(ks, lambda k: '_tb2_' in k and k.endswith('lc0'))} | "
              f"{best(ks, lambda k: k.endswith('lc1'))} | {ours:.2f} | `{r['ours']['kernel']}` | {f32 / ours:.2f}× | {f16 / ours:.2f}× |")

#!/usr/bin/env python3
# Usage: python3 tools/dev/activation_proxy_check.py 'traces/dlrm-8xV100/*.gz' (docs/optimizer.md, "Activation memory").
# Independent check of estimate_activation_bytes on raw Kineto traces (same proxy, written again).
import gzip, json, glob, sys
SZ = {'double': 8, 'long int': 8, 'c10::Half': 2, 'c10::BFloat16': 2, 'bool': 1, 'unsigned char': 1, 'signed char': 1}
best = 0
for f in sorted(glob.glob(sys.argv[1])):
    ev = [e for e in json.load(gzip.open(f))['traceEvents'] if e.get('ph') == 'X']
    kernels = {e['args'].get('correlation') for e in ev if e.get('cat') == 'kernel'}
    per_step = []
    for st in [e for e in ev if e['name'].startswith('ProfilerStep')]:
        bw = [e['ts'] for e in ev if e.get('cat') == 'cpu_op' and 'Backward' in e['name'] and st['ts'] <= e['ts'] < st['ts'] + st['dur']]
        if not bw: continue
        lo, hi = st['ts'], min(bw)
        ops = [e for e in ev if e.get('cat') == 'cpu_op']
        launchers = {}
        for r in ev:
            if r.get('cat') != 'cuda_runtime' or 'Launch' not in r['name'] or r['args'].get('correlation') not in kernels: continue
            enc = [o for o in ops if o['tid'] == r['tid'] and o['ts'] <= r['ts'] and r['ts'] + r['dur'] <= o['ts'] + o['dur']]
            if not enc: continue
            o = max(enc, key=lambda o: (o['ts'], -o['dur']))  # innermost
            if lo <= o['ts'] < hi: launchers[(o['tid'], o['ts'], o['name'])] = o
        total, n = 0, 0
        for o in launchers.values():
            if 'embedding' in o['name']: continue
            a = o.get('args', {}); dims = a.get('Input Dims', []); ty = a.get('Input type', [])
            for i, d in enumerate(dims):
                if isinstance(d, list) and len(d) >= 2 and all(isinstance(x, int) for x in d):
                    p = 1
                    for x in d: p *= max(x, 0)
                    total += p * SZ.get(ty[i] if i < len(ty) else '', 4); n += 1
                    break
        per_step.append((total, n))
    if per_step:
        per_step.sort(); m = per_step[len(per_step) // 2]
        print(f, m); best = max(best, m[0])
print('largest rank:', best)

#!/usr/bin/env python3
# Usage: python3 tools/dev/activation_proxy_check.py 'traces/dlrm-8xV100/*.gz' (docs/optimizer.md, "Activation memory").
# Independent check of estimate_activation_bytes on raw Kineto traces (same proxy, written again),
# and of precision_memory for bf16 everywhere (memory.h): per GEMM/conv op, its fp32 activation input
# kept at 2 bytes (saved), its other float operands of 2+ dims cast to 2 bytes (casts); the fp32
# activation input of each later op that autocast runs in its input's dtype (not on its float32 or
# widest-type lists) kept at 2 bytes too (saved).
import gzip, json, glob, sys
GEMM_CONV = {'bmm', 'matmul', 'baddbmm', 'linear', 'addmm', 'mm', 'conv', 'conv2d', 'convolution', 'cudnn_convolution', '_convolution'}
INTEGER = {'long int', 'long', 'int', 'short int', 'bool', 'unsigned char', 'signed char', 'int64'}
# autocast's float32 and widest-input-type lists (PyTorch "Autocast Op Reference", CUDA), as memory.cpp reads names
NOT_INPUT_DTYPE = GEMM_CONV | {'einsum', 'mv', 'addmv', 'addr', 'addbmm', 'prelu', 'acos', 'asin', 'binary_cross_entropy_with_logits',
    'cosh', 'cosine_embedding_loss', 'cdist', 'cosine_similarity', 'cross_entropy', 'cross_entropy_loss', 'cumprod', 'cumsum',
    'dist', 'erfinv', 'exp', 'expm1', 'group_norm', 'hinge_embedding_loss', 'kl_div', 'l1_loss', 'layer_norm', 'log',
    'log_softmax', 'log10', 'log1p', 'log2', 'margin_ranking_loss', 'mse_loss', 'multilabel_margin_loss', 'multi_margin_loss',
    'nll_loss', 'nll_loss2d', 'nll_loss_nd', 'norm', 'normalize', 'pdist', 'poisson_nll_loss', 'pow', 'prod', 'reciprocal',
    'rsqrt', 'sinh', 'smooth_l1_loss', 'huber_loss', 'soft_margin_loss', 'softmax', 'softmin', 'softplus', 'sum', 'renorm',
    'tan', 'triplet_margin_loss', 'logsumexp', 'frobenius_norm', 'nuclear_norm', 'addcdiv', 'addcmul', 'atan2', 'bilinear',
    'cross', 'dot', 'grid_sampler', 'grid_sample', 'index_put', 'scatter_add', 'tensordot'}
def plain(name):  # memory.cpp's runs_in_input_dtype reading of a name
    n = name.split('::')[-1].lstrip('_')
    n = n[:-1] if len(n) > 1 and n.endswith('_') else n
    n = n[7:] if n.startswith('native_') else n
    return n[:-8] if len(n) > 8 and n.endswith('_forward') else n
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
        total, n, saved, casts = 0, 0, 0, 0
        lowered = False  # a GEMM/conv op with an fp32 activation came before (bf16 everywhere)
        for o in sorted(launchers.values(), key=lambda o: o['ts']):
            if 'embedding' in o['name']: continue
            a = o.get('args', {}); dims = a.get('Input Dims', []); ty = a.get('Input type', [])
            short = o['name'].split('::')[-1].lower()
            short = short[:-1] if len(short) > 1 and short.endswith('_') else short
            first = True
            for i, d in enumerate(dims):
                if isinstance(d, list) and len(d) >= 2 and all(isinstance(x, int) for x in d):
                    p = 1
                    for x in d: p *= max(x, 0)
                    t = ty[i] if i < len(ty) else ''
                    if first: total += p * SZ.get(t, 4); n += 1
                    if short not in GEMM_CONV:
                        if lowered and plain(o['name']) not in NOT_INPUT_DTYPE and t not in INTEGER and SZ.get(t, 4) > 2:
                            saved += p * (SZ.get(t, 4) - 2)
                        break
                    if t not in INTEGER and SZ.get(t, 4) > 2:
                        if first: saved += p * (SZ.get(t, 4) - 2); lowered = True
                        else: casts += p * 2
                    first = False
        per_step.append((total, n, saved, casts))
    if per_step:
        per_step.sort(); m = per_step[len(per_step) // 2]
        print(f, 'bytes, ops:', m[:2], 'bf16 everywhere: saved', m[2], 'casts', m[3], 'delta', m[3] - m[2]); best = max(best, m[0])
print('largest rank:', best)

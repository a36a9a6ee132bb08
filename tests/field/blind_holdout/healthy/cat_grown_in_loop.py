"""Healthy twin of problems/cat_grown_in_loop.py: batches appended to a list, concatenated once after the loop.

The problem it fixes: Scoring outputs collected by growing one tensor with ``torch.cat`` each batch.

Thread: "torch.cat() bottleneck" (performance suffered for large systems
because each ``torch.cat`` allocates a new tensor and copies both inputs into
it; the fix fills a pre-allocated tensor instead),
https://github.com/ulissigroup/amptorch/issues/12

Problem: every batch's embeddings are appended with
``all_out = torch.cat([all_out, out])``, so step N copies everything gathered
in steps 1..N-1 again: the copying grows with the run and the whole scoring
pass is quadratic in the number of batches.
Expected fix: append each batch to a Python list and call ``torch.cat`` once
at the end (or write into a pre-allocated tensor).
"""
import sys
import time

import torch
from torch import nn


def main(steps=200):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256))
    model.eval()
    times = []
    outs = []
    with torch.inference_mode():
        for step in range(steps):
            t0 = time.perf_counter()
            x = torch.randn(512, 64)
            out = model(x)
            outs.append(out)
            times.append(time.perf_counter() - t0)
        all_out = torch.cat(outs)
    t = sorted(times[5:])
    print(f"scored {all_out.shape[0]} rows")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)

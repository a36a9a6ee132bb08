"""Healthy twin of problems/fp16_on_cpu.py: the model stays in float32 on the CPU.

The problem it fixes: A model cast to float16 for inference on a CPU without native fp16 math.

Thread: "CPU processing is extremely slow for models loaded with
torch_dtype = torch.float16",
https://github.com/huggingface/transformers/issues/34692

Problem: code written for a GPU calls ``model.half()`` and feeds float16
inputs, but on this CPU float16 matrix multiplications have no fast kernels
and run several times slower than float32.
Expected fix: keep float32 on the CPU (or bfloat16 where the CPU supports
it); use float16 only on a GPU.
"""
import sys
import time

import torch
from torch import nn

DTYPE = torch.float32


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 16)).eval().to(DTYPE)
    inputs = torch.randn(steps, 64, 256)
    times = []
    with torch.inference_mode():
        for batch in inputs:
            t0 = time.perf_counter()
            out = model(batch.to(DTYPE)).float().argmax(-1)
            times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"last batch classes: {out[:4].tolist()}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)

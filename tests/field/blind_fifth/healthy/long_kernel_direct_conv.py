"""Healthy twin of problems/long_kernel_direct_conv.py: the filter is applied by
FFT convolution.

The problem it fixes: A learnable 1024-tap FIR filter applied with
``F.conv1d``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
TAPS = 1024
LENGTH = 8000


def apply_filter(x, taps):
    # x: (batch, length); full linear convolution with the filter
    n = x.shape[-1] + taps.numel() - 1
    spec = torch.fft.rfft(x, n=n) * torch.fft.rfft(taps, n=n)
    return torch.fft.irfft(spec, n=n)


def main(steps=STEPS):
    torch.manual_seed(0)
    true_taps = torch.randn(TAPS) * torch.exp(-torch.arange(TAPS) / 150.0)
    taps = nn.Parameter(torch.zeros(TAPS))
    opt = torch.optim.Adam([taps], lr=1e-3)
    times = []
    for _ in range(steps):
        dry = torch.randn(4, LENGTH)
        with torch.no_grad():
            wet = apply_filter(dry, true_taps)
        t0 = time.perf_counter()
        loss = F.mse_loss(apply_filter(dry, taps), wet)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)

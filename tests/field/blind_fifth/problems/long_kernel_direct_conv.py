"""A learnable 1024-tap FIR filter applied with ``F.conv1d``.

Thread: "Slow convolution with large kernels, should be using FFT",
https://github.com/pytorch/pytorch/issues/21462

Problem: a room-response model learns a 1024-tap filter and applies it to
8,000-sample audio clips with ``F.conv1d``. Direct convolution costs
(signal length x kernel length) multiply-adds per channel, forward and twice
more backward, and the CPU convolution path gets no faster for long 1-D
kernels; in the frequency domain the same convolution is two real FFTs, a
product and an inverse FFT.
Expected fix: convolve via FFT (``torch.fft.rfft`` of signal and kernel, padded
to length n + k - 1, multiply, ``torch.fft.irfft``), as an FFT-conv layer does.
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
    out = F.conv1d(x.unsqueeze(1), taps.flip(-1).view(1, 1, -1), padding=taps.numel() - 1)
    return out.squeeze(1)


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

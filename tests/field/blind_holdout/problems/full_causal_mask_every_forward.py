"""A causal mask of the maximum context size built again in every forward pass.

Thread: "Construct causal mask on-the-fly" (attention layers allocated a
(n_ctx, n_ctx) causal mask for the maximum context; the discussion weighs
building masks at run time against keeping a cached mask buffer, which
"would avoid constructing new masks each forward pass"),
https://github.com/TransformerLensOrg/TransformerLens/pull/493

Problem: each attention layer calls
``torch.tril(torch.ones(4096, 4096, dtype=torch.bool))`` in ``forward`` and
slices the 64x64 corner it needs, allocating and filling 16 M elements per
layer per step.
Expected fix: build the mask once and keep it (``register_buffer`` in
``__init__``, sliced per call), or pass ``is_causal=True`` to
``scaled_dot_product_attention``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

MAX_CTX, DIM, HEADS = 4096, 64, 4


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, x):
        b, t, _ = x.shape
        mask = torch.tril(torch.ones(MAX_CTX, MAX_CTX, dtype=torch.bool))[:t, :t]
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return x + self.proj(y.transpose(1, 2).reshape(b, t, DIM))


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(500, DIM), *[CausalSelfAttention() for _ in range(4)],
                          nn.Linear(DIM, 500))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        tokens = torch.randint(0, 500, (16, 65))
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 500), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)

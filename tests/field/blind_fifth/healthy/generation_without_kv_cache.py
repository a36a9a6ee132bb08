"""Healthy twin of problems/generation_without_kv_cache.py: generation feeds only
the newest token and reuses the key/value cache.

The problem it fixes: Autoregressive generation that re-runs the whole prefix
for every new token.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
VOCAB, DIM, HEADS, LAYERS = 512, 128, 4, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        a = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(256, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx, start=0, caches=None):
        x = self.tok(idx) + self.pos(torch.arange(start, start + idx.shape[1]))
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.head(x)


@torch.no_grad()
def generate(model, prompt, new_tokens):
    caches = [{} for _ in model.blocks]
    logits = model(prompt, 0, caches)[:, -1]
    idx = prompt
    for _ in range(new_tokens):
        nxt = logits.argmax(-1, keepdim=True)
        idx = torch.cat([idx, nxt], 1)
        logits = model(nxt, idx.shape[1] - 1, caches)[:, -1]
    return idx


def main(steps=STEPS):
    torch.manual_seed(0)
    model = TinyGPT().eval()
    times = []
    for _ in range(steps):
        prompt = torch.randint(0, VOCAB, (4, 16))
        t0 = time.perf_counter()
        out = generate(model, prompt, 48)
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)

"""Autoregressive decoding that grows its key/value cache with ``torch.cat``.

Thread: "Stop using torch.cat for your KV cache implementations" (the
common ``self.k_cache = torch.cat([self.k_cache, K], dim=2)`` re-copies every
cached element at every decoding step; pre-allocate the cache and write each
new key and value into it in place),
https://www.shashankshekhar.com/logs/kv-cache-torch-cat

Problem: each decoding step appends the new token's keys and values
with ``torch.cat``, so every layer copies its whole cache (a 512-token prompt
plus everything generated) into a fresh tensor for every generated token.
Expected fix: pre-allocate the cache for the maximum length once and write
each step's keys/values in place (``cache[:, :, t] = k`` /
``index_copy_``), attending over the filled slice (a static KV cache).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

DIM, HEADS, LAYERS, PROMPT, VOCAB = 256, 4, 4, 512, 1000


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x, cache, pos):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        if cache:
            k = torch.cat([cache["k"], k], dim=2)
            v = torch.cat([cache["v"], v], dim=2)
        cache["k"], cache["v"] = k, v
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        return x + self.out(y.transpose(1, 2).reshape(b, t, DIM))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Attention() for _ in range(LAYERS))
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens, caches, pos):
        h = self.embed(tokens)
        for layer, cache in zip(self.layers, caches):
            h = layer(h, cache, pos)
        return self.head(h[:, -1])


def main(steps=120):
    torch.manual_seed(0)
    model = Decoder().eval()
    batch = 8
    caches = [{} for _ in range(LAYERS)]
    times = []
    with torch.inference_mode():
        prompt = torch.randint(0, VOCAB, (batch, PROMPT))
        token = model(prompt, caches, 0).argmax(-1, keepdim=True)
        for step in range(steps):
            t0 = time.perf_counter()
            token = model(token, caches, PROMPT + step).argmax(-1, keepdim=True)
            times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"last tokens: {token[:4, 0].tolist()}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120)

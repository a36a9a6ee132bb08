"""nanoGPT's training loop in small: `python nanogpt_loop.py [--max-iters N] [--eval-iters N]`.

As in nanoGPT's train.py: `estimate_loss()` evaluates both splits under `torch.no_grad()` (the model
in eval mode) every `eval_interval` iterations, iteration 0 included, so the script's first forwards
are evaluation forwards; each iteration then accumulates gradients over micro-steps and steps AdamW
through a GradScaler, with the gradient clipped. The model returns `(logits, loss)` like nanoGPT's.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--max-iters", type=int, default=60)
parser.add_argument("--eval-interval", type=int, default=20)
parser.add_argument("--eval-iters", type=int, default=10)
parser.add_argument("--gradient-accumulation-steps", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--block-size", type=int, default=64)
args = parser.parse_args()

n_layer, n_head, n_embd, vocab_size = 2, 4, 64, 65


class CausalSelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(args.block_size, n_embd)
        self.h = nn.ModuleList(Block() for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT does

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, vocab_size), targets.view(-1))
        return logits, loss


torch.manual_seed(1337)
data = {"train": torch.randint(vocab_size, (20000,)), "val": torch.randint(vocab_size, (2000,))}


def get_batch(split: str):
    d = data[split]
    ix = torch.randint(len(d) - args.block_size, (args.batch_size,))
    x = torch.stack([d[i:i + args.block_size] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + args.block_size] for i in ix])
    return x, y


model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
scaler = torch.amp.GradScaler("cpu", enabled=False)


@torch.no_grad()
def estimate_loss() -> dict:
    out = {}
    model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(args.eval_iters)
        for k in range(args.eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it: int) -> float:
    return 6e-5 + 0.5 * (1.0 + math.cos(math.pi * it / args.max_iters)) * (6e-4 - 6e-5)


X, Y = get_batch("train")
for iter_num in range(args.max_iters):
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    if iter_num % args.eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    for micro_step in range(args.gradient_accumulation_steps):
        _, loss = model(X, Y)
        loss = loss / args.gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

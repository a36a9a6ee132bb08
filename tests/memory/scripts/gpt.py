"""A small GPT-style language model (token + position embeddings, pre-norm blocks of causal
self-attention and an MLP, tied head) for memory tests; written here, nothing downloaded."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 512
    block_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.fc_out = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        # Explicit attention (as GPT-2 does), so its T x T matrices are visible activations.
        scores = (q @ k.transpose(-2, -1)) / (k.size(-1) ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig = GPTConfig(), *, checkpoint_blocks: bool = False) -> None:
        super().__init__()
        self.checkpoint_blocks = checkpoint_blocks
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpoint_blocks else block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def training_step(model: GPT, optimizer: torch.optim.Optimizer, batch_size: int, seed: int = 0):
    """A closure running one step (zero_grad, forward, backward, optimizer step) on random tokens."""
    cfg_vocab, t = model.wte.num_embeddings, model.wpe.num_embeddings
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(cfg_vocab, (batch_size, t), generator=gen)
    targets = torch.randint(cfg_vocab, (batch_size, t), generator=gen)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(idx, targets).backward()
        optimizer.step()

    return step

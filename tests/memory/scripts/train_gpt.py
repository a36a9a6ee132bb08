"""Train the small GPT on random tokens: `python train_gpt.py [--batch-size N] [--checkpoint] [--steps N]`."""

import argparse

import torch

from gpt import GPT, GPTConfig, training_step

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=4)
parser.add_argument("--block-size", type=int, default=128)
parser.add_argument("--checkpoint", action="store_true")
parser.add_argument("--steps", type=int, default=100)
args = parser.parse_args()

torch.manual_seed(0)
model = GPT(GPTConfig(block_size=args.block_size), checkpoint_blocks=args.checkpoint)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = training_step(model, optimizer, args.batch_size)
for _ in range(args.steps):
    step()

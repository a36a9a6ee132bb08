"""Healthy twin of problems/returns_python_loop.py: returns are a reversed
cumulative sum.

The problem it fixes: REINFORCE returns computed with a reverse Python loop
over every token.
"""
import sys
import time

import torch
from torch import nn

STEPS = 40
T = 2048
GAMMA = 1.0


def discounted_returns(rewards):
    # GAMMA == 1: the return is the sum of the remaining rewards
    return rewards.flip(-1).cumsum(-1).flip(-1)


def main(steps=STEPS):
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 16))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    obs = torch.randn(4, T, 32)
    actions = torch.randint(0, 16, (4, T))
    times = []
    for _ in range(steps):
        rewards = torch.randn(4, T) * 0.01
        t0 = time.perf_counter()
        returns = discounted_returns(rewards)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        logp = torch.log_softmax(policy(obs), -1).gather(-1, actions[..., None]).squeeze(-1)
        loss = -(logp * returns).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)

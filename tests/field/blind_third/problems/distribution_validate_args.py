"""A policy-gradient loop paying ``torch.distributions`` argument validation on every call.

Thread: "Disable torch distribution argument validation to improve
performance",
https://github.com/Toni-SM/skrl/pull/233

Problem: ``torch.distributions`` validates arguments by default (when Python
runs without ``-O``): every ``Normal(loc, scale)`` built in the update loop
checks its parameters' constraints and every ``log_prob`` checks that the
actions lie in the support, each check a few extra tensor operations and a
host-side ``all()``, on tiny tensors where they cost as much as the maths.
Expected fix: ``torch.distributions.Distribution.set_default_validate_args(False)``
once at start-up (or ``validate_args=False`` per distribution) after the
code is debugged.
"""
import sys
import time

import torch
from torch import nn
from torch.distributions import Normal


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2))
        self.log_std = nn.Parameter(torch.zeros(2))

    def dist(self, obs):
        return Normal(self.body(obs), self.log_std.exp())


def main(steps=150):
    torch.manual_seed(0)
    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        obs = torch.randn(256, 8)
        with torch.no_grad():
            actions = policy.dist(obs).sample()
        advantages = torch.randn(256)
        for mb in range(0, 256, 32):
            d = policy.dist(obs[mb:mb + 32])
            loss = -(d.log_prob(actions[mb:mb + 32]).sum(-1) * advantages[mb:mb + 32]).mean()
            loss = loss - 0.01 * d.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)

"""Healthy twin of problems/mvn_for_diagonal_gaussian.py: the diagonal Gaussian is
``Independent(Normal(mean, std), 1)``.

The problem it fixes: A PPO policy with a diagonal Gaussian built as a full
``MultivariateNormal``.
"""
import sys
import time

import torch
from torch import nn
from torch.distributions import Independent, Normal

STEPS = 40
ACT = 16


class Actor(nn.Module):
    def __init__(self, obs, act):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs, 64), nn.Tanh(), nn.Linear(64, act))
        self.log_std = nn.Parameter(torch.zeros(act))

    def dist(self, obs):
        mean = self.net(obs)
        std = self.log_std.exp().expand_as(mean)
        return Independent(Normal(mean, std), 1)


def main(steps=STEPS):
    torch.manual_seed(0)
    actor = Actor(24, ACT)
    opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
    obs = torch.randn(2048, 24)
    actions = torch.randn(2048, ACT)
    advantages = torch.randn(2048)
    old_logp = torch.randn(2048)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        dist = actor.dist(obs)
        ratio = (dist.log_prob(actions) - old_logp).clamp(-5, 5).exp()
        surrogate = torch.min(ratio * advantages, ratio.clamp(0.8, 1.2) * advantages)
        loss = -surrogate.mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)

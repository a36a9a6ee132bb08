"""A PPO policy with a diagonal Gaussian built as a full ``MultivariateNormal``.

Thread: "Continuous action space should use Independent Normal instead of
MultivariateNormal", https://github.com/nikhilbarhate99/PPO-PyTorch/issues/60

Problem: the actor's action distribution is built at every update as
``MultivariateNormal(mean, torch.diag_embed(var))``. The covariance is
diagonal, but the distribution does not know it: it checks the matrix, runs a
batched Cholesky factorisation of a (batch, 16, 16) matrix and triangular
solves for ``log_prob`` and ``entropy``, forward and backward, where
independent per-dimension normals give the same numbers element-wise.
Expected fix: use ``Independent(Normal(mean, var.sqrt()), 1)`` (or
``Normal(...).log_prob(a).sum(-1)``).
"""
import sys
import time

import torch
from torch import nn
from torch.distributions import MultivariateNormal

STEPS = 40
ACT = 16


class Actor(nn.Module):
    def __init__(self, obs, act):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs, 64), nn.Tanh(), nn.Linear(64, act))
        self.log_std = nn.Parameter(torch.zeros(act))

    def dist(self, obs):
        mean = self.net(obs)
        var = self.log_std.exp().pow(2).expand_as(mean)
        return MultivariateNormal(mean, torch.diag_embed(var))


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

"""Healthy twin of problems/distribution_validate_args.py: distribution argument validation is switched off once at start-up.

The problem it fixes: A policy-gradient loop paying ``torch.distributions`` argument validation on every call.

Thread: "Disable torch distribution argument validation to improve
performance",
https://github.com/Toni-SM/skrl/pull/233

Problem: ``torch.distributions`` validates arguments by default (when Python
runs without ``-O``). The rollout builds a ``Normal(loc, scale)`` for every
environment step and scores the sampled action, so each step of the
rollout checks the parameters' constraints and the action's support (a few
extra tensor operations and host-side ``all()`` calls) on tiny tensors
where the checks cost as much as the policy itself.
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


def rollout(policy, length=64):
    obs, acts, logps = [], [], []
    state = torch.zeros(8)
    with torch.no_grad():
        for _ in range(length):
            d = policy.dist(state)
            action = d.sample()
            obs.append(state)
            acts.append(action)
            logps.append(d.log_prob(action).sum())
            state = torch.tanh(state.roll(1) + 0.1 * action.sum())
    return torch.stack(obs), torch.stack(acts), torch.stack(logps)


def main(steps=60):
    torch.distributions.Distribution.set_default_validate_args(False)
    torch.manual_seed(0)
    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        obs, actions, old_logp = rollout(policy)
        advantages = torch.randn(len(obs))
        ratio = (policy.dist(obs).log_prob(actions).sum(-1) - old_logp).exp()
        loss = -(ratio * advantages).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)

"""Distributed runs: per-rank analysis, scaling, communication sweeps and a length-balancing sampler."""

"""The server under a burst with bad requests mixed in: `torchdoctor serve --demo` (the real CLI,
a subprocess on 127.0.0.1, default settings) gets VALID + BAD concurrent POST /predict at once,
the bad ones with a token id of -1 or 10^6 (outside the demo's 4096-row embedding). Prints the
HTTP statuses of the valid and of the bad requests as JSON; the goal: no valid request
answered 500. Figures in docs/reliability.md.

    python benchmarks/serve_hostile_load.py [--valid 1800] [--bad 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import subprocess
import sys
import time
from typing import Any

import aiohttp


async def burst(url: str, valid: int, bad: int, seed: int) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(url, connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        async with session.get("/health") as response:
            good = (await response.json())["example"]
        rng = random.Random(seed)
        bodies = [good] * valid + [{"inputs": [[rng.choice([-1, 10**6])] + good["inputs"][0][1:]]} for _ in range(bad)]
        rng.shuffle(bodies)

        async def post(body: Any) -> int:
            async with session.post("/predict", json=body) as response:
                await response.read()
                return response.status

        start = time.perf_counter()
        statuses = await asyncio.gather(*(post(body) for body in bodies))
        took = time.perf_counter() - start
    count = collections.Counter
    return {"valid": dict(count(s for b, s in zip(bodies, statuses) if b is good)),
            "bad": dict(count(s for b, s in zip(bodies, statuses) if b is not good)),
            "seconds": round(took, 2), "valid_500": sum(1 for b, s in zip(bodies, statuses) if b is good and s == 500)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--valid", type=int, default=1800)
    parser.add_argument("--bad", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-m", "torchdoctor", "serve", "--demo", "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[-1]  # "torchdoctor serve: listening on URL"
        result = asyncio.run(burst(url, options.valid, options.bad, options.seed))
    finally:
        server.terminate()
        server.wait(30)
    print(json.dumps(result))
    return 1 if result["valid_500"] else 0


if __name__ == "__main__":
    sys.exit(main())

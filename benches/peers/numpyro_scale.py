"""NUTS (numpyro) on `benches/scale.py`'s logistic regressions: the wall time until every
parameter has bulk and tail ESS >= 400 and R̂ < 1.01, what a user who would otherwise
run NUTS waits for.

    python3 benches/scale.py --rows 10000 100000 1000000 --formats npy --dir /tmp/scale
    python3 benches/peers/numpyro_scale.py --rows 10000 100000 1000000 --dir /tmp/scale

Needs numpyro and jax (`pip install numpyro jax[cpu]`) and the `.npy` files scale.py wrote
(x in the first 50 columns, y last). The model is `sgld sample --model logistic --prior
gaussian:1`'s: 50 coefficients and a bias, each N(0, 1), float32. Four chains vectorised
on the CPU's threads, numpyro's default warm-up (500 iterations: step size and a diagonal
metric), then draws in blocks of 250 until the targets hold (or --max-draws). Prints one
JSON line per N: the wall time (compilation included), the warm-up's share, the draws,
min ESS and max R̂.
"""

import argparse
import json
import os
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--dim", type=int, default=50)
    p.add_argument("--dir", default="/tmp/sgld-scale")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--target-ess", type=float, default=400.0)
    p.add_argument("--max-draws", type=int, default=4000)
    a = p.parse_args()

    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    numpyro.set_host_device_count(1)

    def model(x, y):
        beta = numpyro.sample("beta", dist.Normal(jnp.zeros(x.shape[1] + 1), 1.0))
        logits = x @ beta[:-1] + beta[-1]
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)

    for n in a.rows:
        table = np.load(os.path.join(a.dir, f"logistic_{n}x{a.dim}.npy"))
        x = jnp.asarray(table[:, : a.dim], dtype=jnp.float32)
        y = jnp.asarray(table[:, a.dim], dtype=jnp.float32)
        t0 = time.perf_counter()
        mcmc = MCMC(NUTS(model), num_warmup=500, num_samples=250, num_chains=a.chains,
                    chain_method="vectorized", progress_bar=False)
        mcmc.warmup(jax.random.PRNGKey(0), x, y, collect_warmup=False)
        jax.block_until_ready(mcmc.last_state)
        warm = time.perf_counter() - t0
        draws = []
        key = jax.random.PRNGKey(1)
        while True:
            key, sub = jax.random.split(key)
            mcmc.post_warmup_state = mcmc.last_state
            mcmc.run(sub, x, y)
            draws.append(np.asarray(mcmc.get_samples(group_by_chain=True)["beta"]))
            b = np.concatenate(draws, axis=1)
            bulk = effective_sample_size(b)
            tail = np.minimum(
                effective_sample_size((b <= np.quantile(b, 0.05, axis=(0, 1))).astype(float)),
                effective_sample_size((b >= np.quantile(b, 0.95, axis=(0, 1))).astype(float)))
            ess, rhat = float(min(bulk.min(), tail.min())), float(split_gelman_rubin(b).max())
            if (ess >= a.target_ess and rhat < 1.01) or b.shape[1] >= a.max_draws:
                break
        wall = time.perf_counter() - t0
        print(json.dumps({"rows": n, "sampler": "numpyro NUTS", "wall": round(wall, 2),
                          "warmup": round(warm, 2), "draws_per_chain": int(b.shape[1]),
                          "min_ess": round(ess), "max_rhat": round(rhat, 4),
                          "numpyro": numpyro.__version__, "jax": jax.__version__}), flush=True)


if __name__ == "__main__":
    main()

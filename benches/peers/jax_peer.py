"""The sgld bench workloads in JAX: each step written by hand, jit-compiled, `steps`
steps per call in a `lax.scan` (f32). One CPU thread unless the environment says
otherwise (set before JAX is imported)."""

import os

os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402



CHUNK = 1000


def scan_runner(step, carry0, key0):
    """Returns `run(steps)`, which advances the carry by `steps` (a multiple of CHUNK)
    steps in jitted `lax.scan` calls of CHUNK steps each (compiled here, before any
    timing), and the state holding the carry."""

    def many(carry, key):
        return jax.lax.scan(step, carry, jax.random.split(key, CHUNK))[0]

    compiled = jax.jit(many)
    state = {"carry": carry0, "key": key0}
    jax.block_until_ready(compiled(carry0, key0))

    def run(steps):
        carry = state["carry"]
        for _ in range(steps // CHUNK):
            state["key"], sub = jax.random.split(state["key"])
            carry = compiled(carry, sub)
        state["carry"] = jax.block_until_ready(carry)

    return run, state


def time_scan(run, seconds):
    return common.time_workload(run, seconds, granule=CHUNK)


def timed_running_mean(step, dim, seconds):
    """Times a scan whose carry is (θ, Σθ); returns the timing and the mean of θ over
    every step run (calibration included)."""
    carry0 = (jnp.zeros(dim, jnp.float32), jnp.zeros(dim, jnp.float32))
    run, state = scan_runner(step, carry0, jax.random.key(common.SEED))
    counted = {"steps": 0}

    def counting(steps):
        run(steps)
        counted["steps"] += steps

    t = time_scan(counting, seconds)
    return t, np.asarray(state["carry"][1], dtype=np.float64) / counted["steps"]


def a9a(args):
    x, y, xt, yt = common.load_a9a(args.data_dir)
    n, d = x.shape
    x, y = jnp.asarray(x), jnp.asarray(y)
    eps = jnp.float32(0.1 / n)
    h, s, scale = eps / 2, jnp.sqrt(eps), jnp.float32(n / 10)

    def step(theta, key):
        kb, kn = jax.random.split(key)
        idx = jax.random.randint(kb, (10,), 0, n)
        xb, yb = x[idx], y[idx]
        c = yb * jax.nn.sigmoid(-yb * (xb @ theta))
        g = scale * (c @ xb) - jnp.sign(theta)
        return theta + h * g + s * jax.random.normal(kn, (d,), jnp.float32), None

    run, state = scan_runner(step, jnp.zeros(d, jnp.float32), jax.random.key(common.SEED))
    t = time_scan(run, args.seconds)
    theta = np.asarray(state["carry"])
    acc = np.mean(((xt @ theta) >= 0) == (yt > 0))
    return common.result("a9a", "step", t, "test_accuracy", [acc],
                         "a9a (dense rows), a9a.t for the check", common.A9A_OPS)


def gmm_grad(n):
    var1, var2, vx = 10.0, 1.0, 2.0

    def grad(theta, xi):
        d1 = xi - theta[0]
        d2 = d1 - theta[1]
        r = jax.nn.sigmoid((d1 * d1 - d2 * d2) / (2 * vx))
        return jnp.stack([n * ((1 - r) * d1 + r * d2) / vx - theta[0] / var1,
                          n * r * d2 / vx - theta[1] / var2]).astype(jnp.float32)

    return grad


def gmm(args):
    xs = jnp.asarray(common.load_gmm(args.bench_data))
    n = xs.shape[0]
    eps = jnp.float32(0.01)
    h, s = eps / 2, jnp.sqrt(eps)
    grad = gmm_grad(n)

    def step(carry, key):
        theta, total = carry
        kb, kn = jax.random.split(key)
        xi = xs[jax.random.randint(kb, (), 0, n)]
        theta = theta + h * grad(theta, xi) + s * jax.random.normal(kn, (2,), jnp.float32)
        return (theta, total + theta), None

    t, mean = timed_running_mean(step, 2, args.seconds)
    return common.result("gmm", "step", t, "posterior_mean", mean, "gmm.csv", common.GMM_OPS)


def ica(args):
    x = jnp.asarray(common.load_ica(args.bench_data), dtype=jnp.float32)
    a = common.load_ica_mixing(args.bench_data)
    n, d = x.shape
    eps, lam, b = 0.1 / n, 1.0, 100
    eye = jnp.eye(d)

    def step(w, key):
        kb, kn = jax.random.split(key)
        xb = x[jax.random.randint(kb, (b,), 0, n)]
        yb = xb @ w.T
        a_ = n * eye - (n / b) * (jnp.tanh(yb / 2).T @ yb)
        c = w.T @ w
        dw = a_ @ w - lam * w @ c + (d + 1) * w
        # η·W: rows N(0, ε WᵀW), the distribution of eq. 16's η·√(WᵀW), as on the
        # Rust side (no eigendecomposition needed).
        eta = jnp.sqrt(eps) * jax.random.normal(kn, (d, d), jnp.float32)
        return w + 0.5 * eps * dw + eta @ w, None

    w0 = jnp.eye(d, dtype=jnp.float32)
    run, state = scan_runner(step, w0, jax.random.key(common.SEED))
    t = time_scan(run, args.seconds)
    w = np.asarray(state["carry"], dtype=np.float64)
    return common.result("ica", "step", t, "amari_distance", [common.amari(w @ a)],
                         "ica.csv", common.ICA_OPS)


def noise(args):
    size = 1 << 16
    fill = jax.jit(lambda key: jax.random.normal(key, (size,), jnp.float32))
    state = {"key": jax.random.key(common.SEED), "out": None}
    state["out"] = jax.block_until_ready(fill(state["key"]))

    def run(fills):
        for _ in range(fills):
            state["key"], sub = jax.random.split(state["key"])
            state["out"] = fill(sub)
        jax.block_until_ready(state["out"])

    t = common.time_workload(run, args.seconds, unit_scale=size)
    out = np.asarray(state["out"], dtype=np.float64)
    return common.result("noise", "normal", t, "mean_and_variance_of_last_fills",
                         [out.mean(), out.var()], "f32 standard normals, 65536 per fill",
                         common.NOISE_OPS)


if __name__ == "__main__":
    args = common.parse_args("jax", ["a9a", "gmm", "ica", "noise"])
    fns = {"a9a": a9a, "gmm": gmm, "ica": ica, "noise": noise}
    print(common.report("jax", jax.__version__, [fns[w](args) for w in args.workloads]))

"""The sgld bench workloads a9a and gmm with BlackJAX's `sgld` (its gradient estimator
from the log-prior and per-datum log-likelihood, and its overdamped Langevin step),
jit-compiled, CHUNK steps per `lax.scan` call, f32, one CPU thread.

BlackJAX's step is `θ + h∇ + √(2h)·z`, so its `step_size` is h = ε/2 of sgld's ε."""

import os

os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import blackjax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
from jax_peer import scan_runner, time_scan, timed_running_mean  # noqa: E402


def sgld_step(logprior, loglik, n, batch, data, h):
    sgld = blackjax.sgld(blackjax.sgmcmc.gradients.grad_estimator(logprior, loglik, n))

    def step(carry, key):
        position, total = carry
        kb, ks = jax.random.split(key)
        idx = jax.random.randint(kb, (batch,), 0, n)
        minibatch = jax.tree_util.tree_map(lambda a: a[idx], data)
        position = sgld.step(ks, position, minibatch, h)
        return (position, total + position), None

    return step


def a9a(args):
    x, y, xt, yt = common.load_a9a(args.data_dir)
    n, d = x.shape

    def logprior(theta):
        return -jnp.sum(jnp.abs(theta))

    def loglik(theta, row):
        xi, yi = row
        return jax.nn.log_sigmoid(yi * (xi @ theta))

    step = sgld_step(logprior, loglik, n, 10, (jnp.asarray(x), jnp.asarray(y)),
                     jnp.float32(0.05 / n))
    carry0 = (jnp.zeros(d, jnp.float32), jnp.zeros(d, jnp.float32))
    run, state = scan_runner(step, carry0, jax.random.key(common.SEED))
    t = time_scan(run, args.seconds)
    theta = np.asarray(state["carry"][0])
    acc = np.mean(((xt @ theta) >= 0) == (yt > 0))
    return common.result("a9a", "step", t, "test_accuracy", [acc],
                         "a9a (dense rows), a9a.t for the check", common.A9A_OPS)


def gmm(args):
    xs = jnp.asarray(common.load_gmm(args.bench_data))
    n = xs.shape[0]
    var1, var2, vx = 10.0, 1.0, 2.0

    def logprior(theta):
        return -0.5 * (theta[0] ** 2 / var1 + theta[1] ** 2 / var2)

    def loglik(theta, xi):
        a = -0.5 * (xi - theta[0]) ** 2 / vx
        b = -0.5 * (xi - theta[0] - theta[1]) ** 2 / vx
        return jnp.logaddexp(a, b)

    step = sgld_step(logprior, loglik, n, 1, xs, jnp.float32(0.005))
    t, mean = timed_running_mean(step, 2, args.seconds)
    return common.result("gmm", "step", t, "posterior_mean", mean, "gmm.csv", common.GMM_OPS)


if __name__ == "__main__":
    args = common.parse_args("blackjax", ["a9a", "gmm"])
    fns = {"a9a": a9a, "gmm": gmm}
    print(common.report("blackjax", blackjax.__version__,
                        [fns[w](args) for w in args.workloads]))

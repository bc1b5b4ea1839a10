"""The sgld bench workloads in NumPy (f32, one core)."""

import math

import numpy as np

import common


def a9a(args):
    x, y, xt, yt = common.load_a9a(args.data_dir)
    n, d = x.shape
    eps = np.float32(0.1 / n)
    h, s, scale = eps / 2, np.float32(np.sqrt(eps)), np.float32(n / 10)
    rng = np.random.default_rng(common.SEED)
    theta = np.zeros(d, dtype=np.float32)

    def run(steps):
        nonlocal theta
        th = theta
        for _ in range(steps):
            idx = rng.integers(0, n, 10)
            xb, yb = x[idx], y[idx]
            c = yb / (1 + np.exp(yb * (xb @ th)))
            g = scale * (c @ xb) - np.sign(th)
            th = th + h * g + s * rng.standard_normal(d, dtype=np.float32)
        theta = th

    t = common.time_workload(run, args.seconds)
    acc = np.mean(((xt @ theta) >= 0) == (yt > 0))
    return common.result("a9a", "step", t, "test_accuracy", [acc],
                         "a9a (dense rows), a9a.t for the check", common.A9A_OPS)


def gmm(args):
    """Plain Python floats for the two-parameter arithmetic (NumPy arrays of length 2
    are five times slower), with the normals and indices drawn by NumPy in blocks."""
    xs = [float(v) for v in common.load_gmm(args.bench_data)]
    n = len(xs)
    eps = 0.01
    h, s = eps / 2, eps ** 0.5
    var1, var2, vx = 10.0, 1.0, 2.0
    rng = np.random.default_rng(common.SEED)
    state = {"t": (0.0, 0.0), "sum": [0.0, 0.0], "count": 0}
    block = 1 << 16

    def run(steps):
        t1, t2 = state["t"]
        a1 = a2 = 0.0
        done = 0
        while done < steps:
            k = min(block, steps - done)
            z = rng.standard_normal(2 * k, dtype=np.float32).tolist()
            idx = rng.integers(0, n, k).tolist()
            for m in range(k):
                xi = xs[idx[m]]
                d1 = xi - t1
                d2 = d1 - t2
                r = 1 / (1 + math.exp(-(d1 * d1 - d2 * d2) / (2 * vx)))
                g1 = n * ((1 - r) * d1 + r * d2) / vx - t1 / var1
                g2 = n * r * d2 / vx - t2 / var2
                t1 += h * g1 + s * z[2 * m]
                t2 += h * g2 + s * z[2 * m + 1]
                a1 += t1
                a2 += t2
            done += k
        state["t"] = (t1, t2)
        state["sum"][0] += a1
        state["sum"][1] += a2
        state["count"] += steps

    t = common.time_workload(run, args.seconds)
    mean = [v / state["count"] for v in state["sum"]]
    return common.result("gmm", "step", t, "posterior_mean", mean, "gmm.csv",
                         common.GMM_OPS)


def ica(args):
    x = common.load_ica(args.bench_data)
    a = common.load_ica_mixing(args.bench_data)
    n, d = x.shape
    eps, lam, b = np.float32(0.1 / n), np.float32(1.0), 100
    rng = np.random.default_rng(common.SEED)
    w = np.eye(d, dtype=np.float32)
    eye = np.eye(d, dtype=np.float32)

    def run(steps):
        nonlocal w
        for _ in range(steps):
            xb = x[rng.integers(0, n, b)]
            yb = xb @ w.T
            a_ = np.float32(n) * eye - np.float32(n / b) * (np.tanh(yb / 2).T @ yb)
            c = w.T @ w
            dw = a_ @ w - lam * w @ c + np.float32(d + 1) * w
            # η·W: rows N(0, ε WᵀW), eq. 16's η·√(WᵀW) in distribution (as in Rust).
            eta = np.sqrt(eps) * rng.standard_normal((d, d), dtype=np.float32)
            w = w + 0.5 * eps * dw + eta @ w

    t = common.time_workload(run, args.seconds)
    return common.result("ica", "step", t, "amari_distance", [common.amari(w @ a)],
                         "ica.csv", common.ICA_OPS)


def noise(args):
    rng = np.random.default_rng(common.SEED)
    out = np.empty(1 << 16, dtype=np.float32)

    def run(steps):
        for _ in range(-(-steps // len(out))):
            rng.standard_normal(out=out, dtype=np.float32)

    t = common.time_workload(lambda k: run(k * len(out)), args.seconds, unit_scale=len(out))
    return common.result("noise", "normal", t, "mean_and_variance_of_last_fills",
                         [out.mean(), out.var()], "f32 standard normals, 65536 per fill",
                         common.NOISE_OPS)


if __name__ == "__main__":
    args = common.parse_args("numpy", ["a9a", "gmm", "ica", "noise"])
    fns = {"a9a": a9a, "gmm": gmm, "ica": ica, "noise": noise}
    print(common.report("numpy", np.__version__, [fns[w](args) for w in args.workloads]))

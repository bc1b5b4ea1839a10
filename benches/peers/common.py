"""Shared by the peer programs: data loading, timing and the JSON report.

Every peer prints the same JSON shape as `sgld bench --json` (with `peaks` and the floors,
`ops_floor_ns`, `chain_ns`, `floor_ns` and `floor_ratio`, null: floors are measured by the
Rust side only).
"""

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

SEED = 20111
REPEATS = 11
ICA_D = 10


def parse_args(name, workloads):
    p = argparse.ArgumentParser(description=f"{name}: the sgld bench workloads")
    p.add_argument("--workload", default="all", choices=workloads + ["all"])
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per workload")
    p.add_argument("--data-dir", default=os.environ.get("SGLD_DATA_DIR"),
                   help="holds a9a/a9a and a9a/a9a.t (default: $SGLD_DATA_DIR)")
    p.add_argument("--bench-data", required=True,
                   help="the directory `sgld bench --data-out` wrote (gmm.csv, ica.csv)")
    a = p.parse_args()
    a.workloads = workloads if a.workload == "all" else [a.workload]
    return a


def read_libsvm(path, d=None):
    rows, ys = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            ys.append(1.0 if float(parts[0]) > 0 else -1.0)
            rows.append([int(t.split(":")[0]) - 1 for t in parts[1:]])
    d = d or max(max(r) for r in rows if r) + 1
    x = np.zeros((len(rows), d + 1), dtype=np.float32)
    for i, r in enumerate(rows):
        x[i, [j for j in r if j < d]] = 1.0
    x[:, d] = 1.0  # bias
    return x, np.asarray(ys, dtype=np.float32), d


def load_a9a(data_dir):
    """a9a as dense f32 rows with a bias column (d = 124), and the test set."""
    if not data_dir or not os.path.isfile(os.path.join(data_dir, "a9a", "a9a")):
        raise SystemExit("a9a: no a9a/a9a under --data-dir (or $SGLD_DATA_DIR)")
    x, y, d = read_libsvm(os.path.join(data_dir, "a9a", "a9a"))
    xt, yt, _ = read_libsvm(os.path.join(data_dir, "a9a", "a9a.t"), d)
    return x, y, xt, yt


def load_gmm(bench_data):
    return np.loadtxt(os.path.join(bench_data, "gmm.csv"), skiprows=1, dtype=np.float32)


def load_ica(bench_data):
    return np.loadtxt(os.path.join(bench_data, "ica.csv"), delimiter=",", dtype=np.float32)


def load_ica_mixing(bench_data):
    return np.loadtxt(os.path.join(bench_data, "ica_mixing.csv"), delimiter=",")


def amari(p):
    """The Amari distance of P = W A, normalised to [0, 1] (as in sgld)."""
    p = np.abs(p)
    d = p.shape[0]
    r = (p.sum(1) / p.max(1) - 1).sum() + (p.sum(0) / p.max(0) - 1).sum()
    return float(r / (2 * d * (d - 1)))


def time_workload(run, seconds, unit_scale=1.0, granule=1):
    """`run(steps)` runs `steps` units (a multiple of `granule`) and returns when they
    are done. Calibrates, then times REPEATS repeats; returns (median, min, units per
    repeat) in ns per unit."""
    steps = granule
    while True:
        t0 = time.perf_counter()
        run(steps)
        t = time.perf_counter() - t0
        if t >= 0.02 or steps >= 1 << 30:
            break
        steps *= 4
    per = int(seconds / REPEATS / (t / steps)) // granule * granule
    per = max(granule, per)
    ns = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        run(per)
        ns.append((time.perf_counter() - t0) * 1e9 / per / unit_scale)
    return statistics.median(ns), min(ns), per


def result(name, unit, timing, check_name, check_value, data, ops):
    median, low, per = timing
    return {
        "name": name,
        "unit": unit,
        "ns_median": median,
        "ns_min": low,
        "repeats": REPEATS,
        "units_per_repeat": per,
        "ops": ops,
        "ops_floor_ns": None,
        "chain_ns": None,
        "floor_ns": None,
        "floor_ratio": None,
        "check": {"name": check_name, "value": [float(v) for v in check_value]},
        "data": data,
    }


def report(implementation, version, workloads):
    return json.dumps({
        "implementation": implementation,
        "version": version,
        "cpu": platform.processor() or platform.machine(),
        "cpu_features": [],
        "peaks": None,
        "workloads": workloads,
    }, indent=2)


A9A_OPS = {"normals": 124, "gathers": 0, "fmas_f32": 0, "fmas_f64": 0, "tanh": 10}
GMM_OPS = {"normals": 2, "gathers": 0, "fmas_f32": 0, "fmas_f64": 0, "tanh": 1}
ICA_OPS = {"normals": 100, "gathers": 0, "fmas_f32": 0, "fmas_f64": 0, "tanh": 1000}
NOISE_OPS = {"normals": 1, "gathers": 0, "fmas_f32": 0, "fmas_f64": 0, "tanh": 0}

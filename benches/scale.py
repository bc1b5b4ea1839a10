"""`sgld sample` as the data grow: load, warm-up, sampling, wall time and peak memory for a
logistic regression of N rows x d correlated features (labels 0/1, N(0, 1) priors, a
fixed seed), read from CSV, .npy and Parquet, beside pandas' `read_csv` of the same file.

    python3 benches/scale.py --rows 10000 100000 1000000 --dir /tmp/scale --json scale.jsonl
    python3 benches/scale.py --rows 10000000 --formats npy parquet --dir /tmp/scale
    python3 benches/scale.py --dims 200 1000 10000 --sparse-cols 50000 100000 --dir /tmp/scale

`--dims` and `--sparse-cols` run wide data instead, with the defaults (a laplace:1 prior):
`--wide-rows` rows (2,000) of d correlated dense features in CSV, and of that many binary
features in LIBSVM, `--nnz` (100) set in each row (`--values`: tf-idf-like values).

The Parquet file is `sgld data convert`'s of the .npy (float32 columns, snappy).
`--json FILE` appends each run as a JSON line (and each pandas read as one more), which
`benches/scale_plot.py` draws beside `benches/peers/numpyro_scale.py`'s.

Needs numpy and pandas, and a release build (`cargo build --release`). The data files are
written once into --dir (a CSV of 10⁷ rows is 4.8 GB) and reused by later runs. Prints a
Markdown table; each row is one run (the machine is shared: compare within a run).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

SEED = 7
HERE = os.path.dirname(os.path.abspath(__file__))
SGLD = os.path.join(HERE, "..", "target", "release", "sgld")


def make(n, d, path_csv, path_npy, formats):
    """The data set of n rows: x ~ N(0, AAᵀ/d), y ~ Bernoulli(σ(xᵀβ + 0.3))."""
    need = [f for f, p in (("csv", path_csv), ("npy", path_npy)) if f in formats and not os.path.exists(p)]
    if not need:
        return
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((d, d)) * 0.3 + np.eye(d)
    beta = rng.standard_normal(d) * 0.5
    table = np.empty((n, d + 1), dtype=np.float32)
    step = 1_000_000
    for s in range(0, n, step):
        k = min(step, n - s)
        x = rng.standard_normal((k, d)) @ a.T / np.sqrt(d)
        p = 1 / (1 + np.exp(-(x @ beta + 0.3)))
        table[s:s + k, :d] = x
        table[s:s + k, d] = rng.random(k) < p
    if "npy" in need:
        np.save(path_npy, table)
    if "csv" in need:
        import pandas as pd
        cols = [f"x{j}" for j in range(d)] + ["y"]
        with open(path_csv, "w") as f:
            f.write(",".join(cols) + "\n")
            for s in range(0, n, step):
                pd.DataFrame(table[s:s + step]).to_csv(f, header=False, index=False, float_format="%.6g")


def make_parquet(path_npy, path_parquet):
    if not os.path.exists(path_parquet):
        r = subprocess.run([SGLD, "data", "convert", path_npy, path_parquet], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"sgld data convert failed:\n{r.stderr}")


def make_wide(n, d, path):
    """n rows of d correlated dense features (`make`'s up to 2,000; ten shared factors
    above, where a d x d mixing matrix is too large), as CSV."""
    if os.path.exists(path):
        return
    if d <= 2000:
        make(n, d, path, path + ".npy", {"csv"})
        return
    import pandas as pd
    rng = np.random.default_rng(SEED)
    f, w = rng.standard_normal((n, 10)), rng.standard_normal((10, d)) * 0.3
    x = ((rng.standard_normal((n, d)) + f @ w) / np.sqrt(1.9)).astype(np.float32)
    beta = rng.standard_normal(d) * (0.5 / np.sqrt(d / 50))
    y = rng.random(n) < 1 / (1 + np.exp(-(x @ beta + 0.3)))
    table = pd.DataFrame(x, columns=[f"x{j}" for j in range(d)])
    table["y"] = y.astype(np.float32)
    table.to_csv(path, index=False, float_format="%.6g")


def make_sparse(n, d, nnz, path, values=False):
    """n LIBSVM rows of d features, nnz set in each (labels ±1 from 500 non-zero
    coefficients): binary, or with `values` tf-idf-like ones (log-normal, each row of
    unit length)."""
    if os.path.exists(path):
        return
    rng = np.random.default_rng(SEED)
    beta = np.zeros(d)
    beta[rng.choice(d, min(500, d), replace=False)] = rng.standard_normal(min(500, d))
    with open(path, "w") as f:
        for _ in range(n):
            cols = np.sort(rng.choice(d, nnz, replace=False))
            if values:
                v = rng.lognormal(0.0, 0.7, nnz)
                v /= np.linalg.norm(v)
                z = (beta[cols] * v).sum() * np.sqrt(nnz)
                cells = " ".join(f"{c + 1}:{x:.5g}" for c, x in zip(cols, v))
            else:
                z = beta[cols].sum()
                cells = " ".join(f"{c + 1}:1" for c in cols)
            y = 1 if rng.random() < 1 / (1 + np.exp(-z)) else -1
            f.write(f"{y} {cells}\n")


def run(train, out, prior=("--prior", "gaussian:1"), fmt=()):
    """One `sgld sample` under /usr/bin/time -v: its timings and peak memory."""
    cmd = ["/usr/bin/time", "-v", SGLD, "sample", "--model", "logistic", *prior, *fmt,
           "--train", train, "--out", out, "--overwrite"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sgld failed on {train}:\n{r.stderr}")
    load = float(re.search(r"training rows of \d+ features in ([\d.]+) s", r.stderr).group(1))
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    s = json.load(open(os.path.join(out, "summary.json")))
    ess = min(min(p["ess_bulk"], p["ess_tail"]) for p in s["params"])
    return {
        "load": load,
        "sampling": s["sampling_seconds"],
        "warmup": wall - load - s["sampling_seconds"],
        "wall": wall,
        "peak_mb": peak_kb / 1024,
        "passes": s["warmup"].get("mode_passes"),
        "ess": ess,
        "rhat": max(p["rhat"] for p in s["params"]),
    }


def pandas_read(path):
    import pandas as pd
    t0 = time.perf_counter()
    pd.read_csv(path)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--dim", type=int, default=50)
    p.add_argument("--formats", nargs="+", default=["csv", "npy", "parquet"],
                   choices=["csv", "npy", "parquet"])
    p.add_argument("--dir", default="/tmp/sgld-scale")
    p.add_argument("--json", help="append each run to this file as a JSON line")
    p.add_argument("--dims", type=int, nargs="+", default=[],
                   help="wide dense runs of this many features (instead of --rows)")
    p.add_argument("--sparse-cols", type=int, nargs="+", default=[],
                   help="wide sparse (LIBSVM) runs of this many features")
    p.add_argument("--wide-rows", type=int, default=2000)
    p.add_argument("--nnz", type=int, default=100)
    p.add_argument("--values", action="store_true",
                   help="sparse rows with tf-idf-like values instead of binary ones")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.dims or a.sparse_cols:
        wide(a)
        return
    print("| N | format | load s | warm-up s | sampling s | wall s | peak MB | mode passes | min ESS | max R̂ | pandas read_csv s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in a.rows:
        base = os.path.join(a.dir, f"logistic_{n}x{a.dim}")
        need = set(a.formats) | ({"npy"} if "parquet" in a.formats else set())
        make(n, a.dim, base + ".csv", base + ".npy", need)
        if "parquet" in a.formats:
            make_parquet(base + ".npy", base + ".parquet")
        for f in a.formats:
            r = run(f"{base}.{f}", f"{base}.{f}.out")
            pandas = pandas_read(base + ".csv") if f == "csv" else None
            print(f"| {n:,} | {f} | {r['load']:.2f} | {r['warmup']:.2f} | {r['sampling']:.2f} | "
                  f"{r['wall']:.2f} | {r['peak_mb']:.0f} | {r['passes']:.1f} | {r['ess']:.0f} | "
                  f"{r['rhat']:.3f} | {'' if pandas is None else f'{pandas:.2f}'} |", flush=True)
            if a.json:
                with open(a.json, "a") as out:
                    out.write(json.dumps({"rows": n, "sampler": f"sgld ({f})", **r}) + "\n")
                    if pandas is not None:
                        line = {"rows": n, "sampler": "pandas read_csv alone", "wall": pandas}
                        out.write(json.dumps(line) + "\n")


def wide(a):
    """The wide runs, one table row each."""
    print("| rows × features | data | warm-up s | sampling s | wall s | peak MB | min ESS | max R̂ | warnings |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = [(d, "dense", os.path.join(a.dir, f"wide_{a.wide_rows}x{d}.csv"), ()) for d in a.dims]
    kind, tag = ("sparse with values", "tfidf") if a.values else ("sparse binary", "sparse")
    runs += [(d, f"{kind}, {a.nnz} a row", os.path.join(a.dir, f"{tag}_{a.wide_rows}x{d}.libsvm"),
              ("--format", "libsvm")) for d in a.sparse_cols]
    for d, kind, path, fmt in runs:
        if fmt:
            make_sparse(a.wide_rows, d, a.nnz, path, a.values)
        else:
            make_wide(a.wide_rows, d, path)
        r = run(path, path + ".out", prior=(), fmt=fmt)
        warnings = len(json.load(open(os.path.join(path + ".out", "summary.json")))["warnings"])
        print(f"| {a.wide_rows:,} × {d:,} | {kind} | {r['warmup']:.1f} | {r['sampling']:.1f} | "
              f"{r['wall']:.1f} | {r['peak_mb']:.0f} | {r['ess']:.0f} | {r['rhat']:.3f} | {warnings} |",
              flush=True)
        if a.json:
            with open(a.json, "a") as out:
                out.write(json.dumps({"rows": a.wide_rows, "dim": d, "data": kind, **r}) + "\n")


if __name__ == "__main__":
    main()

"""`sgld sample` as the data grow: load, warm-up, sampling, wall time and peak memory for a
logistic regression of N rows x d correlated features (labels 0/1, N(0, 1) priors, a
fixed seed), read from CSV, .npy and Parquet, beside pandas' `read_csv` of the same file.

    python3 benches/scale.py --rows 10000 100000 1000000 --dir /tmp/scale --json scale.jsonl
    python3 benches/scale.py --rows 10000000 --formats npy parquet --dir /tmp/scale

The Parquet file is `sgld data convert`'s of the .npy (float32 columns, snappy).
`--json FILE` appends each run as a JSON line, which `benches/scale_plot.py` draws beside
`benches/peers/numpyro_scale.py`'s.

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


def run(train, out):
    """One `sgld sample` under /usr/bin/time -v: its timings and peak memory."""
    cmd = ["/usr/bin/time", "-v", SGLD, "sample", "--model", "logistic", "--prior", "gaussian:1",
           "--train", train, "--out", out]
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
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
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
            pandas = f"{pandas_read(base + '.csv'):.2f}" if f == "csv" else ""
            print(f"| {n:,} | {f} | {r['load']:.2f} | {r['warmup']:.2f} | {r['sampling']:.2f} | "
                  f"{r['wall']:.2f} | {r['peak_mb']:.0f} | {r['passes']:.1f} | {r['ess']:.0f} | "
                  f"{r['rhat']:.3f} | {pandas} |", flush=True)
            if a.json:
                with open(a.json, "a") as out:
                    out.write(json.dumps({"rows": n, "sampler": f"sgld ({f})", **r}) + "\n")


if __name__ == "__main__":
    main()

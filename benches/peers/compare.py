"""Runs `sgld bench --json` and the NumPy, JAX and BlackJAX peers on the same data in
one go, and prints the side-by-side table (Markdown) with the ratios.

    python3 benches/peers/compare.py [--seconds 3] [--data-dir ../shared/datasets]

Every program is pinned to one core (taskset) when taskset exists. A peer whose
Python package is missing is skipped with a note. The JSON of every side is written
next to the table (--out, default target/peers).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = [("numpy", "numpy_peer.py", "numpy"), ("jax", "jax_peer.py", "jax"),
         ("blackjax", "blackjax_peer.py", "blackjax")]


def pinned(cmd):
    return (["taskset", "-c", "0"] + cmd) if shutil.which("taskset") else cmd


def run_json(cmd, env=None):
    out = subprocess.run(pinned(cmd), capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return json.loads(out.stdout)


def has(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True).returncode == 0


def fmt_ns(ns):
    return f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.1f} ns" if ns >= 10 else f"{ns:.2f} ns"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--data-dir", default=os.environ.get("SGLD_DATA_DIR",
                                                        os.path.join(ROOT, "..", "shared", "datasets")))
    p.add_argument("--out", default=os.path.join(ROOT, "target", "peers"))
    p.add_argument("--sgld", help="the sgld binary (default: cargo build --release)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    data_dir = os.path.abspath(a.data_dir)
    bench_data = os.path.join(a.out, "data")
    sgld = a.sgld
    if not sgld:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "sgld-harness"],
                       cwd=ROOT, check=True)
        sgld = os.path.join(ROOT, "target", "release", "sgld")
    reports = {"sgld": run_json([sgld, "bench", "--json", "--seconds", str(a.seconds),
                                 "--data-dir", data_dir, "--data-out", bench_data])}
    for name, script, module in PEERS:
        if not has(module):
            print(f"({name}: python package `{module}` not installed, skipped)")
            continue
        reports[name] = run_json([sys.executable, os.path.join(HERE, script), "--seconds",
                                  str(a.seconds), "--data-dir", data_dir,
                                  "--bench-data", bench_data])
    for name, r in reports.items():
        with open(os.path.join(a.out, f"{name}.json"), "w") as f:
            json.dump(r, f, indent=2)

    ours = {w["name"]: w for w in reports["sgld"]["workloads"]}
    peers = [n for n in reports if n != "sgld"]
    by = {n: {w["name"]: w for w in reports[n]["workloads"]} for n in peers}
    r = reports["sgld"]
    pk = r["peaks"]
    print(f"sgld {r['version']} on {r['cpu']}, one core; compiled for {' '.join(r['cpu_features'])}")
    print(f"peaks: {pk['normals_per_ns']:.2f} normals/ns, {pk['gathers_per_ns']:.2f} gathers/ns, "
          f"{pk['fmas_f32_per_ns']:.1f} f32 FMAs/ns, {pk['fmas_f64_per_ns']:.1f} f64 FMAs/ns, "
          f"{pk['tanh_per_ns']:.2f} tanh/ns")
    chains = [f"{n} {fmt_ns(w['chain_ns'])}" for n, w in ours.items() if w.get("chain_ns")]
    if chains:
        print("chain latency (the floor where it exceeds the operation counts): " + ", ".join(chains))
    print("medians over 11 repeats, per step (per normal for noise)\n")
    head = ["workload", "sgld"] + peers + ["best peer / sgld"]
    if "blackjax" in peers:
        head.append("blackjax / sgld")
    head += ["sgld floor", "sgld / floor"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, w in ours.items():
        row = [name, fmt_ns(w["ns_median"])]
        times = []
        for n in peers:
            pw = by[n].get(name)
            row.append(fmt_ns(pw["ns_median"]) if pw else "–")
            if pw:
                times.append(pw["ns_median"])
        row.append(f"{min(times) / w['ns_median']:.1f}×" if times else "–")
        if "blackjax" in peers:
            bw = by["blackjax"].get(name)
            row.append(f"{bw['ns_median'] / w['ns_median']:.1f}×" if bw else "–")
        row += [fmt_ns(w["floor_ns"]), f"{w['floor_ratio']:.1f}"]
        print("| " + " | ".join(row) + " |")
    print("\nchecks (a fast but wrong run shows here):\n")
    print("| workload | check | " + " | ".join(["sgld"] + peers) + " |")
    print("|" + "---|" * (2 + 1 + len(peers)))
    for name, w in ours.items():
        vals = [", ".join(f"{v:.3f}" for v in w["check"]["value"])]
        for n in peers:
            pw = by[n].get(name)
            vals.append(", ".join(f"{v:.3f}" for v in pw["check"]["value"]) if pw else "–")
        print(f"| {name} | {w['check']['name']} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    main()

"""The accuracy of `benches/scale.py`'s runs: each run's means and sds against the Laplace
approximation at the exact mode (Newton's method in f64), which is accurate at N >= 10^6.

    python3 benches/scale.py --rows 1000000 --formats npy --dir /tmp/scale
    python3 benches/scale_accuracy.py /tmp/scale/logistic_1000000x50.npy --seeds 1 2 3 4 5

runs `sgld sample` (as scale.py does: logistic, N(0, 1) priors, a bias) once per seed on
the .npy file and prints, per run, the largest |mean - mode| in posterior sds and the
smallest, largest and median ratio of the run's sd to the Laplace sd. The sds' Monte
Carlo error (about 1/sqrt(2 ESS) each, shared through the chains) makes one run's
median vary by about +-0.02: compare averages over seeds.

Needs numpy and a release build.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SGLD = os.path.join(HERE, "..", "target", "release", "sgld")


def laplace(path):
    """The mode and the Laplace sds of the logistic regression with a bias, prior N(0, 1)."""
    t = np.load(path, mmap_mode="r")
    x = np.hstack([np.asarray(t[:, :-1], dtype=np.float64), np.ones((t.shape[0], 1))])
    y = np.where(np.asarray(t[:, -1]) > 0.5, 1.0, -1.0)
    b = np.zeros(x.shape[1])
    for _ in range(50):
        s = 1 / (1 + np.exp(y * (x @ b)))
        h = (x * (s * (1 - s))[:, None]).T @ x + np.eye(len(b))
        step = np.linalg.solve(h, x.T @ (y * s) - b)
        b += step
        if np.abs(step).max() < 1e-12:
            break
    return b, np.sqrt(np.diag(np.linalg.inv(h)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("npy", help="scale.py's .npy file: features, then the 0/1 label")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    a = p.parse_args()
    mode, sd = laplace(a.npy)
    print("| seed | max abs z of the means | sd ratio min | max | median | min ESS |")
    print("|---|---|---|---|---|---|")
    medians = []
    for seed in a.seeds:
        with tempfile.TemporaryDirectory() as out:
            cmd = [SGLD, "sample", "--model", "logistic", "--prior", "gaussian:1", "--format", "npy",
                   "--train", a.npy, "--out", out, "--overwrite", "--seed", str(seed)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"sgld failed:\n{r.stderr}")
            s = json.load(open(os.path.join(out, "summary.json")))
        mean = np.array([q["mean"] for q in s["params"]])
        ratio = np.array([q["sd"] for q in s["params"]]) / sd
        ess = min(min(q["ess_bulk"], q["ess_tail"]) for q in s["params"])
        medians.append(np.median(ratio))
        print(f"| {seed} | {np.abs((mean - mode) / sd).max():.3f} | {ratio.min():.3f} | "
              f"{ratio.max():.3f} | {np.median(ratio):.4f} | {ess:.0f} |", flush=True)
    print(f"\nmedian sd ratio over {len(medians)} seeds: mean {np.mean(medians):.4f}, "
          f"sd of the mean {np.std(medians, ddof=1) / np.sqrt(len(medians)):.4f}"
          if len(medians) > 1 else "")


if __name__ == "__main__":
    main()

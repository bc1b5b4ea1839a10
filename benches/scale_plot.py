"""A log-log figure of wall time against rows, one line per sampler and input format, from
the JSON lines of `benches/scale.py --json` and `benches/peers/numpyro_scale.py`.

    python3 benches/scale_plot.py scale.jsonl numpyro.jsonl -o docs/figures/scale.svg

Needs matplotlib. Where several runs share a sampler and N, the fastest is drawn (the
machine is shared; the others were slowed by it).
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--out", default="scale.svg")
    a = p.parse_args()
    best = {}
    for f in a.files:
        for line in open(f):
            if line.strip():
                r = json.loads(line)
                key = (r["sampler"], r["rows"])
                best[key] = min(best.get(key, float("inf")), r["wall"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for s in sorted({k[0] for k in best}):
        pts = sorted((n, w) for (t, n), w in best.items() if t == s)
        xs, ys = [n for n, _ in pts], [w for _, w in pts]
        if "pandas" in s:
            # The reference a CSV run is held to: reading the file, without sampling.
            ax.plot(xs, ys, ":x", color="0.4", label=s)
        else:
            ax.plot(xs, ys, "--o" if "NUTS" in s else "-o", label=s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows N (logistic regression, 50 features)")
    ax.set_ylabel("wall time to ESS ≥ 400, R̂ < 1.01 (s)")
    ax.set_title("End to end on 2 cores: read, warm-up, sampling, outputs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out)


if __name__ == "__main__":
    main()

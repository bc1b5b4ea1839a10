"""Reads an `sgld sample` output directory's CmdStan files with ArviZ and NumPy and checks
that ArviZ's bulk ESS, tail ESS and R-hat equal summary.json's, and that the .npy files
hold the CSV files' draws. Usage: arviz_check.py OUT_DIR (run by .ci/run in a venv)."""
import sys, json, glob
import numpy as np, arviz as az
out = sys.argv[1]
files = sorted(glob.glob(f"{out}/chain_*.csv"), key=lambda p: int(p.rsplit("_", 1)[1][:-4]))
idata = az.from_cmdstan(files)
s = json.load(open(f"{out}/summary.json"))
post = idata.posterior
# the parameters in the order of the CSV header; beta.k is element k of ArviZ's beta
hdr = [l for l in open(files[0]) if not l.startswith("#")][0].strip().split(",")
names = [h for h in hdr if not h.endswith("__")]
arrs = {}
for v in post.data_vars:
    a = post[v].values
    if a.ndim == 2: arrs[v] = a
    else:
        for k in range(a.shape[2]): arrs[f"{v}.{k+1}"] = a[:, :, k]
npy = [np.load(f.replace(".csv", ".npy")) for f in files]
worst = {"ess_bulk": 0.0, "ess_tail": 0.0, "rhat": 0.0}
for j, (n, p) in enumerate(zip(names, s["params"])):
    x = arrs[n]
    assert np.array_equal(  # the .npy holds the CSV's draws
        np.stack([m[:, j] for m in npy]).astype(np.float64), x.astype(np.float32).astype(np.float64)), n
    got = {"ess_bulk": float(az.ess(x, method="bulk")), "ess_tail": float(az.ess(x, method="tail")), "rhat": float(az.rhat(x))}
    for k, g in got.items():
        worst[k] = max(worst[k], abs(g - p[k]) / abs(p[k]))
print("chains", len(files), "draws", post.sizes["draw"], "params", len(names), "largest relative differences", worst)
tol = {"ess_bulk": 1e-3, "ess_tail": 1e-3, "rhat": 1e-4}
bad = {k: v for k, v in worst.items() if k in tol and v > tol[k]}
if bad:
    sys.exit(f"ArviZ disagrees with summary.json: {bad}")

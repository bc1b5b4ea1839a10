//! Models written as users write them, through the library, against exact posteriors:
//! the eight-schools example (μ and θⱼ are normal given τ, so one quadrature over τ gives
//! every mean, sd and fourth moment) and the Normal–inverse-gamma regression example
//! (conjugate: closed form).

mod common;

#[path = "../examples/eight_schools.rs"]
mod example;
#[path = "../examples/nig_regression.rs"]
mod nig;

use sgld::models::Dist;
use sgld_harness::constrained::{Constrained, Support};
use sgld_harness::exact::NigPosterior;
use sgld_harness::sample::{SampleConfig, Target, sample_model};

const Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
const SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];

/// Mean, sd and kurtosis of μ, τ and θ₁…θ₈ under the exact posterior: `yⱼ|μ,τ ~
/// N(μ, σⱼ² + τ²)` and μ ~ N(0, 25) give `p(τ|y)` in closed form up to a constant and
/// `μ|τ,y` normal; `θⱼ|μ,τ,y` is normal, so `θⱼ|τ,y` is too. A midpoint rule in `ln τ`.
fn exact() -> Vec<(f64, f64, f64)> {
    // Each grid point: its weight and, per quantity, the conditional mean and variance.
    let mut grid: Vec<(f64, Vec<(f64, f64)>)> = Vec::new();
    let (lo, hi, n) = (-14.0f64, 9.0f64, 40_000);
    let h = (hi - lo) / n as f64;
    for k in 0..n {
        let tau = (lo + (k as f64 + 0.5) * h).exp();
        let v: Vec<f64> = SIGMA.iter().map(|s| s * s + tau * tau).collect();
        let p = 1.0 / 25.0 + v.iter().map(|v| 1.0 / v).sum::<f64>();
        let m = Y.iter().zip(&v).map(|(y, v)| y / v).sum::<f64>() / p;
        let quad = Y.iter().zip(&v).map(|(y, v)| y * y / v).sum::<f64>() - m * m * p;
        let log_w = -0.5 * v.iter().map(|v| v.ln()).sum::<f64>() - 0.5 * p.ln() - 0.5 * quad
            + (-(1.0 + (tau / 5.0).powi(2)).ln()) // half-Cauchy(5)
            + tau.ln(); // dτ = τ d ln τ
        let mut q = vec![(m, 1.0 / p), (tau, 0.0)];
        for j in 0..8 {
            let prec = 1.0 / (tau * tau) + 1.0 / (SIGMA[j] * SIGMA[j]);
            let (b, c) = (
                1.0 / (tau * tau) / prec,
                Y[j] / (SIGMA[j] * SIGMA[j]) / prec,
            );
            q.push((b * m + c, 1.0 / prec + b * b / p));
        }
        grid.push((log_w, q));
    }
    let top = grid.iter().map(|g| g.0).fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = grid.iter().map(|g| (g.0 - top).exp()).collect();
    let total: f64 = w.iter().sum();
    (0..10)
        .map(|i| {
            let e = |f: &dyn Fn(f64, f64) -> f64| {
                grid.iter()
                    .zip(&w)
                    .map(|(g, w)| w * f(g.1[i].0, g.1[i].1))
                    .sum::<f64>()
                    / total
            };
            let mean = e(&|a, _| a);
            let var = e(&|a, v| (a - mean).powi(2) + v);
            let m4 = e(&|a, v| (a - mean).powi(4) + 6.0 * (a - mean).powi(2) * v + 3.0 * v * v);
            (mean, var.sqrt(), m4 / (var * var))
        })
        .collect()
}

/// Every mean within 4 Monte Carlo standard errors of the exact one and every sd within
/// 4 of the sd's (`sd·√((κ − 1)/4n)` at the smaller of the bulk and tail ESS, κ the
/// exact kurtosis): the exact path (MALA) has no step bias to allow for.
#[test]
fn the_example_matches_the_exact_posterior() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = example::run(dir.path().to_path_buf()).unwrap();
    let s = &outcome.summary;
    let names: Vec<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 18);
    assert_eq!(
        (names[1], names[2], names[10], names[17]),
        ("tau", "eta[1]", "theta[1]", "theta[8]")
    );
    let reference = exact();
    let checked = [0usize, 1, 10, 11, 12, 13, 14, 15, 16, 17];
    for (&i, r) in checked.iter().zip(&reference) {
        let p = &s.params[i];
        let n = p.ess_bulk.min(p.ess_tail);
        let (mean_tol, sd_tol) = (
            4.0 * p.sd / p.ess_bulk.sqrt(),
            4.0 * r.1 * ((r.2 - 1.0) / (4.0 * n)).sqrt(),
        );
        eprintln!(
            "{}: mean {:.3} vs {:.3} (±{mean_tol:.3}), sd {:.3} vs {:.3} (±{sd_tol:.3})",
            p.name, p.mean, r.0, p.sd, r.1
        );
        assert!((p.mean - r.0).abs() <= mean_tol, "{}", p.name);
        assert!((p.sd - r.1).abs() <= sd_tol, "{}: sd", p.name);
    }
    // τ is reported on its scale; the sampler's log τ is in unconstrained.csv.
    assert!(s.params[1].q05 > 0.0);
    let u = std::fs::read_to_string(dir.path().join("unconstrained.csv")).unwrap();
    assert!(
        u.starts_with("chain,step,step_size,mu,log(tau),eta[1],"),
        "{}",
        &u[..60]
    );
    let draws = std::fs::read_to_string(dir.path().join("draws.csv")).unwrap();
    let header = draws.lines().next().unwrap();
    assert!(
        header.ends_with(",theta[7],theta[8]") && header.contains(",tau,"),
        "{header}"
    );
    let cmdstan = std::fs::read_to_string(dir.path().join("chain_1.csv")).unwrap();
    assert!(
        cmdstan
            .lines()
            .any(|l| l.starts_with("lp__,") && l.ends_with("theta.8")),
        "CmdStan header"
    );
}

/// The NIG regression of the example (β declared real, σ² positive, the inverse-gamma
/// from the library) on 300 rows of three features: the means and sds of β and σ² within
/// 4 Monte Carlo errors of the closed form (σ² | y ~ IG(aₙ, bₙ); βⱼ | y Student-t with
/// 2aₙ degrees of freedom), plus the unadjusted step's bias where the run is not exact.
#[test]
fn the_nig_example_matches_the_closed_form() {
    let (n, d, (v, phi, psi)) = (300, 3, (10.0f32, 2.0, 1.0));
    let z = common::normals(n * d, 21);
    let e = common::normals(n, 22);
    let y: Vec<f32> = (0..n)
        .map(|i| 1.5 * z[i * d] - 0.8 * z[i * d + 1] + 0.3 + 0.6 * e[i])
        .collect();
    let x: Vec<f32> = (0..n).flat_map(|i| [z[i * d], z[i * d + 1], 1.0]).collect();
    let model = nig::Nig(&x, &y, d, v, Dist::inv_gamma(phi, psi).unwrap());
    let blocks = vec![(Support::Real, d), (Support::Positive, 1)];
    let model = Constrained::new(&model, blocks).unwrap();
    let names = ["b0", "b1", "intercept", "sigma2"]
        .map(String::from)
        .to_vec();
    let dir = tempfile::tempdir().unwrap();
    let target = Target::constrained(&model, "nig", names);
    let s = sample_model(&target, &SampleConfig::defaults(dir.path().into()))
        .unwrap()
        .summary;
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let p = NigPosterior::new(&x, &y, d, v as f64, phi, psi).unwrap();
    let (a, b) = (p.a, p.b);
    let mut want: Vec<(f64, f64, f64)> = (0..d)
        .map(|j| (p.mean()[j], p.sd()[j], 3.0 + 6.0 / (2.0 * a - 4.0)))
        .collect();
    let ig_kurtosis = 3.0 + 6.0 * (5.0 * a - 11.0) / ((a - 3.0) * (a - 4.0));
    want.push((
        b / (a - 1.0),
        b / ((a - 1.0) * (a - 2.0).sqrt()),
        ig_kurtosis,
    ));
    // MALA on the whole data set is exact; an unadjusted run's sds carry its step's bias.
    let bias = if s.sampler == "mala" {
        0.0
    } else {
        (s.warmup.step_size / 4.0 + s.warmup.alpha) / 2.0
    };
    for (q, w) in s.params.iter().zip(&want) {
        let ess = q.ess_bulk.min(q.ess_tail);
        let mean_tol = 4.0 * q.sd / q.ess_bulk.sqrt();
        let sd_tol = 4.0 * w.1 * ((w.2 - 1.0) / (4.0 * ess)).sqrt() + bias * w.1;
        eprintln!(
            "{}: mean {:.4} vs {:.4} (±{mean_tol:.4}), sd {:.4} vs {:.4} (±{sd_tol:.4})",
            q.name, q.mean, w.0, q.sd, w.1
        );
        assert!((q.mean - w.0).abs() <= mean_tol, "{}", q.name);
        assert!((q.sd - w.1).abs() <= sd_tol, "{}: sd", q.name);
    }
}

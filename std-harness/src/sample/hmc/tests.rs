//! HMC against exact posteriors, its flow against its definition, and its pieces.

use super::*;

use rand_core::SeedableRng;
use sgld::models::Model;
use sgld::noise::DefaultRng;

/// One "row" `−½(θ − μ)ᵀP(θ − μ)` in two dimensions and a Laplace prior of scale `b`.
struct QuadLaplace {
    mu: [f64; 2],
    p: [[f64; 2]; 2],
    b: f64,
}

impl QuadLaplace {
    fn log_density(&self, t: [f64; 2]) -> f64 {
        let e = [t[0] - self.mu[0], t[1] - self.mu[1]];
        let q = e[0] * (self.p[0][0] * e[0] + self.p[0][1] * e[1])
            + e[1] * (self.p[1][0] * e[0] + self.p[1][1] * e[1]);
        -0.5 * q - (t[0].abs() + t[1].abs()) / self.b
    }
}

impl Model for QuadLaplace {
    fn dim(&self) -> usize {
        2
    }
    fn len(&self) -> usize {
        1
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        for (g, &t) in grad.iter_mut().zip(theta) {
            *g -= (t.signum() * (t != 0.0) as u8 as f32) / self.b as f32;
        }
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        if batch.is_empty() {
            return;
        }
        let e = [theta[0] as f64 - self.mu[0], theta[1] as f64 - self.mu[1]];
        for (i, g) in grad.iter_mut().enumerate() {
            *g -= (self.p[i][0] * e[0] + self.p[i][1] * e[1]) as f32;
        }
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        -theta.iter().map(|&t| (t as f64).abs()).sum::<f64>() / self.b
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        if batch.is_empty() {
            return 0.0;
        }
        self.log_density([theta[0] as f64, theta[1] as f64]) - self.log_prior(theta)
    }
}

fn model() -> QuadLaplace {
    // Correlated (ρ = 0.8), its mean close enough to 0 that the kinks matter.
    QuadLaplace {
        mu: [0.4, -0.3],
        p: [[2.78, -2.22], [-2.22, 2.78]],
        b: 0.5,
    }
}

/// The metric: the covariance of the Gaussian part, by its Cholesky factor.
fn metric() -> MetricStore {
    // P⁻¹ = [[1, 0.8], [0.8, 1]] (about): L = [[1, 0], [0.8, 0.6]].
    MetricStore::Cholesky(vec![1.0, 0.0, 0.8, 0.6])
}

/// Mean, sd and P(θ < 0) of each coordinate of `p^{1/τ}` on a fine grid.
fn reference(m: &QuadLaplace, tau: f64) -> [[f64; 3]; 2] {
    let (lo, hi, k) = (-5.0, 5.0, 1000);
    let step = (hi - lo) / k as f64;
    let mut w = vec![0.0f64; k * k];
    let mut top = f64::NEG_INFINITY;
    for i in 0..k {
        for j in 0..k {
            let t = [lo + (i as f64 + 0.5) * step, lo + (j as f64 + 0.5) * step];
            w[i * k + j] = m.log_density(t) / tau;
            top = top.max(w[i * k + j]);
        }
    }
    let mut out = [[0.0; 3]; 2];
    let mut z = 0.0;
    let (mut s1, mut s2, mut neg) = ([0.0; 2], [0.0; 2], [0.0; 2]);
    for i in 0..k {
        for j in 0..k {
            let p = (w[i * k + j] - top).exp();
            let t = [lo + (i as f64 + 0.5) * step, lo + (j as f64 + 0.5) * step];
            z += p;
            for c in 0..2 {
                s1[c] += p * t[c];
                s2[c] += p * t[c] * t[c];
                neg[c] += p * (t[c] < 0.0) as u8 as f64;
            }
        }
    }
    for c in 0..2 {
        let mean = s1[c] / z;
        out[c] = [mean, (s2[c] / z - mean * mean).sqrt(), neg[c] / z];
    }
    out
}

/// Batch-means Monte Carlo standard error of the mean of `x`.
fn mcse(x: &[f64]) -> f64 {
    let b = 100;
    let len = x.len() / b;
    let means: Vec<f64> = (0..b)
        .map(|k| x[k * len..(k + 1) * len].iter().sum::<f64>() / len as f64)
        .collect();
    let m = means.iter().sum::<f64>() / b as f64;
    let var = means.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (b - 1) as f64;
    (var / b as f64).sqrt()
}

/// Runs `n` transitions at step `h` and checks each coordinate's mean, second moment
/// and P(θ < 0) against the grid within 4.5 Monte Carlo standard errors; returns the
/// acceptance rate.
fn check(hmc: &Hmc<'_>, tau: f64, h: f64, n: usize, seed: u64) -> f64 {
    let want = reference(&model(), tau);
    let mut rng = DefaultRng::seed_from_u64(seed);
    let mut s = hmc.init(vec![0.0, 0.0]).unwrap();
    let mut draws = [Vec::with_capacity(n), Vec::with_capacity(n)];
    let mut accepted = 0usize;
    for _ in 0..n {
        let info = hmc.step(&mut s, h, &mut rng).unwrap();
        accepted += info.accepted as usize;
        for (c, d) in draws.iter_mut().enumerate() {
            d.push(s.theta()[c] as f64);
        }
    }
    for c in 0..2 {
        let [mean, sd, neg] = want[c];
        let x = &draws[c];
        let sq: Vec<f64> = x.iter().map(|v| v * v).collect();
        let below: Vec<f64> = x.iter().map(|&v| (v < 0.0) as u8 as f64).collect();
        for (what, xs, target) in [
            ("mean", x.as_slice(), mean),
            ("second moment", &sq, sd * sd + mean * mean),
            ("P(θ < 0)", &below, neg),
        ] {
            let got = xs.iter().sum::<f64>() / n as f64;
            let z = (got - target) / mcse(xs);
            assert!(
                z.abs() < 4.5,
                "θ{c} {what}: {got:.4} against {target:.4} (z = {z:.1}, τ = {tau})"
            );
        }
    }
    accepted as f64 / n as f64
}

#[test]
fn hmc_samples_a_laplace_posterior_exactly() {
    let m = model();
    let metric = metric();
    let hmc = Hmc::new(&m, &metric, Some(0.5), 1.0, None).unwrap();
    let acc = check(&hmc, 1.0, 0.5, 200_000, 1);
    // The kinks followed exactly: only the smooth part errs.
    assert!(acc > 0.9, "acceptance {acc}");
}

#[test]
fn hmc_is_exact_whatever_the_split_and_the_temperature() {
    let m = model();
    let metric = metric();
    // No split: a plain leapfrog over the kinks, which errs by O(h) but is corrected.
    let plain = Hmc::new(&m, &metric, None, 1.0, None).unwrap();
    let acc_plain = check(&plain, 1.0, 0.5, 100_000, 2);
    // A split of the wrong scale, and a tempered target.
    let wrong = Hmc::new(&m, &metric, Some(2.0), 1.0, None).unwrap();
    check(&wrong, 1.0, 0.5, 100_000, 3);
    let tempered = Hmc::new(&m, &metric, Some(0.5), 2.0, None).unwrap();
    check(&tempered, 2.0, 0.5, 100_000, 4);
    let split = Hmc::new(&m, &metric, Some(0.5), 1.0, None).unwrap();
    let acc_split = check(&split, 1.0, 0.5, 100_000, 5);
    assert!(acc_split > acc_plain, "{acc_split} vs {acc_plain}");
}

#[test]
fn the_flow_conserves_its_energy_and_runs_back() {
    let m = model();
    let metric = metric();
    let hmc = Hmc::new(&m, &metric, Some(0.5), 1.0, None).unwrap();
    let mut s = hmc.init(vec![0.05, -0.02]).unwrap();
    let energy = |s: &HmcState| {
        0.5 * s.r.iter().map(|x| x * x).sum::<f64>()
            + s.pos.iter().map(|x| x.abs()).sum::<f64>() / 0.5
    };
    let mut crossings = 0;
    for (k, r) in [[0.3, -0.9], [-1.2, 0.4], [0.05, 0.02], [2.0, 2.0]]
        .iter()
        .enumerate()
    {
        s.pos.copy_from_slice(&[0.05, -0.02]);
        s.r.copy_from_slice(r);
        let e0 = energy(&s);
        let n = hmc.flow(&mut s, 0.9).unwrap();
        crossings += n;
        let e1 = energy(&s);
        assert!(
            (e1 - e0).abs() < 1e-12 * e0.max(1.0),
            "case {k}: {e0} → {e1}"
        );
        s.r.iter_mut().for_each(|x| *x = -*x);
        hmc.flow(&mut s, 0.9).unwrap();
        assert!(
            (s.pos[0] - 0.05).abs() < 1e-12 && (s.pos[1] + 0.02).abs() < 1e-12,
            "case {k}: back at {:?}",
            s.pos
        );
        assert!((s.r[0] + r[0]).abs() < 1e-12 && (s.r[1] + r[1]).abs() < 1e-12);
    }
    assert!(crossings >= 4, "{crossings} crossings");
}

/// A flat density of `d` parameters: the flow alone is under test.
struct Flat(usize);

impl Model for Flat {
    fn dim(&self) -> usize {
        self.0
    }
    fn len(&self) -> usize {
        1
    }
    fn add_log_prior_grad(&self, _: &[f32], _: &mut [f32]) {}
    fn add_log_lik_grad(&self, _: &[f32], _: &[usize], _: &mut [f32]) {}
    fn log_prior(&self, _: &[f32]) -> f64 {
        0.0
    }
    fn log_lik(&self, _: &[f32], _: &[usize]) -> f64 {
        0.0
    }
}

/// The coupled flow as its definition reads: `M sign` recomputed after every kink and
/// every coordinate's root solved; `(crossings, pos, r)`.
fn reference_flow(
    l: &[f64],
    d: usize,
    kink: f64,
    pos: &[f64],
    r: &[f64],
    h: f64,
) -> (usize, Vec<f64>, Vec<f64>) {
    let m = |i: usize, j: usize| (0..d).map(|k| l[i * d + k] * l[j * d + k]).sum::<f64>();
    let (mut pos, mut r) = (pos.to_vec(), r.to_vec());
    let mut v: Vec<f64> = (0..d)
        .map(|i| (0..d).map(|k| l[i * d + k] * r[k]).sum())
        .collect();
    let mut sign: Vec<f64> = (0..d)
        .map(|j| {
            if pos[j] > 0.0 || (pos[j] == 0.0 && v[j] >= 0.0) {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let mut swept = vec![0.0; d];
    let (mut left, mut just, mut crossed) = (h, None, 0);
    loop {
        let accel: Vec<f64> = (0..d)
            .map(|i| kink * (0..d).map(|j| m(i, j) * sign[j]).sum::<f64>())
            .collect();
        let mut first = (left, None);
        for j in 0..d {
            if let Some(t) = crossing(pos[j], v[j], accel[j], sign[j], just == Some(j))
                && t < first.0
            {
                first = (t, Some(j));
            }
        }
        let t = first.0;
        for j in 0..d {
            pos[j] += t * (v[j] - 0.5 * accel[j] * t);
            v[j] -= accel[j] * t;
            swept[j] += sign[j] * t;
        }
        let Some(j) = first.1 else { break };
        pos[j] = 0.0;
        sign[j] = -sign[j];
        (left, just, crossed) = (left - t, Some(j), crossed + 1);
    }
    for k in 0..d {
        for (rj, lkj) in r.iter_mut().zip(&l[k * d..(k + 1) * d]) {
            *rj -= kink * swept[k] * lkj;
        }
    }
    (crossed, pos, r)
}

#[test]
fn the_flows_are_their_definition_across_many_kinks_and_calls() {
    // The reach bound that skips roots and the acceleration carried from one flow
    // to the next (only changed signs recomputed) change nothing: a sequence of
    // flows from near 0, where most coordinates cross and some cannot, against the
    // definition, for a dense metric and for its diagonal.
    let d = 37;
    let mut rng = DefaultRng::seed_from_u64(11);
    let mut z = vec![0.0f32; d * d];
    fill_normal(&mut rng, &mut z);
    let l32: Vec<f32> = (0..d * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            match i.cmp(&j) {
                std::cmp::Ordering::Greater => 0.3 * z[k],
                std::cmp::Ordering::Equal => 0.5 + z[k].abs(),
                std::cmp::Ordering::Less => 0.0,
            }
        })
        .collect();
    let diag32: Vec<f32> = (0..d).map(|j| l32[j * d + j] * l32[j * d + j]).collect();
    let diag_l: Vec<f64> = (0..d * d)
        .map(|k| {
            if k / d == k % d {
                (diag32[k / d] as f64).sqrt()
            } else {
                0.0
            }
        })
        .collect();
    let l: Vec<f64> = l32.iter().map(|&x| x as f64).collect();
    let flat = Flat(d);
    let metrics = [
        (MetricStore::Cholesky(l32), l),
        (MetricStore::Diagonal(diag32), diag_l),
    ];
    for (metric, l) in metrics {
        let hmc = Hmc::new(&flat, &metric, Some(0.5), 1.0, None).unwrap();
        let mut s = hmc.init(vec![0.0; d]).unwrap();
        let mut noise = vec![0.0f32; 2 * d];
        let (mut crossings, mut far) = (0, 0);
        for trial in 0..30 {
            fill_normal(&mut rng, &mut noise);
            near_zero(&mut s, &noise, 5, (trial % 7 == 3).then_some(trial % d));
            far += s.pos.iter().filter(|p| p.abs() > 5.0).count();
            let (n, pos, r) = reference_flow(&l, d, hmc.kink(), &s.pos, &s.r, 0.6);
            assert_eq!(hmc.flow(&mut s, 0.6), Some(n), "{metric:?}, trial {trial}");
            crossings += n;
            for (k, (x, y)) in s.pos.iter().zip(&pos).chain(s.r.iter().zip(&r)).enumerate() {
                assert!(
                    (x - y).abs() < 1e-8 * (1.0 + y.abs()),
                    "{metric:?} trial {trial}, {k}: {x} vs {y}"
                );
            }
        }
        assert!(
            crossings > 20 * d && far > 100,
            "{crossings} crossings, {far} far"
        );
    }
}

/// A state of `d` coordinates near 0, every `far`-th one far from it, from `noise`
/// (`2d` normals: positions, momenta); the coordinate `zero` exactly at 0 if given.
fn near_zero(s: &mut HmcState, noise: &[f32], far: usize, zero: Option<usize>) {
    let d = s.pos.len();
    for j in 0..d {
        // A few coordinates far from 0, beyond any reach in a step.
        let scale = if j % far == 0 { 20.0 } else { 0.05 };
        s.pos[j] = scale * noise[j] as f64;
        s.r[j] = noise[d + j] as f64;
    }
    if let Some(j) = zero {
        s.pos[j] = 0.0;
    }
}

/// The bits of each value, to compare without a tolerance.
fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// [`kick_diagonal`] on `a` and [`Hmc::kick`] on `b` (the same state) agree bit for bit,
/// mid-trajectory and at its end.
fn same_kicks(hmc: &Hmc<'_>, a: &HmcState, b: &HmcState, h: f64, case: &str) {
    let one = hmc
        .one_pass()
        .expect("a diagonal metric and a kinked prior");
    for ends in [false, true] {
        let (mut ka, mut kb) = (a.clone(), b.clone());
        let c = if ends { 0.5 * h } else { h };
        let split = (hmc.inv_scale, hmc.temperature);
        assert!(kick_diagonal(&mut ka, split, c, hmc.kink(), one, ends));
        assert!(hmc.kick(&mut kb, c, ends));
        let pairs = [
            (&ka.force_prop, &kb.force_prop),
            (&ka.pend, &kb.pend),
            (&ka.r, &kb.r),
        ];
        for (x, y) in pairs {
            assert_eq!(bits(x), bits(y), "{case}, ends {ends}");
        }
    }
}

#[test]
fn the_one_pass_leapfrog_is_the_passes_bit_for_bit() {
    // With a diagonal metric a leapfrog step's drift and kicks run as one pass over the
    // coordinates each: the same numbers, bit for bit, as the passes (kicks into r,
    // velocity, sides, flow, prop; force, its shear, pending kicks, turn), from states
    // near 0 where most coordinates cross, some sit at 0, some are far; with and
    // without a shear into a hub.
    let d = 41;
    let mut rng = DefaultRng::seed_from_u64(5);
    let diag: Vec<f32> = (0..d).map(|j| 0.2 + (j % 7) as f32 * 0.3).collect();
    let metric = MetricStore::Diagonal(diag);
    let flat = Flat(d);
    let mut noise = vec![0.0f32; 4 * d];
    fill_normal(&mut rng, &mut noise);
    let mu = (0..d).map(|j| if j == 3 { 0.0 } else { 0.2 * noise[j] as f64 });
    let shear = Shear {
        hub: 3,
        mu: mu.collect(),
    };
    for sheared in [None, Some(&shear)] {
        let hmc = Hmc::new(&flat, &metric, Some(0.5), 1.3, None)
            .unwrap()
            .with_shear(sheared);
        let one = hmc
            .one_pass()
            .expect("a diagonal metric and a kinked prior");
        assert_eq!(one.shear.is_some(), sheared.is_some());
        let mut s = hmc.init(vec![0.0; d]).unwrap();
        let mut crossings = 0;
        for trial in 0..60 {
            fill_normal(&mut rng, &mut noise);
            near_zero(&mut s, &noise, 6, (trial % 3 == 0).then_some(trial % d));
            for j in 0..d {
                s.pend[j] = 0.3 * noise[2 * d + j] as f64;
                s.grad[j] = noise[3 * d + j];
            }
            let (h, case) = (0.05 + 0.01 * trial as f64, format!("{sheared:?}, {trial}"));
            let (mut a, mut b) = (s.clone(), s.clone());
            assert!(drift_diagonal(&mut a, h, hmc.kink(), one), "{case}");
            assert!(hmc.drift(&mut b, h), "{case}");
            for (x, y) in [(&a.pos, &b.pos), (&a.r, &b.r), (&a.v, &b.v)] {
                assert_eq!(bits(x), bits(y), "{case}");
            }
            assert_eq!(bits(&a.sign), bits(&b.sign), "{case}");
            assert_eq!(bits(&a.swept), bits(&b.swept), "{case}");
            assert_eq!(a.prop, b.prop, "{case}");
            crossings += a.swept.iter().filter(|w| w.abs() < h).count();
            // θ exactly 0 somewhere, where the prior's kink adds nothing.
            a.prop[trial % d] = 0.0;
            b.prop[trial % d] = 0.0;
            same_kicks(&hmc, &a, &b, h, &case);
        }
        assert!(crossings > 10 * 60, "{crossings} crossings");
        // A force that is not finite is refused by both, at the hub or elsewhere.
        for j in [3, 7] {
            let (mut a, mut b) = (s.clone(), s.clone());
            a.grad[j] = f32::NAN;
            b.grad[j] = f32::NAN;
            let split = (hmc.inv_scale, hmc.temperature);
            assert!(!kick_diagonal(&mut a, split, 0.1, hmc.kink(), one, false));
            assert!(!hmc.kick(&mut b, 0.1, false));
        }
    }
}

#[test]
fn the_diagonal_flow_is_the_coupled_flow_of_a_diagonal_metric() {
    // The same metric as a diagonal and as a (diagonal) Cholesky factor: the
    // per-coordinate flow and the coupled one end in the same state.
    let m = model();
    let diag = MetricStore::Diagonal(vec![1.0, 0.25]);
    let dense = MetricStore::Cholesky(vec![1.0, 0.0, 0.0, 0.5]);
    let a = Hmc::new(&m, &diag, Some(0.5), 1.0, None).unwrap();
    let b = Hmc::new(&m, &dense, Some(0.5), 1.0, None).unwrap();
    let mut crossings = 0;
    for r in [
        [0.3, -0.9],
        [-1.2, 0.4],
        [0.05, 0.02],
        [2.0, 2.0],
        [-0.7, 1.1],
    ] {
        let mut sa = a.init(vec![0.05, -0.02]).unwrap();
        let mut sb = b.init(vec![0.05, -0.02]).unwrap();
        sa.r.copy_from_slice(&r);
        sb.r.copy_from_slice(&r);
        let (na, nb) = (a.flow(&mut sa, 0.9), b.flow(&mut sb, 0.9));
        assert_eq!(na, nb, "{r:?}");
        crossings += na.unwrap_or(0);
        for (x, y) in sa.pos.iter().zip(&sb.pos).chain(sa.r.iter().zip(&sb.r)) {
            assert!((x - y).abs() < 1e-12, "{r:?}: {:?} {:?}", sa.pos, sb.pos);
        }
    }
    assert!(crossings >= 5, "{crossings} crossings");
}

#[test]
fn hmc_with_a_diagonal_metric_samples_exactly() {
    let m = model();
    let metric = MetricStore::Diagonal(vec![1.0, 0.8]);
    let hmc = Hmc::new(&m, &metric, Some(0.5), 1.0, None).unwrap();
    let acc = check(&hmc, 1.0, 0.5, 200_000, 3);
    assert!(acc > 0.5, "acceptance {acc}");
}

#[test]
fn crossings_are_the_first_root_ahead() {
    // 1 + 0·t − t²/2 from above: √2.
    let t = crossing(1.0, 0.0, 1.0, 1.0, false).unwrap();
    assert!((t - 2f64.sqrt()).abs() < 1e-12);
    // Moving away and pushed further: never.
    assert_eq!(crossing(1.0, 1.0, -1.0, 1.0, false), None);
    // Moving toward at constant speed.
    assert!((crossing(-2.0, 4.0, 0.0, -1.0, false).unwrap() - 0.5).abs() < 1e-15);
    // Leaving 0 at speed 1 against a pull of 1: back after 2.
    assert!((crossing(0.0, 1.0, 1.0, 1.0, true).unwrap() - 2.0).abs() < 1e-15);
    assert_eq!(crossing(0.0, 1.0, -1.0, 1.0, true), None);
    // Rounded across: now.
    assert_eq!(crossing(-1e-18, 1.0, 1.0, 1.0, false), Some(0.0));
}

/// Sheared into `z₀ = θ₀ − 0.8θ₁` (`μ₁ = P₀₁/P₀₀`), whose Gaussian part is uncorrelated
/// with `θ₁`, with a diagonal metric of `z₀`'s variance `1/P₀₀` and `θ₁`'s: the draws
/// are exact, the hub's own Laplace term in the smooth part. (Its kink, crossed by a
/// plain leapfrog step, costs acceptance where the prior is as narrow as here.)
#[test]
fn hmc_sheared_into_the_hub_samples_exactly() {
    let m = model();
    let shear = Shear {
        hub: 0,
        mu: vec![0.0, -2.22 / 2.78],
    };
    let diagonal = MetricStore::Diagonal(vec![1.0 / 2.78, 1.0]);
    let sheared = Hmc::new(&m, &diagonal, Some(0.5), 1.0, None)
        .unwrap()
        .with_shear(Some(&shear));
    assert!(sheared.shear.is_some());
    let acc = check(&sheared, 1.0, 0.5, 200_000, 6);
    assert!(acc > 0.5, "acceptance {acc}");
    // A shorter step; and tempered, with the hub the second coordinate.
    check(&sheared, 1.0, 0.25, 100_000, 7);
    let second = Shear {
        hub: 1,
        mu: vec![-2.22 / 2.78, 0.0],
    };
    let other = MetricStore::Diagonal(vec![1.0, 1.0 / 2.78]);
    let sheared = Hmc::new(&m, &other, Some(0.5), 2.0, None)
        .unwrap()
        .with_shear(Some(&second));
    check(&sheared, 2.0, 0.5, 100_000, 8);
    // A dense metric ignores a shear, and one of the wrong length is refused.
    let dense = Hmc::new(&m, &metric(), Some(0.5), 1.0, None)
        .unwrap()
        .with_shear(Some(&shear));
    assert!(dense.shear.is_none());
    let short = Shear {
        hub: 0,
        mu: vec![0.0],
    };
    let diag = Hmc::new(&m, &diagonal, Some(0.5), 1.0, None)
        .unwrap()
        .with_shear(Some(&short));
    assert!(diag.shear.is_none());
}

/// Chains in lockstep against each chain alone, and against a posterior known exactly.
mod lockstep {
    use super::super::lockstep::*;
    use super::super::{Hmc, HmcState};

    use rand_core::SeedableRng;
    use sgld::models::{Laplace, LogisticSparse, Model, SparseRows};
    use sgld::noise::DefaultRng;

    use crate::sample::metric_store::MetricStore;

    /// Rows of `nnz` distinct features among `d`, labels ±1, from a fixed generator.
    fn rows(n: usize, d: usize, nnz: usize) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let (mut offsets, mut idx, mut y) = (vec![0], Vec::new(), Vec::new());
        for _ in 0..n {
            let mut r: Vec<u32> = Vec::new();
            while r.len() < nnz {
                let j = (next() % d as u64) as u32;
                if !r.contains(&j) {
                    r.push(j);
                }
            }
            r.sort_unstable();
            idx.extend(r);
            offsets.push(idx.len());
            y.push(if next() % 3 == 0 { 1.0 } else { -1.0 });
        }
        (offsets, idx, y)
    }

    #[test]
    fn lockstep_transitions_are_each_chains_own() {
        let (d, n) = (40, 300);
        let (offsets, idx, y) = rows(n, d, 5);
        let prior = Laplace::new(1.0).unwrap();
        let model =
            LogisticSparse::new(SparseRows::new(&offsets, &idx, d).unwrap(), &y, prior).unwrap();
        let metric = MetricStore::Diagonal((0..d).map(|j| 0.3 + 0.01 * j as f32).collect());
        let hmc = Hmc::new(&model, &metric, Some(1.0), 1.0, None).unwrap();
        let starts: Vec<Vec<f32>> = (0..4)
            .map(|c| {
                (0..d)
                    .map(|j| ((j * 7 + c * 3) % 11) as f32 * 0.1 - 0.5)
                    .collect()
            })
            .collect();
        // Chain 2 is given a step that is not one: its transition fails, the others go on.
        let steps = [0.2, 0.25, f64::NAN, 0.3];
        let mut alone: Vec<HmcState> = starts
            .iter()
            .map(|t| hmc.init(t.clone()).unwrap())
            .collect();
        let mut locked: Vec<HmcState> = starts
            .iter()
            .map(|t| hmc.init(t.clone()).unwrap())
            .collect();
        let mut rng_alone: Vec<DefaultRng> = (0..4).map(DefaultRng::seed_from_u64).collect();
        let mut rng_locked: Vec<DefaultRng> = (0..4).map(DefaultRng::seed_from_u64).collect();
        let mut lock = Lockstep::new(&model, 4).expect("sparse logistic rows have the pass");
        let mut accepted = 0;
        for t in 0..25 {
            let mut slots: Vec<Slot<'_, DefaultRng>> = locked
                .iter_mut()
                .zip(&mut rng_locked)
                .zip(steps)
                .map(|((s, r), h)| Slot::new(s, r, h))
                .collect();
            let outcomes = transitions(&hmc, &mut lock, &mut slots);
            drop(slots);
            for (c, outcome) in outcomes.into_iter().enumerate() {
                let own = hmc.step(&mut alone[c], steps[c], &mut rng_alone[c]);
                match (own, outcome) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.accepted, b.accepted, "transition {t} of chain {c}");
                        assert!(
                            (a.log_ratio - b.log_ratio).abs() < 1e-3 * (1.0 + a.log_ratio.abs())
                        );
                        accepted += a.accepted as usize;
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("chain {c}, transition {t}: alone {a:?}, in lockstep {b:?}"),
                }
                let gap = alone[c]
                    .theta()
                    .iter()
                    .zip(locked[c].theta())
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(gap < 1e-3, "transition {t} of chain {c}: θ apart by {gap}");
            }
        }
        assert!(accepted > 40, "{accepted} of 75 accepted");
    }

    #[test]
    fn a_workspace_needs_the_pass_and_two_to_eight_chains() {
        let (offsets, idx, y) = rows(50, 10, 3);
        let prior = Laplace::new(1.0).unwrap();
        let model =
            LogisticSparse::new(SparseRows::new(&offsets, &idx, 10).unwrap(), &y, prior).unwrap();
        assert!(Lockstep::new(&model, 1).is_none());
        assert_eq!(model.interleaved_points(), 8);
        assert!(Lockstep::new(&model, 9).is_none());
        assert!((2..=8).all(|k| Lockstep::new(&model, k).is_some()));
        // Fifty rows of three: too little work a pass to share it between the chains.
        let metric = MetricStore::Diagonal(vec![1.0; 10]);
        let hmc = Hmc::new(&model, &metric, Some(1.0), 1.0, None).unwrap();
        assert!(50 * 3 < MIN_WORK && workspace(&hmc, 4).is_none());
        // A model without an interleaved pass: each chain alone.
        let x = vec![0.5f32; 50 * 10];
        let dense = sgld::models::LogisticDense::new(&x, &y, 10, prior).unwrap();
        assert!(Lockstep::new(&dense, 4).is_none());
    }

    /// `log p(β)` of one coefficient whose feature is in rows of labels `ys` alone, under a
    /// Laplace(`b`) prior.
    fn log_density(beta: f64, ys: &[f32], b: f64) -> f64 {
        let lik: f64 = ys
            .iter()
            .map(|&y| -(1.0 + (-(y as f64) * beta).exp()).ln())
            .sum();
        lik - beta.abs() / b
    }

    /// Mean, second moment and P(β < 0) by quadrature.
    fn moments(ys: &[f32], b: f64) -> [f64; 3] {
        let (lo, hi, m) = (-15.0, 15.0, 300_000);
        let dx = (hi - lo) / m as f64;
        let mut acc = [0.0f64; 4];
        for i in 0..m {
            let x = lo + (i as f64 + 0.5) * dx;
            let p = log_density(x, ys, b).exp();
            acc[0] += p;
            acc[1] += p * x;
            acc[2] += p * x * x;
            acc[3] += p * (x < 0.0) as u8 as f64;
        }
        [acc[1] / acc[0], acc[2] / acc[0], acc[3] / acc[0]]
    }

    /// The standard error of a chain's mean by batch means (20 batches).
    fn mcse(x: &[f64]) -> f64 {
        let b = x.len() / 20;
        let means: Vec<f64> = x
            .chunks_exact(b)
            .map(|c| c.iter().sum::<f64>() / b as f64)
            .collect();
        let m = means.iter().sum::<f64>() / means.len() as f64;
        let var = means.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (means.len() - 1) as f64;
        (var / means.len() as f64).sqrt()
    }

    #[test]
    fn chains_in_lockstep_sample_a_posterior_known_exactly() {
        // One feature a row: the posterior is a product of one-dimensional ones, each
        // computed by quadrature, with the Laplace prior's kink at 0 in their mass.
        let (d, b) = (3usize, 0.5f64);
        let ys: [Vec<f32>; 3] = [
            vec![1.0, 1.0, -1.0],
            vec![-1.0, -1.0, -1.0, 1.0, -1.0],
            vec![1.0],
        ];
        let (mut offsets, mut idx, mut y) = (vec![0], Vec::new(), Vec::new());
        for (j, labels) in ys.iter().enumerate() {
            for &l in labels {
                idx.push(j as u32);
                offsets.push(idx.len());
                y.push(l);
            }
        }
        let prior = Laplace::new(b as f32).unwrap();
        let model =
            LogisticSparse::new(SparseRows::new(&offsets, &idx, d).unwrap(), &y, prior).unwrap();
        let metric = MetricStore::Diagonal(vec![0.5, 0.4, 0.8]);
        let hmc = Hmc::new(&model, &metric, Some(b as f32), 1.0, None).unwrap();
        let chains = 4;
        let mut states: Vec<HmcState> = (0..chains)
            .map(|c| hmc.init(vec![0.3 * c as f32 - 0.5; d]).unwrap())
            .collect();
        let mut rngs: Vec<DefaultRng> = (0..chains as u64)
            .map(|c| DefaultRng::seed_from_u64(40 + c))
            .collect();
        let mut lock = Lockstep::new(&model, chains).unwrap();
        let n = 20_000;
        let mut draws = vec![vec![Vec::with_capacity(n); d]; chains];
        for _ in 0..n {
            let mut slots: Vec<Slot<'_, DefaultRng>> = states
                .iter_mut()
                .zip(&mut rngs)
                .map(|(s, r)| Slot::new(s, r, 0.4))
                .collect();
            for outcome in transitions(&hmc, &mut lock, &mut slots) {
                outcome.unwrap();
            }
            drop(slots);
            for (c, s) in states.iter().enumerate() {
                for (j, &t) in s.theta().iter().enumerate() {
                    draws[c][j].push(t as f64);
                }
            }
        }
        for (j, labels) in ys.iter().enumerate() {
            let [mean, second, neg] = moments(labels, b);
            for (what, f, target) in [
                ("mean", (|v: f64| v) as fn(f64) -> f64, mean),
                ("second moment", |v: f64| v * v, second),
                ("P(β < 0)", |v: f64| (v < 0.0) as u8 as f64, neg),
            ] {
                // Each chain's estimate, pooled with its standard error.
                let (mut sum, mut var) = (0.0, 0.0);
                for chain in &draws {
                    let xs: Vec<f64> = chain[j].iter().map(|&v| f(v)).collect();
                    sum += xs.iter().sum::<f64>() / n as f64;
                    var += mcse(&xs).powi(2);
                }
                let got = sum / chains as f64;
                let z = (got - target) / (var.sqrt() / chains as f64);
                assert!(
                    z.abs() < 4.5,
                    "β{j} {what}: {got:.4} against {target:.4} (z = {z:.1})"
                );
            }
        }
    }
}

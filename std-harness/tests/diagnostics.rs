//! The diagnostics against values computed independently (ArviZ 0.23.4, `az.rhat`,
//! `az.ess`, which implement the same Vehtari et al. 2021 definitions) on small known
//! chains, and against hand computations.

use sgld_harness::diagnostics::*;

fn chains_a() -> Vec<Vec<f64>> {
    vec![
        vec![
            0.1, 0.5, -0.3, 1.2, 0.8, 0.4, -0.9, 0.0, 0.6, 1.1, -0.2, 0.3,
        ],
        vec![1.5, 1.1, 0.7, 1.9, 1.2, 0.9, 1.6, 1.3, 0.2, 1.0, 1.4, 0.8],
    ]
}

/// Three AR(1) chains (ρ = 0.7) of 101 draws driven by a 64-bit LCG, as in the script
/// that produced the reference values.
fn chains_b() -> Vec<Vec<f64>> {
    let mut s: u64 = 12345;
    (0..3)
        .map(|_| {
            let mut x = 0.0;
            (0..101)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let u = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    x = 0.7 * x + u;
                    x
                })
                .collect()
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn matches_reference_values() {
    // (rank R̂, bulk ESS, tail ESS, split R̂, split ESS) from ArviZ.
    let cases = [
        (
            chains_a(),
            [
                1.2895254711294495,
                12.822498083854889,
                33.12506980107854,
                1.2949639728306928,
                12.371654507032826,
            ],
        ),
        (
            chains_b(),
            [
                1.0396277968466259,
                76.28426998852566,
                109.51864112443695,
                1.040934727537256,
                75.10196503400425,
            ],
        ),
    ];
    for (k, (ch, want)) in cases.iter().enumerate() {
        let got = [
            rhat(ch),
            ess_bulk(ch),
            ess_tail(ch),
            rhat_basic(&split_chains(ch)),
            ess_basic(&split_chains(ch)),
        ];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, *w), "case {k}: got {got:?}, want {want:?}");
        }
    }
}

#[test]
fn hand_computed_rhat_and_autocorrelation() {
    // Two chains [1,2,3] and [5,6,7]: W = 1, B = 3·((2−4)² + (6−4)²)/1 = 24,
    // var⁺ = (2/3)·1 + 24/3 = 26/3, R̂ = √(26/3).
    let r = rhat_basic(&[vec![1.0, 2.0, 3.0], vec![5.0, 6.0, 7.0]]);
    assert!((r - (26.0f64 / 3.0).sqrt()).abs() < 1e-12, "{r}");
    // Identical chains: R̂ = √((n−1)/n).
    let r = rhat_basic(&[vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 2.0, 3.0, 4.0]]);
    assert!((r - (3.0f64 / 4.0).sqrt()).abs() < 1e-12);
    // Autocorrelation of 1, −1, 1, −1: γ₀ = 1, γ₁ = −3/4, γ₂ = 2/4.
    let ac = autocorrelation(&[1.0, -1.0, 1.0, -1.0], 2);
    assert!(
        (ac[0] - 1.0).abs() < 1e-12 && (ac[1] + 0.75).abs() < 1e-12 && (ac[2] - 0.5).abs() < 1e-12,
        "{ac:?}"
    );
    // Split: odd lengths drop the middle draw.
    assert_eq!(
        split_chains(&[vec![1.0, 2.0, 3.0, 4.0, 5.0]]),
        vec![vec![1.0, 2.0], vec![4.0, 5.0]]
    );
    // Quantiles.
    assert_eq!(quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
    assert_eq!(
        weighted_quantile(&[3.0, 1.0, 2.0], &[1.0, 1.0, 2.0], 0.5),
        2.0
    );
}

#[test]
fn iid_chains_have_ess_near_the_draw_count() {
    let mut s: u64 = 7;
    let ch: Vec<Vec<f64>> = (0..4)
        .map(|_| {
            (0..2000)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (s >> 11) as f64 / (1u64 << 53) as f64
                })
                .collect()
        })
        .collect();
    let e = ess_bulk(&ch);
    // 8000 independent draws: the estimate's relative sd is a few percent.
    assert!((e / 8000.0 - 1.0).abs() < 0.15, "ess {e}");
    assert!((rhat(&ch) - 1.0).abs() < 0.01);
}

/// `diagnostics` (one sort, merged fold, shared scores, paired FFTs) gives what the three
/// reference functions give: on the ArviZ cases, on chains with many ties (rounded
/// draws) and with odd lengths, for one to five chains.
#[test]
fn diagnostics_equals_the_reference_functions() {
    let mut s: u64 = 99;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut cases = vec![chains_a(), chains_b()];
    for (m, n, round) in [
        (1, 40, false),
        (2, 333, true),
        (4, 1000, false),
        (5, 257, true),
    ] {
        let ch: Vec<Vec<f64>> = (0..m)
            .map(|c| {
                let mut x = 0.0;
                (0..n)
                    .map(|_| {
                        x = 0.8 * x + next() + 0.1 * c as f64;
                        if round { (x * 4.0).round() / 4.0 } else { x }
                    })
                    .collect()
            })
            .collect();
        cases.push(ch);
    }
    let near = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-10 * b.abs();
    for (k, ch) in cases.iter().enumerate() {
        let d = diagnostics(ch);
        let want = (rhat(ch), ess_bulk(ch), ess_tail(ch));
        assert!(near(d.rhat, want.0), "case {k}: R̂ {} vs {}", d.rhat, want.0);
        assert!(
            near(d.ess_bulk, want.1),
            "case {k}: bulk {} vs {}",
            d.ess_bulk,
            want.1
        );
        assert!(
            near(d.ess_tail, want.2),
            "case {k}: tail {} vs {}",
            d.ess_tail,
            want.2
        );
        let mean = ess_basic(&split_chains(ch));
        assert!(
            near(d.ess_mean, mean),
            "case {k}: mean {} vs {mean}",
            d.ess_mean
        );
    }
}

/// The mean's ESS of AR(1) chains is `N(1 − ρ)/(1 + ρ)`, and the MCSE `sd/√ess_mean`
/// it gives is the sd of the chains' mean: over 400 replications the standardised errors
/// `mean/mcse` have variance 1 (its sampling sd is √(2/400) = 0.07).
#[test]
fn the_mean_ess_gives_a_calibrated_mcse() {
    let mut s: u64 = 2021;
    let mut normal = move || {
        let mut u = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (a, b) = (u(), u());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    };
    let rho: f64 = 0.7;
    let (m, n) = (4, 1000);
    let (mut z2, mut ess_sum) = (0.0, 0.0);
    let reps = 400;
    for _ in 0..reps {
        let ch: Vec<Vec<f64>> = (0..m)
            .map(|_| {
                // Started in the stationary law N(0, 1/(1 − ρ²)).
                let mut x = normal() / (1.0 - rho * rho).sqrt();
                (0..n)
                    .map(|_| {
                        x = rho * x + normal();
                        x
                    })
                    .collect()
            })
            .collect();
        let d = diagnostics(&ch);
        let all: Vec<f64> = ch.concat();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let sd = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        z2 += (mean / (sd / d.ess_mean.sqrt())).powi(2);
        ess_sum += d.ess_mean;
    }
    let want = (m * n) as f64 * (1.0 - rho) / (1.0 + rho);
    let ess = ess_sum / reps as f64;
    assert!((ess / want - 1.0).abs() < 0.05, "mean ESS {ess} vs {want}");
    let var = z2 / reps as f64;
    assert!((var - 1.0).abs() < 0.25, "variance of mean/mcse {var}");
}

/// Two autocovariances from one FFT are the two computed alone; weighted quantiles from
/// one sort are the ones of the definition.
#[test]
fn paired_autocovariances_and_joint_quantiles() {
    let ch = chains_b();
    let (x, y) = autocovariance_pair(&ch[0], &ch[1]);
    for (got, want) in [(x, autocovariance(&ch[0])), (y, autocovariance(&ch[1]))] {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12 * want[0], "{g} vs {w}");
        }
    }
    let vals: Vec<f64> = ch.concat();
    let ws: Vec<f64> = (0..vals.len()).map(|i| 1.0 + (i % 5) as f64).collect();
    let ps = [0.0, 0.05, 0.5, 0.95, 1.0];
    // By the definition: the smallest value whose cumulative weight reaches p·Σw.
    let by_definition = |p: f64| {
        let mut pairs: Vec<(f64, f64)> = vals.iter().copied().zip(ws.iter().copied()).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = ws.iter().sum();
        let mut acc = 0.0;
        for &(v, w) in &pairs {
            acc += w;
            if acc >= p * total {
                return v;
            }
        }
        pairs[pairs.len() - 1].0
    };
    let joint = weighted_quantiles(&vals, &ws, &ps);
    for (q, &p) in joint.iter().zip(&ps) {
        assert_eq!(*q, by_definition(p), "p = {p}");
        assert_eq!(*q, weighted_quantile(&vals, &ws, p), "p = {p}");
    }
    assert!(weighted_quantiles(&[], &[], &[0.5])[0].is_nan());
}

/// The quantiles that share the diagnostics' sort are the ones computed alone, for even
/// chains (shared) and odd ones (computed alone).
#[test]
fn quantiles_from_the_diagnostics_sort() {
    for ch in [chains_a(), chains_b()] {
        let vals = ch.concat();
        let ws: Vec<f64> = (0..vals.len()).map(|i| 0.5 + (i % 3) as f64).collect();
        let ps = [0.05, 0.5, 0.95];
        let (d, q) = diagnostics_and_quantiles(&ch, &ws, &ps);
        assert_eq!(d, diagnostics(&ch));
        assert_eq!(q, weighted_quantiles(&vals, &ws, &ps));
    }
}

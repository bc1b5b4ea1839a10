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

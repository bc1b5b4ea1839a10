//! Convergence diagnostics of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R̂": rank-normalised split
//! R̂ (the larger of bulk and folded), bulk ESS, tail ESS; and autocorrelation.
//!
//! These follow the reference implementation of the `posterior` R package: chains are
//! split in half (an odd middle draw dropped), autocovariances are the biased FFT
//! estimates, and the ESS uses Geyer's initial positive and monotone sequences with the
//! antithetic correction `τ ≥ 1/log₁₀(S)`.

use rustfft::{FftPlanner, num_complex::Complex};
use statrs::distribution::{ContinuousCDF, Normal};

/// The diagnostics of one parameter over several chains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diagnostics {
    /// max(bulk R̂, folded R̂) on rank-normalised split chains.
    pub rhat: f64,
    /// ESS of the rank-normalised split chains.
    pub ess_bulk: f64,
    /// min of the ESS of the 5% and 95% quantile indicators.
    pub ess_tail: f64,
}

/// All three diagnostics for `chains` (equal lengths, at least 4 draws each).
pub fn diagnostics(chains: &[Vec<f64>]) -> Diagnostics {
    Diagnostics {
        rhat: rhat(chains),
        ess_bulk: ess_bulk(chains),
        ess_tail: ess_tail(chains),
    }
}

/// Splits each chain in two halves (dropping the middle draw of an odd-length chain).
pub fn split_chains(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut out = Vec::with_capacity(2 * chains.len());
    for c in chains {
        let n = c.len();
        if n < 2 {
            out.push(c.clone());
            continue;
        }
        let half = n / 2;
        out.push(c[..half].to_vec());
        out.push(c[n - half..].to_vec());
    }
    out
}

/// Rank-normalisation: pooled ranks (ties get the average rank), then
/// `Φ⁻¹((r − 3/8)/(S + 1/4))`.
pub fn rank_normalize(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let s: usize = chains.iter().map(Vec::len).sum();
    let mut all: Vec<(f64, usize)> = chains.iter().flatten().copied().zip(0..).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ranks = vec![0.0; s];
    let mut i = 0;
    while i < s {
        let mut j = i;
        while j + 1 < s && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for item in &all[i..=j] {
            ranks[item.1] = r;
        }
        i = j + 1;
    }
    let normal = Normal::standard();
    let mut k = 0;
    chains
        .iter()
        .map(|c| {
            c.iter()
                .map(|_| {
                    let z = normal.inverse_cdf((ranks[k] - 0.375) / (s as f64 + 0.25));
                    k += 1;
                    z
                })
                .collect()
        })
        .collect()
}

/// The classic potential scale reduction `√(var⁺/W)` of the given chains.
pub fn rhat_basic(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len() as f64;
    let n = chains.iter().map(Vec::len).min().unwrap_or(0);
    if n < 2 || chains.len() < 2 {
        return f64::NAN;
    }
    let nf = n as f64;
    let means: Vec<f64> = chains
        .iter()
        .map(|c| c[..n].iter().sum::<f64>() / nf)
        .collect();
    let vars: Vec<f64> = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c[..n].iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (nf - 1.0))
        .collect();
    let w = vars.iter().sum::<f64>() / m;
    let grand = means.iter().sum::<f64>() / m;
    let b = nf
        * means
            .iter()
            .map(|mu| (mu - grand) * (mu - grand))
            .sum::<f64>()
        / (m - 1.0);
    let var_plus = (nf - 1.0) / nf * w + b / nf;
    (var_plus / w).sqrt()
}

fn median(chains: &[Vec<f64>]) -> f64 {
    let mut all: Vec<f64> = chains.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let s = all.len();
    if s == 0 {
        return f64::NAN;
    }
    if s % 2 == 1 {
        all[s / 2]
    } else {
        0.5 * (all[s / 2 - 1] + all[s / 2])
    }
}

/// Rank-normalised split R̂: the larger of the bulk R̂ and the R̂ of the folded draws
/// `|θ − median|`.
pub fn rhat(chains: &[Vec<f64>]) -> f64 {
    let split = split_chains(chains);
    let bulk = rhat_basic(&rank_normalize(&split));
    let med = median(&split);
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|x| (x - med).abs()).collect())
        .collect();
    let tail = rhat_basic(&rank_normalize(&folded));
    bulk.max(tail)
}

/// Biased autocovariances `γ_t = (1/n) Σᵢ (xᵢ − x̄)(xᵢ₊ₜ − x̄)`, `t = 0..n`, by FFT.
pub fn autocovariance(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    if n == 0 {
        return vec![];
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let m = (2 * n).next_power_of_two();
    let mut buf: Vec<Complex<f64>> = x.iter().map(|v| Complex::new(v - mean, 0.0)).collect();
    buf.resize(m, Complex::new(0.0, 0.0));
    let mut planner = FftPlanner::new();
    planner.plan_fft_forward(m).process(&mut buf);
    for c in buf.iter_mut() {
        *c = Complex::new(c.norm_sqr(), 0.0);
    }
    planner.plan_fft_inverse(m).process(&mut buf);
    buf[..n]
        .iter()
        .map(|c| c.re / (m as f64 * n as f64))
        .collect()
}

/// Autocorrelations `ρ_t = γ_t/γ_0` up to `max_lag`.
pub fn autocorrelation(x: &[f64], max_lag: usize) -> Vec<f64> {
    let acov = autocovariance(x);
    let g0 = acov.first().copied().unwrap_or(f64::NAN);
    acov.iter().take(max_lag + 1).map(|g| g / g0).collect()
}

/// The effective sample size of the given chains (not split, not normalised).
pub fn ess_basic(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len();
    let n = chains.iter().map(Vec::len).min().unwrap_or(0);
    if n < 4 || m == 0 {
        return f64::NAN;
    }
    let nf = n as f64;
    let acov: Vec<Vec<f64>> = chains.iter().map(|c| autocovariance(&c[..n])).collect();
    let means: Vec<f64> = chains
        .iter()
        .map(|c| c[..n].iter().sum::<f64>() / nf)
        .collect();
    let mean_var = acov.iter().map(|a| a[0]).sum::<f64>() / m as f64 * nf / (nf - 1.0);
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if m > 1 {
        let g = means.iter().sum::<f64>() / m as f64;
        var_plus += means.iter().map(|x| (x - g) * (x - g)).sum::<f64>() / (m as f64 - 1.0);
    }
    if var_plus.is_nan() || var_plus <= 0.0 {
        return f64::NAN;
    }
    let mean_acov = |t: usize| acov.iter().map(|a| a[t]).sum::<f64>() / m as f64;
    let rho = |t: usize| 1.0 - (mean_var - mean_acov(t)) / var_plus;
    let mut rho_hat = vec![0.0; n];
    let mut t = 0usize;
    let mut even = 1.0;
    rho_hat[0] = even;
    let mut odd = rho(1);
    rho_hat[1] = odd;
    while t + 5 < n && (even + odd).is_finite() && even + odd > 0.0 {
        t += 2;
        even = rho(t);
        odd = rho(t + 1);
        if even + odd >= 0.0 {
            rho_hat[t] = even;
            rho_hat[t + 1] = odd;
        }
    }
    let max_t = t;
    if even > 0.0 {
        rho_hat[max_t] = even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 0usize;
    while t + 4 <= max_t {
        t += 2;
        if rho_hat[t] + rho_hat[t + 1] > rho_hat[t - 2] + rho_hat[t - 1] {
            rho_hat[t] = (rho_hat[t - 2] + rho_hat[t - 1]) / 2.0;
            rho_hat[t + 1] = rho_hat[t];
        }
    }
    let s = (m * n) as f64;
    let tau = -1.0 + 2.0 * rho_hat[..max_t].iter().sum::<f64>() + rho_hat[max_t];
    let tau = tau.max(1.0 / s.log10());
    s / tau
}

/// Bulk ESS: [`ess_basic`] of the rank-normalised split chains.
pub fn ess_bulk(chains: &[Vec<f64>]) -> f64 {
    ess_basic(&rank_normalize(&split_chains(chains)))
}

/// Tail ESS: the smaller ESS of the indicators `θ ≤ q₀.₀₅` and `θ ≤ q₀.₉₅` (split chains).
pub fn ess_tail(chains: &[Vec<f64>]) -> f64 {
    // Quantiles of all draws (before splitting), as in the reference implementation.
    let mut all: Vec<f64> = chains.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let q = |p: f64| quantile_sorted(&all, p);
    let ess_at = |qv: f64| {
        let ind: Vec<Vec<f64>> = chains
            .iter()
            .map(|c| c.iter().map(|&x| f64::from(u8::from(x <= qv))).collect())
            .collect();
        ess_basic(&split_chains(&ind))
    };
    ess_at(q(0.05)).min(ess_at(q(0.95)))
}

/// The `p` quantile of sorted values, by linear interpolation (type 7).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The `p` quantile of weighted values: the smallest value whose cumulative weight
/// reaches `p` of the total (weights ≥ 0).
pub fn weighted_quantile(values: &[f64], weights: &[f64], p: f64) -> f64 {
    let mut pairs: Vec<(f64, f64)> = values
        .iter()
        .copied()
        .zip(weights.iter().copied())
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    if pairs.is_empty() || total.is_nan() || total <= 0.0 {
        return f64::NAN;
    }
    let target = p * total;
    let mut acc = 0.0;
    for &(v, w) in &pairs {
        acc += w;
        if acc >= target {
            return v;
        }
    }
    pairs[pairs.len() - 1].0
}

//! Convergence diagnostics of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R̂": rank-normalised split
//! R̂ (the larger of bulk and folded), bulk ESS, tail ESS; and autocorrelation.
//!
//! These follow the reference implementation of the `posterior` R package: chains are
//! split in half (an odd middle draw dropped), autocovariances are the biased FFT
//! estimates, and the ESS uses Geyer's initial positive and monotone sequences with the
//! antithetic correction `τ ≥ 1/log₁₀(S)`.

use num_complex::Complex;

use crate::fft::transform;
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
    /// ESS of the split chains' own values (not rank-normalised): the one the mean's
    /// Monte Carlo standard error `sd/√ess_mean` takes (Vehtari et al. 2021, §3.2).
    pub ess_mean: f64,
}

/// All three diagnostics for `chains` (equal lengths, at least 4 draws each): the same
/// values as [`rhat`], [`ess_bulk`] and [`ess_tail`] (the tests compare them), computed
/// with one sort of the draws instead of five — the folded draws' order is merged out of
/// it from the median — with the rank-normalised split chains shared by R̂ and the bulk
/// ESS, and the normal scores of untied ranks from a table per draw count.
pub fn diagnostics(chains: &[Vec<f64>]) -> Diagnostics {
    diagnose(chains).0
}

/// [`diagnostics`] and the weighted quantiles at `ps` (ascending) of the same draws, with
/// `weights` one per draw in chain order: as [`weighted_quantiles`] gives them, from the
/// diagnostics' own sort when every chain has an even length (then the split chains
/// hold every draw, in order).
pub fn diagnostics_and_quantiles(
    chains: &[Vec<f64>],
    weights: &[f64],
    ps: &[f64],
) -> (Diagnostics, Vec<f64>) {
    let (diag, order) = diagnose(chains);
    let flat_len: usize = chains.iter().map(Vec::len).sum();
    let values = chains.concat();
    let q = match order {
        Some(order) if weights.len() == flat_len => {
            walk_quantiles(order.len(), |k| values[order[k]], |k| weights[order[k]], ps)
        }
        _ => weighted_quantiles(&values, weights, ps),
    };
    (diag, q)
}

/// The weighted quantiles at `ps` (ascending) of `n` draws given in ascending order
/// (`value(k)`, `weight(k)` of the `k`-th smallest): for each `p`, the first draw whose
/// cumulative weight reaches `p` of the total; NaN when there is no positive total.
fn walk_quantiles(
    n: usize,
    value: impl Fn(usize) -> f64,
    weight: impl Fn(usize) -> f64,
    ps: &[f64],
) -> Vec<f64> {
    let total: f64 = (0..n).map(&weight).sum();
    if n == 0 || total.is_nan() || total <= 0.0 {
        return vec![f64::NAN; ps.len()];
    }
    let (mut acc, mut k) = (0.0, 0);
    ps.iter()
        .map(|&p| {
            let target = p * total;
            while k < n && acc + weight(k) < target {
                acc += weight(k);
                k += 1;
            }
            value(k.min(n - 1))
        })
        .collect()
}

/// The diagnostics, and the ascending order of the draws (chain by chain) when the split
/// chains hold all of them.
fn diagnose(chains: &[Vec<f64>]) -> (Diagnostics, Option<Vec<usize>>) {
    // The split chains as one buffer and their lengths (slices of it, not copies: a long
    // run's draws are held once here).
    let mut flat = Vec::with_capacity(chains.iter().map(Vec::len).sum());
    let mut lens = Vec::with_capacity(2 * chains.len());
    for c in chains {
        let n = c.len();
        if n < 2 {
            flat.extend_from_slice(c);
            lens.push(n);
            continue;
        }
        let half = n / 2;
        flat.extend_from_slice(&c[..half]);
        flat.extend_from_slice(&c[n - half..]);
        lens.extend([half, half]);
    }
    let s = flat.len();
    // Sorted as (order-preserving key, index) pairs: integer comparisons on contiguous
    // pairs, not a comparison closure reaching into the draws.
    let mut keyed: Vec<(u64, u32)> = flat.iter().map(|&x| total_key(x)).zip(0..).collect();
    keyed.sort_unstable();
    let order: Vec<usize> = keyed.iter().map(|&(_, i)| i as usize).collect();
    drop(keyed);
    let sorted: Vec<f64> = order.iter().map(|&i| flat[i]).collect();

    let bulk_z = normal_scores(&sorted, &order);
    let bulk = slices(&bulk_z, &lens);
    let med = if s == 0 {
        f64::NAN
    } else if s % 2 == 1 {
        sorted[s / 2]
    } else {
        0.5 * (sorted[s / 2 - 1] + sorted[s / 2])
    };
    let (folded_sorted, folded_order) = fold_sorted(&flat, &order, med);
    let folded_z = normal_scores(&folded_sorted, &folded_order);
    drop((folded_sorted, folded_order));
    let rhat = rhat_basic(&bulk).max(rhat_basic(&slices(&folded_z, &lens)));
    drop(folded_z);

    // Tail quantiles from all draws before splitting: the split draws unless a chain of
    // odd length lost its middle draw.
    let whole = chains.iter().all(|c| c.len() % 2 == 0 || c.len() < 2);
    let all_sorted = if whole {
        sorted
    } else {
        let mut all: Vec<f64> = chains.iter().flatten().copied().collect();
        all.sort_unstable_by(f64::total_cmp);
        all
    };
    let ess_at = |qv: f64| {
        let ind: Vec<f64> = flat.iter().map(|&x| f64::from(u8::from(x <= qv))).collect();
        ess_basic(&slices(&ind, &lens))
    };
    let ess_tail =
        ess_at(quantile_sorted(&all_sorted, 0.05)).min(ess_at(quantile_sorted(&all_sorted, 0.95)));
    let diag = Diagnostics {
        rhat,
        ess_bulk: ess_basic(&bulk),
        ess_tail,
        ess_mean: ess_basic(&slices(&flat, &lens)),
    };
    (diag, whole.then_some(order))
}

/// A key whose unsigned order is `f64::total_cmp`'s order.
fn total_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// `flat` as consecutive chains of the given lengths.
fn slices<'a>(flat: &'a [f64], lens: &[usize]) -> Vec<&'a [f64]> {
    let mut rest = flat;
    lens.iter()
        .map(|&n| {
            let (head, tail) = rest.split_at(n);
            rest = tail;
            head
        })
        .collect()
}

/// The folded draws `|x − med|` in ascending order, and that order (draw indices),
/// merged from the draws' ascending `order` outwards from the median (the draws below it
/// read backwards); equal folded values keep their relative order, as a stable sort would.
fn fold_sorted(flat: &[f64], order: &[usize], med: f64) -> (Vec<f64>, Vec<usize>) {
    let folded: Vec<f64> = flat.iter().map(|x| (x - med).abs()).collect();
    let split = order.partition_point(|&i| flat[i] < med);
    let (mut lo, mut hi) = (split, split);
    let mut out = Vec::with_capacity(order.len());
    while lo > 0 || hi < order.len() {
        let take_lo = match (lo > 0, hi < order.len()) {
            (true, true) => {
                let (a, b) = (order[lo - 1], order[hi]);
                folded[a].total_cmp(&folded[b]).then(a.cmp(&b)).is_lt()
            }
            (l, _) => l,
        };
        if take_lo {
            lo -= 1;
            out.push(order[lo]);
        } else {
            out.push(order[hi]);
            hi += 1;
        }
    }
    let sorted = out.iter().map(|&i| folded[i]).collect();
    (sorted, out)
}

/// [`rank_normalize`]'s normal scores in draw order, from the draws' values in ascending
/// order (`sorted`) and that order: tied runs get their average rank; untied ranks read
/// a table computed once per draw count (Φ⁻¹ is the costly part).
fn normal_scores(sorted: &[f64], order: &[usize]) -> Vec<f64> {
    thread_local! {
        static TABLE: std::cell::RefCell<(usize, Vec<f64>)> = const { std::cell::RefCell::new((0, Vec::new())) };
    }
    let s = order.len();
    let normal = Normal::standard();
    let score = |r: f64| normal.inverse_cdf((r - 0.375) / (s as f64 + 0.25));
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        if t.0 != s {
            *t = (s, (0..s).map(|i| score(i as f64 + 1.0)).collect());
        }
        let mut z = vec![0.0; s];
        let mut i = 0;
        while i < s {
            let mut j = i;
            while j + 1 < s && sorted[j + 1] == sorted[i] {
                j += 1;
            }
            let zi = if i == j {
                t.1[i]
            } else {
                score((i + j) as f64 / 2.0 + 1.0)
            };
            for &k in &order[i..=j] {
                z[k] = zi;
            }
            i = j + 1;
        }
        z
    })
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
pub fn rhat_basic<C: AsRef<[f64]>>(chains: &[C]) -> f64 {
    let chains: Vec<&[f64]> = chains.iter().map(AsRef::as_ref).collect();
    let m = chains.len() as f64;
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
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
    transform(&mut buf, false);
    for c in buf.iter_mut() {
        *c = Complex::new(c.norm_sqr(), 0.0);
    }
    transform(&mut buf, true);
    buf[..n]
        .iter()
        .map(|c| c.re / (m as f64 * n as f64))
        .collect()
}

/// [`autocovariance`] of two series of equal length from one complex FFT: `a` in the
/// real part and `b` in the imaginary part; their spectra separate as
/// `A_k = (Z_k + Z̄_{m−k})/2` and `B_k = (Z_k − Z̄_{m−k})/2i`, and one inverse FFT of
/// `|A_k|² + i|B_k|²` (both real and even) gives both autocovariances. Half the FFTs of
/// two calls, the same values to rounding.
pub fn autocovariance_pair(a: &[f64], b: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = a.len().min(b.len());
    if n == 0 {
        return (vec![], vec![]);
    }
    let (ma, mb) = (
        a[..n].iter().sum::<f64>() / n as f64,
        b[..n].iter().sum::<f64>() / n as f64,
    );
    let m = (2 * n).next_power_of_two();
    let mut buf: Vec<Complex<f64>> = a[..n]
        .iter()
        .zip(&b[..n])
        .map(|(x, y)| Complex::new(x - ma, y - mb))
        .collect();
    buf.resize(m, Complex::new(0.0, 0.0));
    transform(&mut buf, false);
    // The power spectrum in place: entries k and m − k from the same two values.
    let power = |z: Complex<f64>, zc: Complex<f64>| {
        Complex::new((z + zc).norm_sqr() / 4.0, (z - zc).norm_sqr() / 4.0)
    };
    for k in 0..=m / 2 {
        let j = (m - k) % m;
        let (zk, zj) = (buf[k], buf[j]);
        buf[k] = power(zk, zj.conj());
        buf[j] = power(zj, zk.conj());
    }
    transform(&mut buf, true);
    let scale = m as f64 * n as f64;
    buf[..n]
        .iter()
        .map(|c| (c.re / scale, c.im / scale))
        .unzip()
}

/// Autocorrelations `ρ_t = γ_t/γ_0` up to `max_lag`.
pub fn autocorrelation(x: &[f64], max_lag: usize) -> Vec<f64> {
    let acov = autocovariance(x);
    let g0 = acov.first().copied().unwrap_or(f64::NAN);
    acov.iter().take(max_lag + 1).map(|g| g / g0).collect()
}

/// The effective sample size of the given chains (not split, not normalised).
pub fn ess_basic<C: AsRef<[f64]>>(chains: &[C]) -> f64 {
    let chains: Vec<&[f64]> = chains.iter().map(AsRef::as_ref).collect();
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    if n < 4 || m == 0 {
        return f64::NAN;
    }
    let nf = n as f64;
    // Two chains an FFT.
    let acov: Vec<Vec<f64>> = chains
        .chunks(2)
        .flat_map(|pair| match pair {
            [a, b] => {
                let (x, y) = autocovariance_pair(&a[..n], &b[..n]);
                vec![x, y]
            }
            _ => pair.iter().map(|c| autocovariance(&c[..n])).collect(),
        })
        .collect();
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

/// [`weighted_quantile`] at each of `ps` (ascending), with one sort for all of them.
pub fn weighted_quantiles(values: &[f64], weights: &[f64], ps: &[f64]) -> Vec<f64> {
    let mut pairs: Vec<(f64, f64)> = values
        .iter()
        .copied()
        .zip(weights.iter().copied())
        .collect();
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    walk_quantiles(pairs.len(), |k| pairs[k].0, |k| pairs[k].1, ps)
}

/// The `p` quantile of weighted values: the smallest value whose cumulative weight
/// reaches `p` of the total (weights ≥ 0).
pub fn weighted_quantile(values: &[f64], weights: &[f64], p: f64) -> f64 {
    weighted_quantiles(values, weights, &[p])[0]
}

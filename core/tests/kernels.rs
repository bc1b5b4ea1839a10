//! Every SIMD kernel against its scalar twin, for lengths `0..=4·LANES+3` and special
//! values, with the tolerances of the numerical contract in `sgld::kernels`: the dense,
//! sparse, Langevin and element-wise kernels (the ICA step's matrix kernels are in
//! `kernels_rows.rs`).

mod kernel_props;

use kernel_props::*;
use proptest::prelude::*;
use sgld::kernels::{reference, simd};

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn dot_matches_twin_and_exact((a, b) in pair_of(finite())) {
        let abs: f64 = a.iter().zip(&b).map(|(x, y)| (*x as f64 * *y as f64).abs()).sum();
        prop_assume!(abs < f32::MAX as f64 / 2.0);
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        let (s, r) = (simd::dot(&a, &b) as f64, reference::dot(&a, &b) as f64);
        // γₙ·Σ|ab| from the summation, plus one rounding of the result and subnormal slack.
        let tol = gamma(a.len() + 1) * abs + U * exact.abs() + 1e-44 * (a.len() as f64 + 1.0);
        prop_assert!((s - exact).abs() <= tol, "simd {s} exact {exact} tol {tol}");
        prop_assert!((r - exact).abs() <= tol, "scalar {r} exact {exact} tol {tol}");
    }

    #[test]
    fn dot_special_values_agree((a, b) in pair_of(special())) {
        let (s, r) = (simd::dot(&a, &b), reference::dot(&a, &b));
        prop_assert!(same_class(s, r), "simd {s} scalar {r}");
    }

    #[test]
    fn axpy_matches_twin((x, y) in pair_of(finite()), alpha in finite()) {
        let mut ys = y.clone();
        let mut yr = y.clone();
        simd::axpy(alpha, &x, &mut ys);
        reference::axpy(alpha, &x, &mut yr);
        for i in 0..y.len() {
            let mag = (alpha as f64 * x[i] as f64).abs() + (y[i] as f64).abs();
            prop_assume!(mag < f32::MAX as f64 / 2.0);
            let tol = 2.0 * U * mag * 2.0 + 1e-44;
            prop_assert!((ys[i] as f64 - yr[i] as f64).abs() <= tol, "i {i}: {} vs {}", ys[i], yr[i]);
        }
    }

    #[test]
    fn dots_rows_lanes_special_values_agree((a, b) in pair_of(special())) {
        // One row each: the masked last vector adds 0·0 in the lanes the body counted, so
        // an ∞ there stays an ∞ (not ∞·0 = NaN), and the twins agree value for value.
        let n = a.len();
        let (mut s, mut r) = ([f64::NAN], [f64::NAN]);
        simd::dots_rows_f32_lanes(&a, &b, n, n, &mut s, 1);
        reference::dots_rows_f32_lanes(&a, &b, n, n, &mut r, 1);
        prop_assert!(s[0] == r[0] || (s[0].is_nan() && r[0].is_nan()), "{} vs {}", s[0], r[0]);
        // The same class as the f64 sum (finite values here are small: no lane overflows).
        let mut e = [f64::NAN];
        reference::dots_rows_f32(&a, &b, n, n, &mut e, 1);
        let class = |x: f64| (x.is_nan(), x.is_infinite() && x > 0.0, x.is_infinite() && x < 0.0);
        prop_assert_eq!(class(s[0]), class(e[0]), "{} vs f64 {}", s[0], e[0]);
    }

    #[test]
    fn axpy_special_values_agree((x, y) in pair_of(special()), alpha in special()) {
        let mut ys = y.clone();
        let mut yr = y.clone();
        simd::axpy(alpha, &x, &mut ys);
        reference::axpy(alpha, &x, &mut yr);
        for i in 0..y.len() {
            prop_assert!(same_class(ys[i], yr[i]), "i {i}: {} vs {}", ys[i], yr[i]);
        }
    }

    #[test]
    fn langevin_kernels_match_twin(
        (t, g) in pair_of(finite()),
        noise_seed in any::<u64>(),
        eps in 1e-12f32..1.0,
    ) {
        let n = t.len();
        let mut noise = vec![0.0f32; n];
        sgld::noise::reference::fill_normal(&mut sgld::noise::default_rng(noise_seed), &mut noise);
        let m: Vec<f32> = g.iter().map(|v| v.abs() * 3.0).collect();
        let (h, s) = (0.5 * eps, eps.sqrt());
        let mut ts = t.clone();
        let mut tr = t.clone();
        simd::langevin_update(&mut ts, &g, &noise, h, s);
        reference::langevin_update(&mut tr, &g, &noise, h, s);
        let mut ps = noise.clone();
        let mut pr = noise.clone();
        simd::langevin_propose(&t, &g, &mut ps, h, s);
        reference::langevin_propose(&t, &g, &mut pr, h, s);
        // The checked step in place: the plain proposal in θ, the old θ in the noise
        // buffer, and the sums of squares within the γₙ bound.
        let (mut ks, mut kr) = (t.clone(), t.clone());
        let (mut bs, mut br) = (noise.clone(), noise.clone());
        let cs = simd::langevin_step_checked(&mut ks, &g, &mut bs, h, s);
        let cr = reference::langevin_step_checked(&mut kr, &g, &mut br, h, s);
        // Four lanes at a time (the path of targets without 512-bit vectors).
        let (mut k4, mut b4) = (t.clone(), noise.clone());
        let c4 = simd::langevin_step_checked_x4(&mut k4, &g, &mut b4, h, s);
        prop_assert_eq!(bits(&k4), bits(&ks), "four lanes: θ");
        prop_assert_eq!(bits(&b4), bits(&bs), "four lanes: old θ");
        prop_assert_eq!(c4.finite, cs.finite);
        prop_assert_eq!(&ks, &ps, "checked step = plain proposal");
        prop_assert_eq!(&kr, &pr);
        prop_assert_eq!(&bs, &t, "old θ kept in the noise buffer");
        prop_assert_eq!(&br, &t);
        prop_assert_eq!(cs.finite, ps.iter().all(|v| v.is_finite()));
        prop_assert_eq!(cr.finite, pr.iter().all(|v| v.is_finite()));
        for (what, xs, got) in [("noise", &noise, [cs.noise_sq, cr.noise_sq, c4.noise_sq]), ("grad", &g, [cs.grad_sq, cr.grad_sq, c4.grad_sq])] {
            let sq: f64 = xs.iter().map(|&e| e as f64 * e as f64).sum();
            prop_assume!(sq < f32::MAX as f64 / 2.0);
            let sq_tol = 2.0 * (n as f64 + 1.0) * U * sq + 1e-40;
            for v in got {
                prop_assert!((v as f64 - sq).abs() <= sq_tol, "{what} norm²: {v} vs {sq}");
            }
        }
        let mut cs = t.clone();
        let mut cr = t.clone();
        simd::langevin_update_precond(&mut cs, &g, &noise, &m, h, s);
        reference::langevin_update_precond(&mut cr, &g, &noise, &m, h, s);
        for i in 0..n {
            let mag = (t[i] as f64).abs() + (h as f64 * g[i] as f64).abs() + (s as f64 * noise[i] as f64).abs();
            let magc = (t[i] as f64).abs()
                + (h as f64 * m[i] as f64 * g[i] as f64).abs()
                + (s as f64 * (m[i] as f64).sqrt() * noise[i] as f64).abs();
            prop_assume!(magc < f32::MAX as f64 / 4.0);
            // three terms: at most three roundings on either side, plus √ and subnormals.
            let tol = 6.0 * U * mag + 1e-43;
            let tolc = 10.0 * U * magc + 1e-43;
            prop_assert!((ts[i] as f64 - tr[i] as f64).abs() <= tol, "update i {i}: {} vs {}", ts[i], tr[i]);
            prop_assert!((ps[i] as f64 - pr[i] as f64).abs() <= tol, "propose i {i}: {} vs {}", ps[i], pr[i]);
            prop_assert!(ps[i] == ts[i] || (ps[i] as f64 - ts[i] as f64).abs() <= tol);
            prop_assert!((cs[i] as f64 - cr[i] as f64).abs() <= tolc, "precond i {i}: {} vs {}", cs[i], cr[i]);
        }
    }

    #[test]
    fn langevin_special_values_agree((t, g) in pair_of(special()), noise in prop::collection::vec(special(), MAX_LEN)) {
        let n = t.len();
        let noise = &noise[..n];
        let mut ts = t.clone();
        let mut tr = t.clone();
        simd::langevin_update(&mut ts, &g, noise, 0.5, 1.0);
        reference::langevin_update(&mut tr, &g, noise, 0.5, 1.0);
        for i in 0..n {
            prop_assert!(same_class(ts[i], tr[i]), "i {i}: {} vs {}", ts[i], tr[i]);
        }
        let (mut ps, mut pr) = (t.clone(), t.clone());
        let (mut bs, mut br) = (noise.to_vec(), noise.to_vec());
        let cs = simd::langevin_step_checked(&mut ps, &g, &mut bs, 0.5, 1.0);
        let cr = reference::langevin_step_checked(&mut pr, &g, &mut br, 0.5, 1.0);
        let (mut p4, mut b4) = (t.clone(), noise.to_vec());
        let c4 = simd::langevin_step_checked_x4(&mut p4, &g, &mut b4, 0.5, 1.0);
        prop_assert_eq!(c4.finite, cs.finite);
        prop_assert_eq!(bits(&p4), bits(&ps), "four lanes: θ");
        prop_assert_eq!(bits(&b4), bits(&bs), "four lanes: old θ");
        prop_assert_eq!(cs.finite, cr.finite);
        prop_assert_eq!(cs.finite, ps.iter().all(|v| v.is_finite()));
        for i in 0..n {
            prop_assert!(same_class(ps[i], pr[i]), "i {i}: {} vs {}", ps[i], pr[i]);
            prop_assert_eq!(bs[i].to_bits(), t[i].to_bits(), "old θ kept");
        }
    }

    #[test]
    fn sparse_kernels_match_twin(
        w in prop::collection::vec(finite(), 0..=MAX_LEN),
        raw in prop::collection::vec(any::<u32>(), 0..=MAX_LEN),
        alpha in finite(),
    ) {
        let len = w.len() as u32;
        // Mostly valid indices, a few past the end (both twins skip those).
        let idx: Vec<u32> = raw.iter().map(|r| if r % 8 == 0 { len + r % 5 } else { r % len.max(1) }).collect();
        let abs: f64 = idx.iter().filter_map(|&j| w.get(j as usize)).map(|v| (*v as f64).abs()).sum();
        prop_assume!(abs < f32::MAX as f64 / 2.0);
        let exact: f64 = idx.iter().filter_map(|&j| w.get(j as usize)).map(|v| *v as f64).sum();
        let tol = gamma(idx.len() + 1) * abs + U * exact.abs() + 1e-44;
        let (s, r) = (simd::sparse_dot(&idx, &w) as f64, reference::sparse_dot(&idx, &w) as f64);
        prop_assert!((s - exact).abs() <= tol && (r - exact).abs() <= tol, "simd {s} scalar {r} exact {exact}");
        let mut ys = w.clone();
        let mut yr = w.clone();
        simd::sparse_axpy(alpha, &idx, &mut ys);
        reference::sparse_axpy(alpha, &idx, &mut yr);
        prop_assert_eq!(ys, yr); // same additions in the same order: bit-identical
    }

    #[test]
    fn narrow_indices_give_the_u32_results(
        w in prop::collection::vec(finite(), 0..=300),
        raw in prop::collection::vec(any::<u8>(), 0..=MAX_LEN),
        alpha in finite(),
    ) {
        // u8 and u16 rows (some past the end of w) read and add exactly what u32 rows do.
        let wide: Vec<u32> = raw.iter().map(|&j| j as u32).collect();
        let half: Vec<u16> = raw.iter().map(|&j| j as u16).collect();
        let dots = [simd::sparse_dot(&raw, &w), simd::sparse_dot(&half, &w), simd::sparse_dot(&wide, &w)];
        prop_assert!(dots.iter().all(|d| d.to_bits() == dots[2].to_bits()), "{dots:?}");
        prop_assert_eq!(reference::sparse_dot(&raw, &w).to_bits(), reference::sparse_dot(&wide, &w).to_bits());
        let (mut y8, mut y16, mut y32) = (w.clone(), w.clone(), w.clone());
        simd::sparse_axpy(alpha, &raw, &mut y8);
        simd::sparse_axpy(alpha, &half, &mut y16);
        simd::sparse_axpy(alpha, &wide, &mut y32);
        prop_assert_eq!(&y8, &y32);
        prop_assert_eq!(&y16, &y32);
    }

    #[test]
    fn bitmap_kernels_match_twin_and_index_rows(
        (stride, w) in (1usize..=20).prop_flat_map(|stride| {
            // Half the lengths end inside the rows' last vector (the tail path of rows of
            // up to eight words), the others anywhere.
            let len = prop_oneof![0usize..=340, (16 * stride - 15)..=16 * stride];
            (Just(stride), len.prop_flat_map(|n| prop::collection::vec(finite(), n)))
        }),
        table_rows in 1usize..=12,
        words in prop::collection::vec(any::<u16>(), 240),
        raw in prop::collection::vec(0usize..15, 0..=20),
        alphas in prop::collection::vec(special(), 20),
    ) {
        // Random words, with bits past w's end (both twins skip those); row indices
        // past the table's end count as rows of zeros.
        let table = &words[..table_rows * stride];
        let rows = &raw[..];
        let alphas = &alphas[..rows.len()];
        let index_rows: Vec<Vec<u32>> = rows
            .iter()
            .map(|&i| {
                let row = table.get(i * stride..(i + 1) * stride).unwrap_or(&[]);
                (0..16 * row.len())
                    .filter(|&j| row[j / 16] >> (j % 16) & 1 == 1 && j < w.len())
                    .map(|j| j as u32)
                    .collect()
            })
            .collect();
        let (mut ds, mut dr) = (vec![f32::NAN; rows.len()], vec![f32::NAN; rows.len()]);
        simd::bitmap_dots(table, stride, rows, &w, &mut ds);
        reference::bitmap_dots(table, stride, rows, &w, &mut dr);
        for (k, idx) in index_rows.iter().enumerate() {
            let abs: f64 = idx.iter().map(|&j| (w[j as usize] as f64).abs()).sum();
            prop_assume!(abs < f32::MAX as f64 / 2.0);
            let exact: f64 = idx.iter().map(|&j| w[j as usize] as f64).sum();
            let tol = gamma(idx.len() + 1) * abs + U * exact.abs() + 1e-44;
            prop_assert!((ds[k] as f64 - exact).abs() <= tol, "row {k}: simd {} exact {exact}", ds[k]);
            // The twin is the index-list twin on the same features, in the same order.
            prop_assert_eq!(dr[k].to_bits(), reference::sparse_dot(idx, &w).to_bits());
        }
        // Sixteen rows at a time: the first sixteen sums, then zeros.
        for (d16, d) in [
            (simd::bitmap_dots16(table, stride, rows, &w), &ds),
            (reference::bitmap_dots16(table, stride, rows, &w), &dr),
        ] {
            for (k, v) in d16.iter().enumerate() {
                let want = d.get(k).copied().unwrap_or(0.0);
                prop_assert_eq!(v.to_bits(), want.to_bits(), "lane {}", k);
            }
        }
        // The scatter-adds: the same additions in the same order as the twin and as one
        // index-list scatter a row, so bit-identical (NaN and ∞ included).
        let (mut ys, mut yr, mut yi) = (w.clone(), w.clone(), w.clone());
        simd::bitmap_axpys(alphas, table, stride, rows, &mut ys);
        reference::bitmap_axpys(alphas, table, stride, rows, &mut yr);
        for (idx, &a) in index_rows.iter().zip(alphas) {
            reference::sparse_axpy(a, idx, &mut yi);
        }
        for j in 0..w.len() {
            prop_assert!(ys[j].to_bits() == yr[j].to_bits() || (ys[j].is_nan() && yr[j].is_nan()), "j {j}: {} vs {}", ys[j], yr[j]);
            prop_assert!(yr[j].to_bits() == yi[j].to_bits() || (yr[j].is_nan() && yi[j].is_nan()), "j {j}: {} vs {}", yr[j], yi[j]);
        }
    }

    #[test]
    fn sigmoid_matches_twin(z in prop::collection::vec(prop_oneof![
        8 => -30.0f32..30.0,
        2 => -120.0f32..120.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(0.0f32),
    ], 0..=MAX_LEN)) {
        let (mut s, mut r) = (vec![0.0f32; z.len()], vec![0.0f32; z.len()]);
        simd::sigmoid(&z, &mut s);
        reference::sigmoid(&z, &mut r);
        for ((x, y), v) in s.iter().zip(&r).zip(&z) {
            // exp within 2 ulps of libm's, then 1 + e and 1/(·): 4 ulps relative.
            prop_assert!(same_class(*x, *y), "z = {v}: {x} vs {y}");
            if y.is_finite() {
                prop_assert!((x - y).abs() <= 4.0 * f32::EPSILON * y.abs() + 1e-44, "z = {v}: {x} vs {y}");
                prop_assert!((0.0..=1.0).contains(x));
            }
        }
    }

    #[test]
    fn log_sigmoid_pair_matches_twin(u in prop::collection::vec(prop_oneof![
        8 => -30.0f32..30.0,
        2 => -120.0f32..120.0,
        1 => -1e-6f32..1e-6,
        1 => prop_oneof![Just(f32::MAX), Just(-f32::MAX), Just(-0.0f32), Just(0.0f32)],
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
    ], 0..=MAX_LEN)) {
        let n = u.len();
        let (mut ls, mut s) = (vec![0.0f32; n], vec![0.0f32; n]);
        let (mut lr, mut sr) = (vec![0.0f32; n], vec![0.0f32; n]);
        simd::log_sigmoid_pair(&u, &mut ls, &mut s);
        reference::log_sigmoid_pair(&u, &mut lr, &mut sr);
        for k in 0..n {
            let v = u[k];
            prop_assert!(same_class(ls[k], lr[k]) && same_class(s[k], sr[k]), "u = {v}: ({}, {}) vs ({}, {})", ls[k], s[k], lr[k], sr[k]);
            // One e^{−|u|} within 2 ulps, then a division and a short series: 4 ulps
            // relative (absolute below the normal floats, where σ(−u) underflows).
            if lr[k].is_finite() {
                prop_assert!((ls[k] - lr[k]).abs() <= 4.0 * f32::EPSILON * lr[k].abs() + 1e-44, "u = {v}: {} vs {}", ls[k], lr[k]);
                prop_assert!(ls[k] <= 0.0, "u = {v}: ln σ = {}", ls[k]);
            }
            if sr[k].is_finite() {
                prop_assert!((s[k] - sr[k]).abs() <= 4.0 * f32::EPSILON * sr[k].abs() + 1e-38, "u = {v}: {} vs {}", s[k], sr[k]);
                prop_assert!((0.0..=1.0).contains(&s[k]));
            }
        }
    }

    #[test]
    fn f64_kernels_match_twin(
        (a, b) in (0..=MAX_LEN).prop_flat_map(|n| (
            prop::collection::vec(-1e3f64..1e3, n),
            prop::collection::vec(-1e3f64..1e3, n),
        )),
        alpha in -10.0f64..10.0,
    ) {
        // Both within γₙ·Σ|aᵢbᵢ| of the exact sum (f64 unit roundoff).
        let u = f64::EPSILON / 2.0;
        let abs: f64 = a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum();
        let tol = 2.0 * (a.len() + 1) as f64 * u * abs + 1e-300;
        let (s, r) = (simd::dot_f64(&a, &b), reference::dot_f64(&a, &b));
        prop_assert!((s - r).abs() <= tol, "dot: {s} vs {r}");
        let (mut ys, mut yr) = (b.clone(), b.clone());
        simd::axpy_f64(alpha, &a, &mut ys);
        reference::axpy_f64(alpha, &a, &mut yr);
        for ((x, y), (ai, bi)) in ys.iter().zip(&yr).zip(a.iter().zip(&b)) {
            // One rounding (FMA) against two: 2u of the terms' magnitude.
            prop_assert!((x - y).abs() <= 2.0 * u * ((alpha * ai).abs() + bi.abs()) + 1e-300);
        }
    }

    #[test]
    fn multi_dots_match_twin(
        (k, len, stride, slack) in (0usize..12, 0usize..40, 0usize..48, 0usize..3),
        seed in any::<u64>(),
    ) {
        // A k-row matrix (rows `stride` apart, the last one `slack` floats short of
        // fitting when slack > 0): outputs past the fitting rows must be zero in both.
        let need = if k == 0 { 0 } else { (k - 1) * stride + len };
        let total = need.saturating_sub(slack);
        let mut g = sgld::noise::default_rng(seed);
        let mut draw = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z.into_iter().map(f64::from).collect::<Vec<f64>>()
        };
        let (rows, a) = (draw(total), draw(len));
        let u = f64::EPSILON / 2.0;
        let fit = reference::rows_that_fit(rows.len(), stride, len);
        let (mut s, mut r) = (vec![f64::NAN; k], vec![f64::NAN; k]);
        simd::dots_f64(&a, &rows, stride, &mut s);
        reference::dots_f64(&a, &rows, stride, &mut r);
        for j in 0..k {
            let abs: f64 = if j < fit {
                (0..len).map(|m| (a[m] * rows[j * stride + m]).abs()).sum()
            } else {
                0.0
            };
            let tol = 2.0 * (len + 1) as f64 * u * abs;
            prop_assert!((s[j] - r[j]).abs() <= tol, "dots j = {j}: {} vs {}", s[j], r[j]);
            if j >= fit {
                prop_assert_eq!(s[j], 0.0);
            }
        }
    }

    #[test]
    fn all_finite_matches_twin(v in prop::collection::vec(special(), 0..=MAX_LEN)) {
        prop_assert_eq!(simd::all_finite(&v), reference::all_finite(&v));
        prop_assert_eq!(simd::all_finite(&v), v.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn dot_with_huge_values_is_exact_where_representable() {
    // 1e19·1e19 = 1e38 is below f32::MAX: no overflow in either twin.
    let a = [1e19f32; 3];
    let b = [1e19f32, -1e19, 1e19];
    assert!((simd::dot(&a, &b) - 1e38).abs() <= 1e38 * 1e-6);
    assert!((reference::dot(&a, &b) - 1e38).abs() <= 1e38 * 1e-6);
}

#[test]
fn unequal_lengths_use_the_common_prefix() {
    let a = [1.0f32; 20];
    let b = [2.0f32; 17];
    assert_eq!(simd::dot(&a, &b), 34.0);
    assert_eq!(reference::dot(&a, &b), 34.0);
    assert!(sgld::kernels::dot(&a, &b).is_err());
}

/// A float's bits, so that results compare exactly (and a NaN equals itself).
trait Bits: Copy {
    fn bits(self) -> u64;
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

fn bits<T: Bits>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.bits()).collect()
}

/// `v` whole (`None`) or cut to its first `n` values (`Some(n)`, `n` at most its length).
fn cut<T>(v: &[T], n: Option<usize>) -> &[T] {
    &v[..n.unwrap_or(v.len())]
}

/// `run(out, None)`, a kernel on its whole operands, against `run(&mut out[..n],
/// Some(n))`, the same kernel on its operands cut to their common length `n`: the same
/// values on the prefix, bit for bit, and nothing written past it.
fn same_as_prefix<T: Bits>(
    what: &str,
    out: &[T],
    n: usize,
    run: impl Fn(&mut [T], Option<usize>),
) -> Result<(), TestCaseError> {
    let n = n.min(out.len());
    let mut full = out.to_vec();
    run(&mut full, None);
    let mut prefix = out[..n].to_vec();
    run(&mut prefix, Some(n));
    prop_assert_eq!(
        bits(&full[..n]),
        bits(&prefix),
        "{}: the common prefix",
        what
    );
    prop_assert_eq!(
        bits(&full[n..]),
        bits(&out[n..]),
        "{}: past the prefix",
        what
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// The element-wise kernels and the reductions, each twin, on operands of
    /// independent lengths work on the common prefix, as the module's contract says.
    /// (The vector kernels step through their operands in whole vectors: unless the
    /// operands are cut first, each one's remainder starts at a different element.)
    #[test]
    fn elementwise_kernels_work_on_the_common_prefix(
        a in prop::collection::vec(finite(), 0..=MAX_LEN),
        b in prop::collection::vec(finite(), 0..=MAX_LEN),
        c in prop::collection::vec(finite(), 0..=MAX_LEN),
        m in prop::collection::vec(finite(), 0..=MAX_LEN),
        (alpha, h, s) in (finite(), -1.0f32..1.0, 0.0f32..1.0),
    ) {
        let m: Vec<f32> = m.iter().map(|v| v.abs()).collect();
        let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let (a64, b64) = (wide(&a), wide(&b));
        let al = f64::from(alpha);
        let n2 = a.len().min(b.len());
        let n3 = n2.min(c.len());
        let n4 = n3.min(m.len());
        // y ← y + α·x and out ← f(in), with `a` in and `b` out.
        same_as_prefix("simd::axpy", &b, n2, |y, n| simd::axpy(alpha, cut(&a, n), y))?;
        same_as_prefix("reference::axpy", &b, n2, |y, n| reference::axpy(alpha, cut(&a, n), y))?;
        same_as_prefix("simd::axpy_f64", &b64, n2, |y, n| simd::axpy_f64(al, cut(&a64, n), y))?;
        same_as_prefix("reference::axpy_f64", &b64, n2, |y, n| {
            reference::axpy_f64(al, cut(&a64, n), y)
        })?;
        same_as_prefix("simd::sigmoid", &b, n2, |o, n| simd::sigmoid(cut(&a, n), o))?;
        same_as_prefix("reference::sigmoid", &b, n2, |o, n| reference::sigmoid(cut(&a, n), o))?;
        same_as_prefix("simd::log_sigmoid_pair", &b, n2, |o, n| {
            let mut s = vec![0.0f32; o.len()];
            simd::log_sigmoid_pair(cut(&a, n), o, &mut s)
        })?;
        same_as_prefix("reference::log_sigmoid_pair", &b, n2, |o, n| {
            let mut s = vec![0.0f32; o.len()];
            reference::log_sigmoid_pair(cut(&a, n), o, &mut s)
        })?;
        same_as_prefix("simd::tanh_half_f32", &b, n2, |o, n| simd::tanh_half_f32(cut(&a, n), o))?;
        same_as_prefix("reference::tanh_half_f32", &b, n2, |o, n| {
            reference::tanh_half_f32(cut(&a, n), o)
        })?;
        same_as_prefix("simd::tanh_half", &b64, n2, |o, n| simd::tanh_half(cut(&a64, n), o))?;
        same_as_prefix("reference::tanh_half", &b64, n2, |o, n| {
            reference::tanh_half(cut(&a64, n), o)
        })?;
        // The Langevin updates of θ = `b` by the gradient `a`, the noise `c` and the
        // preconditioner `m`, and the proposal into the noise buffer.
        same_as_prefix("simd::langevin_update", &b, n3, |t, n| {
            simd::langevin_update(t, cut(&a, n), cut(&c, n), h, s)
        })?;
        same_as_prefix("reference::langevin_update", &b, n3, |t, n| {
            reference::langevin_update(t, cut(&a, n), cut(&c, n), h, s)
        })?;
        same_as_prefix("simd::langevin_update_precond", &b, n4, |t, n| {
            simd::langevin_update_precond(t, cut(&a, n), cut(&c, n), cut(&m, n), h, s)
        })?;
        same_as_prefix("reference::langevin_update_precond", &b, n4, |t, n| {
            reference::langevin_update_precond(t, cut(&a, n), cut(&c, n), cut(&m, n), h, s)
        })?;
        same_as_prefix("simd::langevin_propose", &c, n3, |e, n| {
            simd::langevin_propose(cut(&b, n), cut(&a, n), e, h, s)
        })?;
        same_as_prefix("reference::langevin_propose", &c, n3, |e, n| {
            reference::langevin_propose(cut(&b, n), cut(&a, n), e, h, s)
        })?;
        // The checked step writes θ and the noise buffer, and reports the prefix's sums.
        type Step = fn(&mut [f32], &[f32], &mut [f32], f32, f32) -> sgld::kernels::StepCheck;
        for (what, step) in [
            ("simd", simd::langevin_step_checked as Step),
            ("four lanes", simd::langevin_step_checked_x4 as Step),
            ("reference", reference::langevin_step_checked as Step),
        ] {
            let (mut t, mut e) = (b.clone(), c.clone());
            let full = step(&mut t, &a, &mut e, h, s);
            let (mut tp, mut ep) = (b[..n3].to_vec(), c[..n3].to_vec());
            let prefix = step(&mut tp, &a[..n3], &mut ep, h, s);
            prop_assert_eq!(
                bits(&[full.noise_sq, full.grad_sq]),
                bits(&[prefix.noise_sq, prefix.grad_sq]),
                "{} step: sums", what
            );
            prop_assert_eq!(full.finite, prefix.finite, "{} step: check", what);
            prop_assert_eq!(bits(&t[..n3]), bits(&tp), "{} step: θ", what);
            prop_assert_eq!(bits(&e[..n3]), bits(&ep), "{} step: noise", what);
            prop_assert_eq!(bits(&t[n3..]), bits(&b[n3..]), "{} step: θ past the prefix", what);
            prop_assert_eq!(bits(&e[n3..]), bits(&c[n3..]), "{} step: noise past the prefix", what);
        }
        // The reductions.
        prop_assert_eq!(simd::dot(&a, &b).to_bits(), simd::dot(&a[..n2], &b[..n2]).to_bits());
        prop_assert_eq!(
            reference::dot(&a, &b).to_bits(),
            reference::dot(&a[..n2], &b[..n2]).to_bits()
        );
        prop_assert_eq!(
            simd::dot_f64(&a64, &b64).to_bits(),
            simd::dot_f64(&a64[..n2], &b64[..n2]).to_bits()
        );
        prop_assert_eq!(
            reference::dot_f64(&a64, &b64).to_bits(),
            reference::dot_f64(&a64[..n2], &b64[..n2]).to_bits()
        );
    }
}

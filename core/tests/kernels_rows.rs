//! The ICA step's matrix kernels against their scalar twins: products of rows, blocked
//! products, projections held in registers, columns, batch indices and `tanh(y/2)`.

mod kernel_props;

use kernel_props::*;
use proptest::prelude::*;
use sgld::kernels::{reference, simd};

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn row_products_match_twin(
        (ra, rb, len, extra) in (0usize..12, 0usize..12, 0usize..72, 0usize..4),
        (short_a, short_b, cols_cut) in (0usize..3, 0usize..3, 0usize..3),
        seed in any::<u64>(),
    ) {
        // A (ra rows) times Bᵀ (rb rows), rows `stride = len + extra` apart, each matrix
        // possibly a few floats short of its last row, and `cols` possibly below rb:
        // products with a row that does not fit are zero in both.
        let stride = len + extra;
        let size = |r: usize, short: usize| {
            (if r == 0 { 0 } else { (r - 1) * stride + len }).saturating_sub(short)
        };
        let mut g = sgld::noise::default_rng(seed);
        let mut draw = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z
        };
        let (a32, b32) = (draw(size(ra, short_a)), draw(size(rb, short_b)));
        let widen = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let (a, b) = (widen(&a32), widen(&b32));
        let cols = rb.saturating_sub(cols_cut).max(1);
        let (fit_a, fit_b) = (
            reference::rows_that_fit(a.len(), stride, len),
            reference::rows_that_fit(b.len(), stride, len),
        );
        let u = f64::EPSILON / 2.0;
        let (mut s, mut r) = (vec![f64::NAN; ra * cols], vec![f64::NAN; ra * cols]);
        simd::dots_rows_f64(&a, &b, stride, len, &mut s, cols);
        reference::dots_rows_f64(&a, &b, stride, len, &mut r, cols);
        for i in 0..ra {
            for k in 0..cols {
                let (x, y) = (s[i * cols + k], r[i * cols + k]);
                if i >= fit_a || k >= fit_b {
                    prop_assert!(x == 0.0 && y == 0.0, "{i},{k} does not fit: {x} / {y}");
                    continue;
                }
                let abs: f64 = (0..len)
                    .map(|m| (a[i * stride + m] * b[k * stride + m]).abs())
                    .sum();
                let tol = 2.0 * (len + 1) as f64 * u * abs;
                prop_assert!((x - y).abs() <= tol, "{i},{k}: {x} vs {y}");
            }
        }
        // f32 rows: each product is exact in f64, so both twins give the f64 results of
        // the widened rows bit for bit.
        let (mut s32, mut r32) = (vec![f64::NAN; ra * cols], vec![f64::NAN; ra * cols]);
        simd::dots_rows_f32(&a32, &b32, stride, len, &mut s32, cols);
        reference::dots_rows_f32(&a32, &b32, stride, len, &mut r32, cols);
        prop_assert_eq!(&s32, &s);
        prop_assert_eq!(&r32, &r);
        // Sixteen f32 lanes: the twins bit for bit, and within the lanes' rounding of
        // the f64 sums: k = ⌈len/16⌉ multiply-adds a lane and four levels of adds, each a
        // relative 2⁻²⁴ of the magnitudes it sums (γ_{k+4} in f32), plus the f64 sums' own.
        let (mut sl, mut rl) = (vec![f64::NAN; ra * cols], vec![f64::NAN; ra * cols]);
        simd::dots_rows_f32_lanes(&a32, &b32, stride, len, &mut sl, cols);
        reference::dots_rows_f32_lanes(&a32, &b32, stride, len, &mut rl, cols);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&sl), bits(&rl));
        let k = (len.div_ceil(16) + 4) as f64 * f64::from(f32::EPSILON) / 2.0;
        for i in 0..ra {
            for c in 0..cols {
                let (x, y) = (sl[i * cols + c], s[i * cols + c]);
                if i >= fit_a || c >= fit_b {
                    prop_assert_eq!(x, 0.0);
                    continue;
                }
                let abs: f64 = (0..len)
                    .map(|m| (a[i * stride + m] * b[c * stride + m]).abs())
                    .sum();
                let tol = (k / (1.0 - k) + 2.0 * (len + 1) as f64 * u) * abs;
                prop_assert!((x - y).abs() <= tol, "lanes {i},{c}: {x} vs {y}");
            }
        }
        // Each product is summed as dots_f64 sums it.
        if ra > 0 && fit_a > 0 && fit_b >= cols {
            let mut d = vec![0.0f64; cols];
            simd::dots_f64(&a[..len], &b, stride, &mut d);
            prop_assert_eq!(&d[..], &s[..cols]);
        }
    }

    #[test]
    fn project_rows_matches_twin_and_columns_then_gemm(
        d in 0usize..20,
        (long, stride_extra, short) in (0usize..3, 0usize..12, 0usize..3),
        (short_row, short_w) in (0usize..9, 0usize..2),
        seed in any::<u64>(),
    ) {
        // W (d × d) times eight rows of d values (a row may be longer, or one short),
        // channel-major `stride` apart; an output, W or a row too short writes nothing.
        let mut g = sgld::noise::default_rng(seed);
        let mut normals = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z
        };
        let w = normals((d * d).saturating_sub(short_w));
        let data: Vec<Vec<f32>> = (0..8)
            .map(|q| normals(if q == short_row { d.saturating_sub(1) } else { d + long }))
            .collect();
        let rows: [&[f32]; 8] = core::array::from_fn(|q| data[q].as_slice());
        let stride = 8 + stride_extra;
        let n_out = (d.saturating_sub(1) * stride + 8).saturating_sub(short);
        let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
        simd::project_rows_f32(&w, d, &rows, &mut s, stride);
        reference::project_rows_f32(&w, d, &rows, &mut r, stride);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&s), bits(&r));
        let fits = reference::project_rows_fit(w.len(), d, &rows, n_out, stride);
        prop_assert_eq!(fits, d > 0 && short == 0 && short_w == 0 && short_row == 8);
        if fits {
            // The same numbers as the rows turned into columns and then one product.
            let mut xt = vec![0.0f32; d * stride];
            simd::columns_f32(&rows, &mut xt, stride);
            let mut y = vec![f32::NAN; d * stride];
            simd::gemm_f32(&w, &xt, &mut y, d, d, stride);
            for i in 0..d {
                let at = i * stride..i * stride + 8;
                prop_assert_eq!(bits(&s[at.clone()]), bits(&y[at]));
            }
        } else {
            prop_assert!(s.iter().all(|x| x.is_nan()));
        }
    }

    #[test]
    fn project_batch_matches_twin_and_groups_of_rows(
        d in 0usize..20,
        n in 0usize..40,
        (stride_extra, short_out, short_w) in (0usize..10, 0usize..2, 0usize..2),
        (outside, seed) in (0usize..3, any::<u64>()),
    ) {
        // W (d × d) times n rows of a 50-row matrix at random offsets (one or two of them
        // past its end, which read as zeros), channel-major `stride` apart with zeros past
        // the last row; an output, a stride or a W too short writes nothing.
        let mut g = sgld::noise::default_rng(seed);
        let mut normals = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z
        };
        let w = normals((d * d).saturating_sub(short_w));
        let x = normals(50 * d);
        let mut at: Vec<usize> = (0..n).map(|j| (j * 37 + seed as usize % 50) % 50 * d).collect();
        for j in 0..outside.min(n) {
            at[(j * 7) % n] = if j == 0 { 50 * d } else { usize::MAX - d / 2 };
        }
        let end = n.next_multiple_of(8);
        let stride = (end + stride_extra).saturating_sub(short_out * (stride_extra + 1));
        let n_out = d * stride;
        let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
        simd::project_batch_f32(&w, d, &x, &at, &mut s, stride);
        reference::project_batch_f32(&w, d, &x, &at, &mut r, stride);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&s), bits(&r));
        let fits = reference::project_batch_fit(w.len(), d, n, n_out, stride);
        prop_assert_eq!(fits, d > 0 && short_w == 0 && stride >= end);
        if !fits {
            prop_assert!(s.iter().all(|x| x.is_nan()));
            return Ok(());
        }
        // Group by group, what project_rows_f32 writes for the same eight rows (the
        // missing and outside ones as zero rows), and zeros past the last row.
        let zero = vec![0.0f32; d];
        for (k, group) in at.chunks(8).enumerate() {
            let rows: [&[f32]; 8] = core::array::from_fn(|q| {
                group.get(q).and_then(|&a| x.get(a..a.checked_add(d)?)).unwrap_or(&zero)
            });
            let mut y = vec![f32::NAN; d.saturating_sub(1) * stride + 8];
            simd::project_rows_f32(&w, d, &rows, &mut y, stride);
            for i in 0..d {
                let (o, q) = (i * stride + 8 * k, i * stride);
                let m = 8.min(stride - 8 * k);
                prop_assert_eq!(bits(&s[o..o + m]), bits(&y[q..q + m]));
            }
        }
        for i in 0..d {
            prop_assert!(s[i * stride + n..(i + 1) * stride].iter().all(|&v| v == 0.0));
        }
    }

    #[test]
    fn project_batch_tanh_is_the_projection_then_tanh(
        d in 1usize..20,
        n in 0usize..40,
        (scale, short_t, seed) in (prop_oneof![Just(1.0f32), Just(30.0), Just(f32::INFINITY)], 0usize..2, any::<u64>()),
    ) {
        // The fused kernel writes what project_batch_f32 and then tanh_half_f32 write,
        // bit for bit (SIMD) and by the twins' own path (reference), including the
        // zeros past the last row, large sums (tanh ±1) and non-finite W; with `t`
        // shorter than `y` it writes nothing.
        let mut g = sgld::noise::default_rng(seed);
        let mut normals = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z
        };
        let w: Vec<f32> = normals(d * d).iter().map(|v| v * scale).collect();
        let x = normals(50 * d);
        let at: Vec<usize> = (0..n).map(|j| (j * 37 + seed as usize % 50) % 50 * d).collect();
        let stride = n.next_multiple_of(8) + (seed % 3) as usize;
        let len = d * stride;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (fused, separate) in [
            (
                simd::project_batch_tanh_f32 as fn(&[f32], usize, &[f32], &[usize], &mut [f32], &mut [f32], usize),
                (simd::project_batch_f32 as fn(&[f32], usize, &[f32], &[usize], &mut [f32], usize), simd::tanh_half_f32 as fn(&[f32], &mut [f32])),
            ),
            (
                reference::project_batch_tanh_f32,
                (reference::project_batch_f32, reference::tanh_half_f32),
            ),
        ] {
            let (mut y, mut t) = (vec![f32::NAN; len], vec![f32::NAN; len + short_t]);
            fused(&w, d, &x, &at, &mut y, &mut t, stride);
            if short_t == 1 {
                prop_assert!(y.iter().chain(&t).all(|v| v.is_nan()));
                continue;
            }
            let (mut ye, mut te) = (vec![f32::NAN; len], vec![f32::NAN; len]);
            separate.0(&w, d, &x, &at, &mut ye, stride);
            separate.1(&ye, &mut te);
            prop_assert_eq!(bits(&y), bits(&ye));
            prop_assert_eq!(bits(&t), bits(&te));
        }
    }

    #[test]
    fn line_indices_match_twin(
        line in proptest::array::uniform32(any::<u16>()),
        n in prop_oneof![1u32..100, any::<u32>(), (1u32 << 31)..=u32::MAX],
    ) {
        // Sixteen halves to indices: the same answer from both twins, the indices
        // ⌊h·n/2³²⌋ in order when no low half is below n, nothing written otherwise.
        let bytes: [u8; 64] = core::array::from_fn(|k| (line[k / 2] >> (8 * (k % 2))) as u8);
        let (mut s, mut r) = ([usize::MAX; 16], [usize::MAX; 16]);
        let (ok_s, ok_r) = (
            simd::line_indices_u32(&bytes, n, &mut s),
            reference::line_indices_u32(&bytes, n, &mut r),
        );
        prop_assert_eq!(ok_s, ok_r);
        prop_assert_eq!(s, r);
        let h = |j: usize| u64::from(u32::from_le_bytes(bytes[4 * j..4 * j + 4].try_into().unwrap()));
        let low = (0..16).any(|j| ((h(j) * u64::from(n)) as u32) < n);
        prop_assert_eq!(ok_s, !low);
        for (j, &i) in s.iter().enumerate() {
            let expected = if low { usize::MAX } else { ((h(j) * u64::from(n)) >> 32) as usize };
            prop_assert_eq!(i, expected, "index {}", j);
        }
    }

    #[test]
    fn columns_match_twin(
        lens in proptest::array::uniform8(0usize..40),
        (stride, short) in (0usize..48, 0usize..12),
        seed in any::<u64>(),
    ) {
        // Eight rows of mixed lengths written as columns `stride` apart into an output
        // that may be too short for the last few columns: both write exactly the same
        // values to exactly the same slots (the conversion to f64 is exact).
        let mut g = sgld::noise::default_rng(seed);
        let data: Vec<Vec<f32>> = lens
            .iter()
            .map(|&n| {
                let mut z = vec![0.0f32; n];
                sgld::noise::fill_normal(&mut g, &mut z);
                z
            })
            .collect();
        let rows: [&[f32]; 8] = core::array::from_fn(|q| data[q].as_slice());
        let d = lens.iter().copied().min().unwrap_or(0);
        let n_out = (d.saturating_sub(1) * stride + 8).saturating_sub(short);
        let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
        simd::columns_f64(&rows, &mut s, stride);
        reference::columns_f64(&rows, &mut r, stride);
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        prop_assert!(s.iter().zip(&r).all(|(&a, &b)| same(a, b)), "{s:?} vs {r:?}");
        let written = reference::columns_that_fit(&rows, n_out, stride);
        // Slots of different columns overlap when stride < 8 (a later column wins).
        for k in (0..written).filter(|_| stride >= 8) {
            for q in 0..8 {
                prop_assert_eq!(r[k * stride + q], rows[q][k] as f64);
            }
        }
        if short == 0 || d == 0 {
            prop_assert_eq!(written, d);
        }
        // Into f32: the same slots, the same values.
        let (mut s32, mut r32) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
        simd::columns_f32(&rows, &mut s32, stride);
        reference::columns_f32(&rows, &mut r32, stride);
        for ((a, b), c) in s32.iter().zip(&r32).zip(&r) {
            prop_assert!(same(f64::from(*a), *c) && same(f64::from(*b), *c), "{a} / {b} vs {c}");
        }
    }

    #[test]
    fn gemm_matches_twin(
        (rows, inner, cols) in (0usize..23, 0usize..12, 0usize..80),
        (short_a, short_b, short_out) in (0usize..3, 0usize..3, 0usize..3),
        seed in any::<u64>(),
    ) {
        // Operands sometimes a few floats short: the rows (or the whole product) that
        // do not fit must be left alone by both.
        let mut g = sgld::noise::default_rng(seed);
        let mut draw = |n: usize| {
            let mut z = vec![0.0f32; n];
            sgld::noise::fill_normal(&mut g, &mut z);
            z
        };
        let (a32, b32) = (
            draw((rows * inner).saturating_sub(short_a)),
            draw((inner * cols).saturating_sub(short_b)),
        );
        let widen = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let (a, b) = (widen(&a32), widen(&b32));
        let n_out = (rows * cols).saturating_sub(short_out);
        let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
        simd::gemm_f64(&a, &b, &mut s, rows, inner, cols);
        reference::gemm_f64(&a, &b, &mut r, rows, inner, cols);
        let u = f64::EPSILON / 2.0;
        for (k, (x, y)) in s.iter().zip(&r).enumerate() {
            if y.is_nan() {
                prop_assert!(x.is_nan(), "out[{k}] written by SIMD only: {x}");
                continue;
            }
            let (i, j) = (k / cols, k % cols);
            let abs: f64 = (0..inner).map(|q| (a[i * inner + q] * b[q * cols + j]).abs()).sum();
            let tol = 2.0 * (inner + 1) as f64 * u * abs;
            prop_assert!((x - y).abs() <= tol, "out[{i}][{j}]: {x} vs {y}");
        }
        // In f32: the same slots written, each within the f32 bound of the f64 product.
        let (mut s32, mut r32) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
        simd::gemm_f32(&a32, &b32, &mut s32, rows, inner, cols);
        reference::gemm_f32(&a32, &b32, &mut r32, rows, inner, cols);
        let u32 = f64::from(f32::EPSILON) / 2.0;
        for (k, ((x, y), z)) in s32.iter().zip(&r32).zip(&r).enumerate() {
            prop_assert_eq!(x.is_nan(), z.is_nan(), "out[{}] written by one side only", k);
            prop_assert_eq!(y.is_nan(), z.is_nan(), "out[{}] written by one side only", k);
            if z.is_nan() {
                continue;
            }
            let (i, j) = (k / cols, k % cols);
            let abs: f64 = (0..inner).map(|q| (a[i * inner + q] * b[q * cols + j]).abs()).sum();
            let tol = (inner + 1) as f64 * u32 * abs + 4.0 * u * abs;
            for v in [x, y] {
                prop_assert!((f64::from(*v) - z).abs() <= tol, "out[{i}][{j}]: {v} vs {z}");
            }
        }
        // A column of the SIMD product does not depend on how many columns there are:
        // column 0 alone gives the same values bit for bit.
        let fits = rows * inner <= a32.len() && inner * cols <= b32.len() && rows * cols <= n_out;
        if fits && cols > 0 {
            let b0: Vec<f32> = (0..inner).map(|q| b32[q * cols]).collect();
            let mut one = vec![f32::NAN; rows];
            simd::gemm_f32(&a32, &b0, &mut one, rows, inner, 1);
            for i in 0..rows {
                prop_assert_eq!(one[i].to_bits(), s32[i * cols].to_bits(), "row {}", i);
            }
        }
    }

    #[test]
    fn mul_left_checked_is_the_product_when_finite_and_nothing_otherwise(
        (n, cols) in (0usize..13, 0usize..20),
        (short_a, short_b, short_tmp) in (0usize..2, 0usize..2, 0usize..2),
        blow_up in prop::option::of((any::<bool>(), any::<prop::sample::Index>(), prop_oneof![
            Just(f64::NAN), Just(f64::INFINITY), Just(f64::MAX),
        ])),
        seed in any::<u64>(),
    ) {
        let mut g = sgld::noise::default_rng(seed);
        let mut draw = |len: usize| {
            let mut z = vec![0.0f32; len];
            sgld::noise::fill_normal(&mut g, &mut z);
            z.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>()
        };
        let mut a = draw((n * n).saturating_sub(short_a));
        let mut b = draw((n * cols).saturating_sub(short_b));
        // One entry of `a` or `b` NaN or ∞, or so large that the product may overflow:
        // in `a` that spoils a row of the product, in `b` a column (so the second
        // vector of a row can be the only one that is not finite).
        if let Some((in_a, at, v)) = blow_up {
            let m = if in_a { &mut a } else { &mut b };
            if !m.is_empty() {
                let i = at.index(m.len());
                m[i] = v;
            }
        }
        let fits = a.len() >= n * n && b.len() >= n * cols;
        let tmp_len = (n * cols).saturating_sub(short_tmp);
        let mut product = vec![0.0; n * cols];
        if fits {
            simd::gemm_f64(&a, &b, &mut product, n, n, cols);
        }
        let finite = product.iter().all(|v| v.is_finite());
        let expect = fits && tmp_len >= n * cols && finite;
        for simd_side in [true, false] {
            let (mut bs, mut tmp) = (b.clone(), vec![f64::NAN; tmp_len]);
            let ok = if simd_side {
                simd::mul_left_checked_f64(&a, &mut bs, &mut tmp, n, cols)
            } else {
                reference::mul_left_checked_f64(&a, &mut bs, &mut tmp, n, cols)
            };
            prop_assert_eq!(ok, expect, "simd: {}", simd_side);
            if !ok {
                prop_assert!(
                    bs.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "simd: {}: b changed", simd_side
                );
                continue;
            }
            for (k, (x, y)) in bs.iter().zip(&product).enumerate() {
                if simd_side {
                    // gemm_f64's entries, bit for bit.
                    prop_assert_eq!(x.to_bits(), y.to_bits(), "b[{}]: {} vs {}", k, x, y);
                } else {
                    let (i, j) = (k / cols, k % cols);
                    let abs: f64 = (0..n).map(|q| (a[i * n + q] * b[q * cols + j]).abs()).sum();
                    let tol = 2.0 * (n + 1) as f64 * (f64::EPSILON / 2.0) * abs;
                    prop_assert!((x - y).abs() <= tol, "b[{}][{}]: {} vs {}", i, j, x, y);
                }
            }
        }
    }

    #[test]
    fn tanh_half_matches_twin(y in prop::collection::vec(prop_oneof![
        8 => -40.0f64..40.0,
        2 => -1e-6f64..1e-6,
        2 => -2000.0f64..2000.0,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0f64),
    ], 0..=MAX_LEN)) {
        let (mut s, mut r) = (vec![0.0f64; y.len()], vec![0.0f64; y.len()]);
        simd::tanh_half(&y, &mut s);
        reference::tanh_half(&y, &mut r);
        for ((x, t), v) in s.iter().zip(&r).zip(&y) {
            if v.is_nan() {
                prop_assert!(x.is_nan() && t.is_nan());
            } else {
                prop_assert!((x - t).abs() <= 4.0 * f64::EPSILON, "y = {v}: {x} vs {t}");
            }
        }
    }

    #[test]
    fn tanh_half_f32_matches_twin(y in prop::collection::vec(prop_oneof![
        8 => -40.0f32..40.0,
        2 => -1e-6f32..1e-6,
        2 => -2000.0f32..2000.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(0.0f32),
    ], 0..=MAX_LEN)) {
        let (mut s, mut r) = (vec![0.0f32; y.len()], vec![0.0f32; y.len()]);
        simd::tanh_half_f32(&y, &mut s);
        reference::tanh_half_f32(&y, &mut r);
        for ((x, t), v) in s.iter().zip(&r).zip(&y) {
            if v.is_nan() {
                prop_assert!(x.is_nan() && t.is_nan());
            } else {
                prop_assert!((x - t).abs() <= 4.0 * f32::EPSILON, "y = {v}: {x} vs {t}");
            }
        }
    }

}

#[test]
fn tanh_half_is_within_four_epsilon_on_a_dense_grid() {
    // Every table entry and every part of the reduced range, near 0 (where tanh(y/2)
    // ≈ y/2 and the subtraction 1 − t cancels), and past the cap at |y| = 40.
    let grid =
        |lo: f64, hi: f64, n: usize| (0..=n).map(move |i| lo + (hi - lo) * i as f64 / n as f64);
    let y: Vec<f64> = grid(-45.0, 45.0, 400_000)
        .chain(grid(-1e-3, 1e-3, 20_000))
        .chain(grid(-3.0, 3.0, 100_001))
        .collect();
    let (mut s, mut r) = (vec![0.0f64; y.len()], vec![0.0f64; y.len()]);
    simd::tanh_half(&y, &mut s);
    reference::tanh_half(&y, &mut r);
    for ((v, x), t) in y.iter().zip(&s).zip(&r) {
        let exact = (0.5 * v).tanh();
        assert!(
            (x - exact).abs() <= 4.0 * f64::EPSILON,
            "y = {v}: {x} vs {exact}"
        );
        assert!(
            (t - exact).abs() <= 4.0 * f64::EPSILON,
            "twin, y = {v}: {t} vs {exact}"
        );
    }
}

#[test]
fn tanh_half_f32_is_within_four_epsilon_on_a_dense_grid() {
    // As for f64: every table entry and part of the reduced range, near 0, past the cap.
    let grid = |lo: f64, hi: f64, n: usize| {
        (0..=n).map(move |i| (lo + (hi - lo) * i as f64 / n as f64) as f32)
    };
    let y: Vec<f32> = grid(-45.0, 45.0, 400_000)
        .chain(grid(-1e-3, 1e-3, 20_000))
        .chain(grid(-3.0, 3.0, 100_001))
        .collect();
    let (mut s, mut r) = (vec![0.0f32; y.len()], vec![0.0f32; y.len()]);
    simd::tanh_half_f32(&y, &mut s);
    reference::tanh_half_f32(&y, &mut r);
    let tol = 4.0 * f64::from(f32::EPSILON);
    for ((v, x), t) in y.iter().zip(&s).zip(&r) {
        let exact = (0.5 * f64::from(*v)).tanh();
        assert!(
            (f64::from(*x) - exact).abs() <= tol,
            "y = {v}: {x} vs {exact}"
        );
        assert!(
            (f64::from(*t) - exact).abs() <= tol,
            "twin, y = {v}: {t} vs {exact}"
        );
    }
}

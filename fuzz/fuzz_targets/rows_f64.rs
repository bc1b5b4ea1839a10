//! The matrix kernels `simd::dots_f64`, `simd::dots_rows_f64`, `simd::gemm_f64`,
//! `simd::columns_f64`, their f32 versions (the ICA gradient's data path),
//! `simd::project_rows_f32`, `simd::project_batch_f32` (and fused with `tanh`),
//! `simd::tanh_half_f32` and `simd::mul_left_checked_f64`: never
//! panic for any operands, strides and shapes; agree with their scalar twins within γₖ
//! of the terms where the input is moderate (columns, the projections and the f32 row
//! products: exactly); skip (gemm, columns, the projections) or zero (dots, dots_rows)
//! the rows that do not fit.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use common::identical;
use libfuzzer_sys::fuzz_target;
use sgld::kernels::{reference, simd};

fuzz_target!(|input: (Vec<f64>, Vec<f64>, u8, u8)| {
    let (coef, rows, stride, len) = input;
    let (stride, len) = (stride as usize % 64, len as usize % 48);
    let a: Vec<f64> = coef.iter().copied().cycle().take(len).collect();
    let fit = reference::rows_that_fit(rows.len(), stride, len);
    let moderate = |v: &[f64]| v.iter().all(|x| x.is_finite() && x.abs() < 1e100);
    let u = f64::EPSILON / 2.0;

    // gemm: shapes from the stride and length bytes; `out` may be short by a few.
    let (gr, gi, gc) = (stride % 11, len % 13, (stride / 11 + len / 13) % 40);
    let n_out = (gr * gc).saturating_sub(coef.len() % 3);
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::gemm_f64(&coef, &rows, &mut s, gr, gi, gc);
    reference::gemm_f64(&coef, &rows, &mut r, gr, gi, gc);
    if moderate(&coef) && moderate(&rows) {
        for (k, (x, y)) in s.iter().zip(&r).enumerate() {
            if y.is_nan() {
                assert!(x.is_nan(), "gemm out[{k}] written by SIMD only");
                continue;
            }
            let (i, j) = (k / gc, k % gc);
            let abs: f64 = (0..gi)
                .map(|q| (coef[i * gi + q] * rows[q * gc + j]).abs())
                .sum();
            let tol = 2.0 * (gi + 1) as f64 * u * abs;
            assert!((x - y).abs() <= tol, "gemm {i},{j}: {x} vs {y}");
        }
    }

    // b ← a·b for a of n × n (the coefficients) and b of n × cols (the rows), each
    // maybe short, as is the scratch: both twins accept the same operands, and then
    // the SIMD kernel writes gemm's entries bit for bit when they are all finite and
    // leaves b as it was otherwise.
    let (n, cols) = (stride % 13, len % 20);
    let tmp_len = (n * cols).saturating_sub(usize::from(coef.len() % 9 == 0));
    let fits = coef.len() >= n * n && rows.len() >= n * cols && tmp_len >= n * cols;
    let mut product = vec![0.0; n * cols];
    if fits {
        simd::gemm_f64(&coef, &rows, &mut product, n, n, cols);
    }
    let finite = fits && product.iter().all(|v| v.is_finite());
    let (mut bs, mut br) = (rows.clone(), rows.clone());
    let ok_s = simd::mul_left_checked_f64(&coef, &mut bs, &mut vec![0.0; tmp_len], n, cols);
    let ok_r = reference::mul_left_checked_f64(&coef, &mut br, &mut vec![0.0; tmp_len], n, cols);
    assert_eq!(
        ok_s, finite,
        "mul_left_checked_f64: {ok_s} for a product finite: {finite}"
    );
    if ok_s {
        assert!(
            identical(&bs[..n * cols], &product),
            "mul_left_checked_f64 differs from gemm_f64"
        );
        assert!(identical(&bs[n * cols..], &rows[n * cols..]));
    } else {
        assert!(identical(&bs, &rows), "b changed");
    }
    // The twin: the same answer where the product is moderate (its own sums, within
    // the rounding of n products), b untouched where it refuses.
    if moderate(&coef) && moderate(&rows) && product.iter().all(|v| v.abs() < 1e300) {
        assert_eq!(ok_r, ok_s, "mul_left_checked_f64 twins disagree");
    }
    if !ok_r {
        assert!(identical(&br, &rows), "twin changed b");
    }

    let n_out = coef.len() % 70;
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::dots_f64(&a, &rows, stride, &mut s);
    reference::dots_f64(&a, &rows, stride, &mut r);
    for j in fit.min(n_out)..n_out {
        assert!(
            s[j] == 0.0 && r[j] == 0.0,
            "row {j} does not fit but gave {} / {}",
            s[j],
            r[j]
        );
    }
    if moderate(&a) && moderate(&rows) {
        for j in 0..fit.min(n_out) {
            let abs: f64 = (0..len).map(|m| (a[m] * rows[j * stride + m]).abs()).sum();
            let tol = 2.0 * (len + 1) as f64 * u * abs;
            assert!(
                (s[j] - r[j]).abs() <= tol,
                "dots j = {j}: {} vs {}",
                s[j],
                r[j]
            );
        }
    }

    // dots_rows: A = coef and B = rows, rows `stride` apart, `cols` from the lengths.
    let cols = 1 + (coef.len() + rows.len()) % 12;
    let n_out = cols * (1 + rows.len() % 5);
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::dots_rows_f64(&coef, &rows, stride, len, &mut s, cols);
    reference::dots_rows_f64(&coef, &rows, stride, len, &mut r, cols);
    let fit_a = reference::rows_that_fit(coef.len(), stride, len);
    for (k, (x, y)) in s.iter().zip(&r).enumerate() {
        let (i, j) = (k / cols, k % cols);
        if i >= fit_a || j >= fit {
            assert!(
                *x == 0.0 && *y == 0.0,
                "dots_rows {i},{j} does not fit: {x} / {y}"
            );
        } else if moderate(&coef) && moderate(&rows) {
            let abs: f64 = (0..len)
                .map(|m| (coef[i * stride + m] * rows[j * stride + m]).abs())
                .sum();
            let tol = 2.0 * (len + 1) as f64 * u * abs;
            assert!((x - y).abs() <= tol, "dots_rows {i},{j}: {x} vs {y}");
        }
    }

    // columns: eight rows cut from `rows` (as f32) at lengths from the coefficients.
    let flat: Vec<f32> = rows.iter().map(|&v| v as f32).collect();
    let eight: [&[f32]; 8] = core::array::from_fn(|q| {
        let start = (q * len).min(flat.len());
        let n = coef.get(q).map_or(len, |c| (c.abs() as usize).min(len));
        &flat[start..(start + n).min(flat.len())]
    });
    let n_out = len * stride.max(1);
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::columns_f64(&eight, &mut s, stride);
    reference::columns_f64(&eight, &mut r, stride);
    for (k, (x, y)) in s.iter().zip(&r).enumerate() {
        assert!(x.to_bits() == y.to_bits(), "columns slot {k}: {x} vs {y}");
    }

    // The f32 versions on the same operands rounded to f32.
    let (c32, r32): (Vec<f32>, Vec<f32>) = (
        coef.iter().map(|&v| v as f32).collect(),
        rows.iter().map(|&v| v as f32).collect(),
    );
    let (w32, wr32): (Vec<f64>, Vec<f64>) = (
        c32.iter().map(|&v| f64::from(v)).collect(),
        r32.iter().map(|&v| f64::from(v)).collect(),
    );
    let n_out = cols * (1 + rows.len() % 5);
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::dots_rows_f32(&c32, &r32, stride, len, &mut s, cols);
    reference::dots_rows_f32(&c32, &r32, stride, len, &mut r, cols);
    let (mut s64, mut r64) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::dots_rows_f64(&w32, &wr32, stride, len, &mut s64, cols);
    reference::dots_rows_f64(&w32, &wr32, stride, len, &mut r64, cols);
    // (NaN payloads may differ.)
    let same = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    };
    assert!(
        same(&s, &s64) && same(&r, &r64),
        "dots_rows_f32 differs from f64"
    );
    // In sixteen f32 lanes: the twins value for value.
    let (mut s, mut r) = (vec![f64::NAN; n_out], vec![f64::NAN; n_out]);
    simd::dots_rows_f32_lanes(&c32, &r32, stride, len, &mut s, cols);
    reference::dots_rows_f32_lanes(&c32, &r32, stride, len, &mut r, cols);
    assert!(same(&s, &r), "dots_rows_f32_lanes differs from its twin");

    let (gr, gi, gc) = (stride % 11, len % 13, (stride / 11 + len / 13) % 40);
    let n_out = (gr * gc).saturating_sub(coef.len() % 3);
    let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
    simd::gemm_f32(&c32, &r32, &mut s, gr, gi, gc);
    reference::gemm_f32(&c32, &r32, &mut r, gr, gi, gc);
    if moderate(&w32) && moderate(&wr32) && w32.iter().chain(&wr32).all(|x| x.abs() < 1e15) {
        let u = f64::from(f32::EPSILON) / 2.0;
        for (k, (x, y)) in s.iter().zip(&r).enumerate() {
            assert_eq!(
                x.is_nan(),
                y.is_nan(),
                "gemm_f32 out[{k}] written by one side only"
            );
            if y.is_nan() {
                continue;
            }
            let (i, j) = (k / gc, k % gc);
            let abs: f64 = (0..gi)
                .map(|q| (w32[i * gi + q] * wr32[q * gc + j]).abs())
                .sum();
            let tol = 2.0 * (gi + 1) as f64 * u * abs;
            assert!(
                (f64::from(*x) - f64::from(*y)).abs() <= tol,
                "gemm_f32 {i},{j}: {x} vs {y}"
            );
        }
    }

    let n_out = len * stride.max(1);
    let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
    simd::columns_f32(&eight, &mut s, stride);
    reference::columns_f32(&eight, &mut r, stride);
    for (k, (x, y)) in s.iter().zip(&r).enumerate() {
        assert!(
            x.to_bits() == y.to_bits(),
            "columns_f32 slot {k}: {x} vs {y}"
        );
    }

    // W (d × d, from the coefficients) times the eight rows, channel-major: the twins
    // write the same bits to the same slots (NaN payloads aside), or nothing.
    let d = len % 20;
    let n_out = (d.saturating_sub(1) * stride + 8).saturating_sub(coef.len() % 3);
    let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
    simd::project_rows_f32(&c32, d, &eight, &mut s, stride);
    reference::project_rows_f32(&c32, d, &eight, &mut r, stride);
    same_bits_f32("project_rows_f32", &s, &r);

    // The same W times rows of the row values at offsets from the coefficients' bits
    // (some past the end, some overflowing), with a stride and an output that may be
    // too short: the same bits from both twins, or nothing.
    let at: Vec<usize> = coef
        .iter()
        .map(|v| (v.to_bits() as usize).rotate_left(stride as u32 % 64) % (r32.len() + 3 * d + 1))
        .chain(
            coef.first()
                .map(|v| usize::MAX - (v.to_bits() as usize % 4)),
        )
        .take(len)
        .collect();
    let stride_b = at.len().next_multiple_of(8) + stride % 5;
    let stride_b = stride_b.saturating_sub(usize::from(coef.len() % 7 == 0) * 8);
    let n_out = (d * stride_b).saturating_sub(coef.len() % 3);
    let (mut s, mut r) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
    simd::project_batch_f32(&c32, d, &r32, &at, &mut s, stride_b);
    reference::project_batch_f32(&c32, d, &r32, &at, &mut r, stride_b);
    same_bits_f32("project_batch_f32", &s, &r);

    // Fused with tanh(y/2): what the projection and then `tanh_half_f32` write, each
    // twin by its own path, on the raw values and on moderate ones (whose sums are not
    // all NaN); nothing at all when `t` is not as long as `y`.
    let calm = |v: &[f32]| -> Vec<f32> {
        v.iter()
            .map(|x| {
                if x.is_finite() {
                    x.clamp(-1e3, 1e3)
                } else {
                    0.0
                }
            })
            .collect()
    };
    let (cm, rm) = (calm(&c32), calm(&r32));
    let n_t = n_out + usize::from(coef.len() % 5 == 0);
    type Fused = fn(&[f32], usize, &[f32], &[usize], &mut [f32], &mut [f32], usize);
    type Project = fn(&[f32], usize, &[f32], &[usize], &mut [f32], usize);
    type Tanh = fn(&[f32], &mut [f32]);
    let twins = [
        (
            simd::project_batch_tanh_f32 as Fused,
            simd::project_batch_f32 as Project,
            simd::tanh_half_f32 as Tanh,
        ),
        (
            reference::project_batch_tanh_f32 as Fused,
            reference::project_batch_f32 as Project,
            reference::tanh_half_f32 as Tanh,
        ),
    ];
    for ((fused, project, tanh), (w, x)) in twins
        .into_iter()
        .flat_map(|k| [(k, (&c32, &r32)), (k, (&cm, &rm))])
    {
        let (mut y, mut t) = (vec![f32::NAN; n_out], vec![f32::NAN; n_t]);
        fused(w, d, x, &at, &mut y, &mut t, stride_b);
        if n_t != n_out {
            assert!(
                y.iter().chain(&t).all(|v| v.is_nan()),
                "fused wrote with t short"
            );
            continue;
        }
        let (mut ye, mut te) = (vec![f32::NAN; n_out], vec![f32::NAN; n_out]);
        project(w, d, x, &at, &mut ye, stride_b);
        tanh(&ye, &mut te);
        same_bits_f32("project_batch_tanh_f32 y", &y, &ye);
        same_bits_f32("project_batch_tanh_f32 t", &t, &te);
    }

    let (mut s, mut r) = (vec![0.0f32; r32.len()], vec![0.0f32; r32.len()]);
    simd::tanh_half_f32(&r32, &mut s);
    reference::tanh_half_f32(&r32, &mut r);
    for ((x, y), v) in s.iter().zip(&r).zip(&r32) {
        if v.is_nan() {
            assert!(x.is_nan() && y.is_nan(), "tanh_half_f32 of NaN: {x} / {y}");
        } else {
            assert!(
                (x - y).abs() <= 4.0 * f32::EPSILON,
                "tanh_half_f32({v}): {x} vs {y}"
            );
        }
    }
});

/// The twins wrote the same bits to every slot (NaN payloads aside).
fn same_bits_f32(kernel: &str, s: &[f32], r: &[f32]) {
    for (k, (x, y)) in s.iter().zip(r).enumerate() {
        assert!(
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            "{kernel} slot {k}: {x} vs {y}"
        );
    }
}

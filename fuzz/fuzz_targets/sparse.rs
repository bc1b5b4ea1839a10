//! Sparse binary dot and scatter-add: the checked API refuses out-of-range indices, the
//! twins agree (scatter-add bit for bit), and `u8` indices give what the same indices as
//! `u32` give. The same for rows stored as bitmaps: tables of any stride, rows past the
//! table, bits past the end of `w`.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::kernels::{self, reference, simd};

fuzz_target!(|input: (Vec<u32>, Vec<f32>, f32)| {
    let (idx, w, alpha) = input;
    let valid = idx.iter().all(|&j| (j as usize) < w.len());
    assert_eq!(kernels::sparse_dot(&idx, &w).is_ok(), valid);
    let abs: f64 = idx
        .iter()
        .filter_map(|&j| w.get(j as usize))
        .map(|v| (*v as f64).abs())
        .sum();
    let (s, r) = (simd::sparse_dot(&idx, &w), reference::sparse_dot(&idx, &w));
    assert!(
        common::close(s, r, abs, 2.0 * (idx.len() as f64 + 1.0))
            || (idx.len() + 1) as f64 * common::U >= 1.0
    );
    let (mut ys, mut yr, mut yc) = (w.clone(), w.clone(), w.clone());
    simd::sparse_axpy(alpha, &idx, &mut ys);
    reference::sparse_axpy(alpha, &idx, &mut yr);
    assert!(
        ys.iter()
            .zip(&yr)
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
    );
    assert_eq!(kernels::sparse_axpy(alpha, &idx, &mut yc).is_ok(), valid);
    if !valid {
        assert_eq!(
            yc.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    let narrow: Vec<u8> = idx.iter().map(|&j| j as u8).collect();
    let widened: Vec<u32> = narrow.iter().map(|&j| j as u32).collect();
    let bits = |v: f32| if v.is_nan() { u32::MAX } else { v.to_bits() };
    assert_eq!(
        bits(simd::sparse_dot(&narrow, &w)),
        bits(simd::sparse_dot(&widened, &w))
    );
    let (mut y8, mut y32) = (w.clone(), w.clone());
    simd::sparse_axpy(alpha, &narrow, &mut y8);
    simd::sparse_axpy(alpha, &widened, &mut y32);
    assert_eq!(
        y8.iter().map(|&v| bits(v)).collect::<Vec<_>>(),
        y32.iter().map(|&v| bits(v)).collect::<Vec<_>>()
    );

    // Bitmaps: the index words as a table of 1..=12 words a row, their low bytes as the
    // rows of a batch (some past the table), `w` as the features.
    let table: Vec<u16> = idx
        .iter()
        .flat_map(|&j| [j as u16, (j >> 16) as u16])
        .collect();
    let stride = idx.first().map_or(1, |&j| (j >> 24) as usize % 12 + 1);
    let rows: Vec<usize> = idx.iter().map(|&j| (j & 0xff) as usize % 16).collect();
    let alphas: Vec<f32> = rows.iter().map(|&i| alpha * (i as f32 - 7.5)).collect();
    let n_rows = table.len() / stride;
    let row = |i: usize| table.get(i * stride..(i + 1) * stride);
    let outside = |r: &[u16], len: usize| {
        (0..16 * r.len()).any(|j| r[j / 16] >> (j % 16) & 1 == 1 && j >= len)
    };
    let valid = table.len().is_multiple_of(stride)
        && rows
            .iter()
            .all(|&i| i < n_rows && row(i).is_some_and(|r| !outside(r, w.len())));
    let mut out = vec![0.0f32; rows.len()];
    assert_eq!(
        kernels::bitmap_dots(&table, stride, &rows, &w, &mut out).is_ok(),
        valid
    );
    let (mut ds, mut dr) = (vec![0.0f32; rows.len()], vec![0.0f32; rows.len()]);
    simd::bitmap_dots(&table, stride, &rows, &w, &mut ds);
    reference::bitmap_dots(&table, stride, &rows, &w, &mut dr);
    // The first sixteen rows as one array, zeros past the rows.
    let d16 = simd::bitmap_dots16(&table, stride, &rows, &w);
    for (k, &v) in d16.iter().enumerate() {
        assert_eq!(bits(v), bits(ds.get(k).copied().unwrap_or(0.0)));
    }
    for (k, &i) in rows.iter().enumerate() {
        let r = row(i).unwrap_or(&[]);
        let set: Vec<usize> = (0..16 * r.len())
            .filter(|&j| r[j / 16] >> (j % 16) & 1 == 1 && j < w.len())
            .collect();
        let abs: f64 = set.iter().map(|&j| (w[j] as f64).abs()).sum();
        assert!(
            common::close(ds[k], dr[k], abs, 2.0 * (set.len() as f64 + 1.0)),
            "{} vs {}",
            ds[k],
            dr[k]
        );
    }
    let (mut ys, mut yr, mut yc) = (w.clone(), w.clone(), w.clone());
    simd::bitmap_axpys(&alphas, &table, stride, &rows, &mut ys);
    reference::bitmap_axpys(&alphas, &table, stride, &rows, &mut yr);
    assert_eq!(
        ys.iter().map(|&v| bits(v)).collect::<Vec<_>>(),
        yr.iter().map(|&v| bits(v)).collect::<Vec<_>>()
    );
    assert_eq!(
        kernels::bitmap_axpys(&alphas, &table, stride, &rows, &mut yc).is_ok(),
        valid
    );
    if !valid {
        assert_eq!(
            yc.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
});

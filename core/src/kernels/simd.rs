//! The SIMD kernels, written with `wide::f32x16`.
//!
//! Each function here has a scalar twin of the same name in [`super::reference`]; tests
//! and fuzz targets compare the two. Like the twins, these functions trust their
//! input: where slices differ in length they work on the common prefix, and out-of-range
//! sparse indices are skipped, so they never panic. The checked entry points are in
//! [`crate::kernels`].
//!
//! Layout of the dense kernels: a body of four independent vectors per iteration
//! (64 floats), then single vectors, then a scalar tail; the reductions (`dot`,
//! `all_finite`) instead take their tail as one more vector, the last sixteen elements
//! with the lanes already counted masked off, so a short tail is not a chain of
//! dependent scalar adds.

use super::{SparseIndex, StepCheck};
use wide::bytemuck::cast;
use wide::{f32x16, i32x16};

/// Floats per SIMD vector.
pub const LANES: usize = 16;
const BLOCK: usize = 4 * LANES;

#[inline(always)]
fn load(chunk: &[f32]) -> f32x16 {
    // `From<&[f32]>` zero-fills short slices and asserts `len <= 16`; every caller
    // passes a chunk of exactly `LANES` floats, so it never fails.
    f32x16::from(chunk)
}

#[inline(always)]
fn store(v: f32x16, out: &mut [f32]) {
    // One 512-bit store where there are sixteen floats: the compiler's own copy of a
    // vector's sixteen floats is two 256-bit halves, the upper one extracted on the
    // shuffle port.
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    if let Some(o) = out.first_chunk_mut::<16>() {
        safe_arch::store_m512(o, cast(v));
        return;
    }
    for (o, x) in out.iter_mut().zip(v.to_array()) {
        *o = x;
    }
}

/// An input and an output cut to their common length: the element-wise kernels
/// step through both in whole vectors, and each one's remainder must start where
/// the other's does.
#[inline(always)]
fn common2<'a, 'b, T, U>(x: &'a [T], y: &'b mut [U]) -> (&'a [T], &'b mut [U]) {
    let n = x.len().min(y.len());
    (&x[..n], &mut y[..n])
}

/// `Σ aᵢ·bᵢ` with four vector accumulators and fused multiply-add where the target has it.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    if n < LANES {
        // What the vector path computes for a short input (its sum starts at 0 and
        // takes the tail in order), without its setup and reduction.
        return a.iter().zip(b).fold(0.0, |s, (x, y)| s + x * y);
    }
    let mut acc = [f32x16::ZERO; 4];
    let mut ab = a.chunks_exact(BLOCK);
    let mut bb = b.chunks_exact(BLOCK);
    for (x, y) in (&mut ab).zip(&mut bb) {
        for (k, acc_k) in acc.iter_mut().enumerate() {
            let r = k * LANES..(k + 1) * LANES;
            *acc_k = load(&x[r.clone()]).mul_add(load(&y[r]), *acc_k);
        }
    }
    let mut av = ab.remainder().chunks_exact(LANES);
    let mut bv = bb.remainder().chunks_exact(LANES);
    for (x, y) in (&mut av).zip(&mut bv) {
        acc[0] = load(x).mul_add(load(y), acc[0]);
    }
    let tail = n % LANES;
    if tail > 0 {
        // The last sixteen elements, with the lanes already summed above masked off:
        // one vector instead of a chain of up to fifteen dependent scalar adds. The
        // product is masked (not an operand), so an ∞ in a masked lane cannot make NaN.
        let w = n - LANES..n;
        acc[1] += (load(&a[w.clone()]) * load(&b[w])) & tail_mask(tail);
    }
    let total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    total.reduce_add()
}

/// All ones in the top `tail` lanes (`0 < tail < 16`), zero below: the lanes of the
/// last sixteen elements of a slice that its whole vectors did not cover.
#[inline(always)]
fn tail_mask(tail: usize) -> f32x16 {
    const LANE: i32x16 = i32x16::new([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    cast(LANE.simd_gt(i32x16::splat((LANES - tail) as i32 - 1)))
}

/// [`tail_mask`] for eight f64 lanes (`0 < tail < 8`).
#[inline(always)]
fn tail_mask_f64(tail: usize) -> wide::f64x8 {
    use wide::i64x8;
    const LANE: i64x8 = i64x8::new([0, 1, 2, 3, 4, 5, 6, 7]);
    cast(LANE.simd_gt(i64x8::splat(7 - tail as i64)))
}

/// `y ← y + α·x`.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    let (x, y) = common2(x, y);
    let va = f32x16::splat(alpha);
    let mut xc = x.chunks_exact(LANES);
    let mut yc = y.chunks_exact_mut(LANES);
    for (xs, ys) in (&mut xc).zip(&mut yc) {
        store(va.mul_add(load(xs), load(ys)), ys);
    }
    for (xi, yi) in xc.remainder().iter().zip(yc.into_remainder()) {
        *yi += alpha * xi;
    }
}

/// `Σ_{j ∈ idx} w[j]`: the dot product of a sparse binary row with `w`.
///
/// Four scalar accumulators hide the latency of the gathers; out-of-range indices are
/// skipped.
pub fn sparse_dot<I: SparseIndex>(idx: &[I], w: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let mut chunks = idx.chunks_exact(4);
    for c in &mut chunks {
        for (a, &j) in acc.iter_mut().zip(c) {
            *a += w.get(j.index()).copied().unwrap_or(0.0);
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for &j in chunks.remainder() {
        s += w.get(j.index()).copied().unwrap_or(0.0);
    }
    s
}

/// `y[j] ← y[j] + α` for every `j ∈ idx`: scatter-add of a scaled sparse binary row.
pub fn sparse_axpy<I: SparseIndex>(alpha: f32, idx: &[I], y: &mut [f32]) {
    for &j in idx {
        if let Some(v) = y.get_mut(j.index()) {
            *v += alpha;
        }
    }
}

/// Words of a bitmap row that [`bitmap_dots`] and [`bitmap_axpys`] take at a time: eight
/// vectors of sixteen floats (128 features), which stay in registers while every row
/// of the batch passes over them.
const BITMAP_BLOCK: usize = 8;

/// `acc + v` in the lanes whose bit is set in `word`, `acc` in the others.
///
/// With AVX-512 this is one add under a mask register loaded straight from the word.
/// `wide` has no mask registers, so that path goes through `safe_arch`, the crate
/// `wide` itself is built on; other targets test the word's bits lane by lane.
#[inline(always)]
fn add_lanes(acc: f32x16, word: u16, v: f32x16) -> f32x16 {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        use safe_arch::{blend_varying_m512, m512};
        cast(blend_varying_m512(
            cast::<f32x16, m512>(acc),
            cast::<f32x16, m512>(acc + v),
            word,
        ))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        // Bit `l` of a word in lane `l`.
        const BIT_LANES: i32x16 = i32x16::new([
            1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768,
        ]);
        let bits = i32x16::splat(i32::from(word)) & BIT_LANES;
        let clear: f32x16 = cast(bits.simd_eq(i32x16::ZERO));
        wide::Select::select(clear, acc, acc + v)
    }
}

/// Row `i` of a table of bitmap rows, `stride` words each: empty when the table does not
/// hold it.
#[inline(always)]
fn table_row(table: &[u16], stride: usize, i: usize) -> &[u16] {
    i.checked_mul(stride)
        .and_then(|a| table.get(a..a.checked_add(stride)?))
        .unwrap_or(&[])
}

/// Words `first..first + N` of a bitmap row: the row's own when it has them all, else a
/// copy in `pad` with zeros for those past its end.
#[inline(always)]
fn block_words<'a, const N: usize>(
    row: &'a [u16],
    first: usize,
    pad: &'a mut [u16; N],
) -> &'a [u16; N] {
    if let Some(words) = row
        .get(first..first.saturating_add(N))
        .and_then(|s| s.try_into().ok())
    {
        return words;
    }
    *pad = [0; N];
    for (w, &s) in pad.iter_mut().zip(row.get(first..).unwrap_or(&[])) {
        *w = s;
    }
    pad
}

/// Up to sixteen floats of `xs` from `at`, zeros past its end (a plain vector load when
/// all sixteen are there).
#[inline(always)]
fn load_upto(xs: &[f32], at: usize) -> f32x16 {
    match xs.get(at..at.saturating_add(LANES)) {
        Some(whole) => load(whole),
        None => load_part(xs, at),
    }
}

/// [`load_upto`] of fewer than sixteen floats: out of line, so that the loops over a
/// row's vectors stay small enough to unroll and keep their vectors in registers.
#[inline(never)]
fn load_part(xs: &[f32], at: usize) -> f32x16 {
    f32x16::new(padded16(xs.get(at..).unwrap_or(&[])))
}

/// Stores the lanes of `v` that fall inside `xs` at `at..at + 16`.
#[inline(always)]
fn store_upto(v: f32x16, xs: &mut [f32], at: usize) {
    match xs.get_mut(at..at.saturating_add(LANES)) {
        Some(whole) => whole.copy_from_slice(&v.to_array()),
        None => store_part(v, xs, at),
    }
}

/// [`store_upto`] of fewer than sixteen floats, out of line as [`load_part`].
#[inline(never)]
fn store_part(v: f32x16, xs: &mut [f32], at: usize) {
    super::copy(xs.get_mut(at..).unwrap_or(&mut []), &v.to_array());
}

/// Calls `$fixed::<W>` with the table as rows of `W` words when its stride `W` is at most
/// [`BITMAP_BLOCK`], `$general` otherwise.
macro_rules! by_stride {
    ($table:expr, $stride:expr, $fixed:ident($($arg:expr),*), else $general:expr) => {
        match $stride {
            1 => $fixed::<1>($table.as_chunks::<1>().0, $($arg),*),
            2 => $fixed::<2>($table.as_chunks::<2>().0, $($arg),*),
            3 => $fixed::<3>($table.as_chunks::<3>().0, $($arg),*),
            4 => $fixed::<4>($table.as_chunks::<4>().0, $($arg),*),
            5 => $fixed::<5>($table.as_chunks::<5>().0, $($arg),*),
            6 => $fixed::<6>($table.as_chunks::<6>().0, $($arg),*),
            7 => $fixed::<7>($table.as_chunks::<7>().0, $($arg),*),
            8 => $fixed::<8>($table.as_chunks::<8>().0, $($arg),*),
            _ => $general,
        }
    };
}

/// `out[k] = Σ w[j]` over the bits `j` set in row `rows[k]` of `table` (rows of `stride`
/// words; bit `j % 16` of a row's word `j / 16` is feature `j`): the dot products of
/// binary rows stored as bitmaps with `w`. A row the table does not hold counts as
/// zeros, and so do bits at or past `w.len()`.
///
/// `w` is held in vectors, eight at a time (128 features), while each row adds the
/// lanes its words select: one masked add a word, where [`sparse_dot`] loads each
/// feature on its own. Rows of up to eight words are read as arrays of their known
/// length.
#[inline]
pub fn bitmap_dots(table: &[u16], stride: usize, rows: &[usize], w: &[f32], out: &mut [f32]) {
    let n = rows.len().min(out.len());
    for (rows, out) in rows[..n].chunks(LANES).zip(out[..n].chunks_mut(LANES)) {
        super::copy(out, &bitmap_dots16(table, stride, rows, w));
    }
}

/// [`bitmap_dots`] of up to sixteen rows, returned as one array: lane `k` is row
/// `rows[k]`'s sum, lanes past `rows.len()` are 0, and rows past the sixteenth are not
/// read.
///
/// Each row's masked adds leave a vector whose lanes sum to its dot product. Rows of up
/// to eight words then fold their sixteen vectors into one (pair sums within each
/// quarter twice, then the quarters): 15 vector adds for sixteen rows, where summing
/// each row's vector on its own takes four adds a row, and the sums leave as one
/// vector, which a caller's vector load takes straight from the store (sixteen scalar
/// stores read back as one vector wait for all of them to reach the cache).
#[inline]
pub fn bitmap_dots16(table: &[u16], stride: usize, rows: &[usize], w: &[f32]) -> [f32; LANES] {
    let rows = &rows[..rows.len().min(LANES)];
    by_stride!(table, stride, dots16_fixed(rows, w), else {
        let mut out = [0.0; LANES];
        dots_general(table, stride, rows, w, &mut out);
        out
    })
}

/// [`bitmap_dots`] eight words of every row at a time.
fn dots_general(table: &[u16], stride: usize, rows: &[usize], w: &[f32], out: &mut [f32]) {
    out.fill(0.0);
    let mut pad = [0u16; BITMAP_BLOCK];
    for first in (0..stride).step_by(BITMAP_BLOCK) {
        let wv: [f32x16; BITMAP_BLOCK] = wide_block(w, first);
        for (&i, o) in rows.iter().zip(out.iter_mut()) {
            let words = block_words(table_row(table, stride, i), first, &mut pad);
            *o += masked_lanes(words, &wv).reduce_add();
        }
    }
}

/// The vectors of `w` for words `first..first + N` (zeros past its end).
#[inline(always)]
fn wide_block<const N: usize>(w: &[f32], first: usize) -> [f32x16; N] {
    let mut wv = [f32x16::ZERO; N];
    for (c, v) in wv.iter_mut().enumerate() {
        *v = load_upto(w, (first + c) * LANES);
    }
    wv
}

/// The lanes of `wv` that the words select, added up vector by vector in two chains:
/// a vector whose lanes sum to their sum.
#[inline(always)]
fn masked_lanes<const N: usize>(words: &[u16; N], wv: &[f32x16; N]) -> f32x16 {
    let (mut even, mut odd) = (f32x16::ZERO, f32x16::ZERO);
    for c in (0..N).step_by(2) {
        even = add_lanes(even, words[c], wv[c]);
        if c + 1 < N {
            odd = add_lanes(odd, words[c + 1], wv[c + 1]);
        }
    }
    even + odd
}

/// The `W` vectors of a slice for rows of `W` words, zeros past its end (so bits set
/// there add nothing). A slice that ends inside the last vector (`(W − 1)·16 < len <
/// W·16`, as a9a's 124 floats in eight vectors) has that vector in the pieces of
/// [`tail`], which the kernels that write such a slice store.
#[inline(always)]
fn fixed_vectors<const W: usize>(xs: &[f32]) -> [f32x16; W] {
    if !ends_inside_last::<W>(xs.len()) {
        return wide_block(xs, 0);
    }
    let (head, last) = xs.split_at((W - 1) * LANES);
    let mut v = [f32x16::ZERO; W];
    for (vc, chunk) in v.iter_mut().zip(head.chunks_exact(LANES)) {
        *vc = load(chunk);
    }
    if let Some(vl) = v.last_mut() {
        *vl = tail::load(last);
    }
    v
}

/// Whether a slice of `len` floats ends inside its `W`-th vector.
#[inline(always)]
fn ends_inside_last<const W: usize>(len: usize) -> bool {
    W >= 1 && len > (W - 1) * LANES && len < W * LANES
}

/// Stores the `W` vectors of [`fixed_vectors`] back into the slice, a partial last one
/// in the same pieces.
#[inline(always)]
fn store_fixed<const W: usize>(acc: &[f32x16; W], xs: &mut [f32]) {
    if !ends_inside_last::<W>(xs.len()) {
        for (c, &v) in acc.iter().enumerate() {
            store_upto(v, xs, c * LANES);
        }
        return;
    }
    let (head, last) = xs.split_at_mut((W - 1) * LANES);
    for (chunk, &v) in head.chunks_exact_mut(LANES).zip(acc) {
        store(v, chunk);
    }
    if let Some(&vl) = acc.last() {
        tail::store(vl, last);
    }
}

/// [`bitmap_dots16`] on a table of rows of `W ≤ 8` words.
#[inline(never)]
fn dots16_fixed<const W: usize>(table: &[[u16; W]], rows: &[usize], w: &[f32]) -> [f32; LANES] {
    let wv = fixed_vectors::<W>(w);
    let zero = [0u16; W];
    let row = |k: usize| match rows.get(k) {
        Some(&i) => masked_lanes(table.get(i).unwrap_or(&zero), &wv),
        None => f32x16::ZERO,
    };
    lane_sums16(core::array::from_fn(row))
}

/// `[Σ v₀, …, Σ v₁₅]`, each sum `(Q₀ + Q₂) + (Q₁ + Q₃)` of its vector's quarter sums
/// `Q_q = (v[4q] + v[4q+1]) + (v[4q+2] + v[4q+3])`: pair sums within each quarter twice,
/// then the quarters, 15 vector adds for the sixteen sums, which leave as one vector.
#[inline(always)]
fn lane_sums16(v: [f32x16; 16]) -> [f32; LANES] {
    let pairs: [f32x16; 8] = core::array::from_fn(|k| pair_sums(v[2 * k], v[2 * k + 1]));
    let quads: [f32x16; 4] = core::array::from_fn(|k| pair_sums(pairs[2 * k], pairs[2 * k + 1]));
    quarter_sums(&quads).to_array()
}

/// `[a₀ + a₁, a₂ + a₃, b₀ + b₁, b₂ + b₃]` in every quarter (four lanes) of the vectors.
///
/// On sixteen rows' vectors in pairs, each quarter then holds two partial sums of each
/// row of the pair; on those results in pairs, one partial sum of each of four rows.
#[inline(always)]
fn pair_sums(a: f32x16, b: f32x16) -> f32x16 {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        use safe_arch::{add_m512, m512, shuffle_m512};
        let (a, b) = (cast::<f32x16, m512>(a), cast::<f32x16, m512>(b));
        // vshufps: lanes 0 and 2 of each quarter of a, then of b; then lanes 1 and 3.
        cast(add_m512(
            shuffle_m512::<0b10_00_10_00>(a, b),
            shuffle_m512::<0b11_01_11_01>(a, b),
        ))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let (a, b) = (a.to_array(), b.to_array());
        f32x16::new(core::array::from_fn(|k| {
            let (src, i) = (if k % 4 < 2 { &a } else { &b }, k / 4 * 4 + 2 * (k % 2));
            src[i] + src[i + 1]
        }))
    }
}

/// Lane `4g + j` is `Σ_q t_g[4q + j]`: the four quarters of each vector added, one
/// vector's sums in each quarter of the result, as `(Q₀ + Q₂) + (Q₁ + Q₃)`.
#[inline(always)]
fn quarter_sums(t: &[f32x16; 4]) -> f32x16 {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        use safe_arch::{
            add_m512, cast_m512_to_m256, extract_m256_from_m512, insert_m256_to_m512, m512, m512i,
            shuffle_abv_i64_all_m512i,
        };
        let t = t.map(cast::<f32x16, m512>);
        // `[Q₀ + Q₂, Q₁ + Q₃]` of `a` in the lower half, of `b` in the upper: the lower
        // halves side by side plus the upper halves side by side.
        let halves = |a: m512, b: m512| {
            add_m512(
                insert_m256_to_m512::<1>(a, cast_m512_to_m256(b)),
                insert_m256_to_m512::<0>(b, extract_m256_from_m512::<1>(a)),
            )
        };
        let (u, v) = (halves(t[0], t[1]), halves(t[2], t[3]));
        // The even quarters of `u` and `v` plus their odd ones: each vector's sum in a
        // quarter of its own.
        let quarters = |idx: [i64; 8]| {
            cast::<m512i, m512>(shuffle_abv_i64_all_m512i(cast(u), cast(idx), cast(v)))
        };
        cast(add_m512(
            quarters([0, 1, 4, 5, 8, 9, 12, 13]),
            quarters([2, 3, 6, 7, 10, 11, 14, 15]),
        ))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let t = t.map(|v| v.to_array());
        f32x16::new(core::array::from_fn(|k| {
            let (v, j) = (&t[k / 4], k % 4);
            (v[j] + v[8 + j]) + (v[4 + j] + v[12 + j])
        }))
    }
}

/// `y[j] ← y[j] + alphas[k]` for every bit `j` set in row `rows[k]` of `table` (rows of
/// `stride` words, as in [`bitmap_dots`]): the scatter-adds of scaled binary rows stored
/// as bitmaps. A row the table does not hold adds nothing, nor do bits at or past
/// `y.len()`.
///
/// `y` is held in vectors, eight at a time, while every row adds its `alpha` to the
/// lanes its words select, then stored once. Each element receives the rows' additions
/// in row order, as in the twin, so the two agree bit for bit.
#[inline]
pub fn bitmap_axpys(alphas: &[f32], table: &[u16], stride: usize, rows: &[usize], y: &mut [f32]) {
    let n = alphas.len().min(rows.len());
    let (alphas, rows) = (&alphas[..n], &rows[..n]);
    by_stride!(table, stride, axpys_fixed(alphas, rows, y), else axpys_general(alphas, table, stride, rows, y))
}

/// [`bitmap_axpys`] eight words of every row at a time.
fn axpys_general(alphas: &[f32], table: &[u16], stride: usize, rows: &[usize], y: &mut [f32]) {
    let mut pad = [0u16; BITMAP_BLOCK];
    for first in (0..stride).step_by(BITMAP_BLOCK) {
        let mut acc: [f32x16; BITMAP_BLOCK] = wide_block(y, first);
        for (&alpha, &i) in alphas.iter().zip(rows) {
            let words = block_words(table_row(table, stride, i), first, &mut pad);
            masked_adds(&mut acc, words, alpha);
        }
        for (c, &v) in acc.iter().enumerate() {
            store_upto(v, y, (first + c) * LANES);
        }
    }
}

/// `alpha` added to the lanes of `acc` that the words select.
#[inline(always)]
fn masked_adds<const N: usize>(acc: &mut [f32x16; N], words: &[u16; N], alpha: f32) {
    let a = f32x16::splat(alpha);
    for (v, &word) in acc.iter_mut().zip(words) {
        *v = add_lanes(*v, word, a);
    }
}

/// [`bitmap_axpys`] on a table of rows of `W ≤ 8` words: `y` in `W` vectors, the rows'
/// additions, then `y` stored back.
#[inline(never)]
fn axpys_fixed<const W: usize>(table: &[[u16; W]], alphas: &[f32], rows: &[usize], y: &mut [f32]) {
    let mut acc = fixed_vectors::<W>(y);
    for (&alpha, &i) in alphas.iter().zip(rows) {
        if let Some(words) = table.get(i) {
            masked_adds(&mut acc, words, alpha);
        }
    }
    store_fixed(&acc, y);
}

/// The Langevin update in place, eq. 4: `θ ← θ + (ε/2)·g + √ε·η`, given `h = ε/2`
/// and `s = √ε`.
pub fn langevin_update(theta: &mut [f32], grad: &[f32], noise: &[f32], h: f32, s: f32) {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&mut theta[..n], &grad[..n], &noise[..n]);
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        let v = vs.mul_add(load(e), vh.mul_add(load(g), load(t)));
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    for ((t, g), e) in tail.zip(gc.remainder()).zip(nc.remainder()) {
        *t += h * g + s * e;
    }
}

/// The Langevin proposal out of place: `η ← θ + (ε/2)·g + √ε·η` (the noise buffer is
/// overwritten by the proposed position), given `h = ε/2` and `s = √ε`: the values
/// [`langevin_step_checked`] writes into θ, bit for bit.
pub fn langevin_propose(theta: &[f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        for ((e, t), g) in noise.iter_mut().zip(theta).zip(grad) {
            *e = t + h * g + s * *e;
        }
        return;
    }
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    // The last vector, read before the loop writes the elements it shares with it.
    let last = n - LANES;
    let v_last = vs.mul_add(
        load(&noise[last..]),
        vh.mul_add(load(&grad[last..]), load(&theta[last..])),
    );
    let mut tc = theta.chunks_exact(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact_mut(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        store(vs.mul_add(load(e), vh.mul_add(load(g), load(t))), e);
    }
    store(v_last, &mut noise[last..]);
}

/// The Langevin step of eq. 4 in place, with its checks in the same pass:
/// `θ ← θ + h·g + s·η` (`h = ε/2`, `s = √ε`), the old `θ` left in `noise` so that the
/// caller can take the step back, returning `Σ η²` and `Σ g²` of what it read and
/// whether every new `θᵢ` is finite (what a sampler reports and checks before it keeps
/// the step).
///
/// A length that is not a multiple of sixteen ends with its last `n mod 16` elements
/// in one vector, loaded and stored in fixed pieces (eight floats, four, then one at a
/// time, each one access; zeros in the lanes above): the next step reads θ
/// and the noise buffer back piece by piece, each piece from the one store that wrote
/// it. (Read as the last sixteen elements, the tail overlapped the loop's last vector,
/// and a load across two stores waits for both to reach the cache: at d = 124 the step
/// alone, called on its own output, took 19–20 ns against 13.4 at 128.)
#[inline]
pub fn langevin_step_checked(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> StepCheck {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&mut theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        return step_tail(theta, grad, noise, h, s);
    }
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let (mut esq, mut gsq, mut bad) = (f32x16::ZERO, f32x16::ZERO, f32x16::ZERO);
    let full = n - n % LANES;
    let (theta, theta_tail) = theta.split_at_mut(full);
    let (grad, grad_tail) = grad.split_at(full);
    let (noise, noise_tail) = noise.split_at_mut(full);
    for ((t, g), e) in theta
        .chunks_exact_mut(LANES)
        .zip(grad.chunks_exact(LANES))
        .zip(noise.chunks_exact_mut(LANES))
    {
        let (tv, gv, ev) = (load(t), load(g), load(e));
        esq = ev.mul_add(ev, esq);
        gsq = gv.mul_add(gv, gsq);
        let v = vs.mul_add(ev, vh.mul_add(gv, tv));
        bad += v * f32x16::ZERO;
        store(v, t);
        store(tv, e);
    }
    if !theta_tail.is_empty() {
        // The last elements in lanes `0..rem`, zeros above (which add nothing to the
        // sums and are not stored), moved in the pieces of [`tail::load`].
        let (tv, gv, ev) = (
            tail::load(theta_tail),
            tail::load(grad_tail),
            tail::load(noise_tail),
        );
        esq = ev.mul_add(ev, esq);
        gsq = gv.mul_add(gv, gsq);
        let v = vs.mul_add(ev, vh.mul_add(gv, tv));
        bad += v * f32x16::ZERO;
        tail::store(v, theta_tail);
        tail::store(tv, noise_tail);
    }
    StepCheck {
        noise_sq: esq.reduce_add(),
        grad_sq: gsq.reduce_add(),
        finite: bad.reduce_add() == 0.0,
    }
}

/// [`langevin_step_checked`] for fewer than sixteen elements (lengths trusted equal):
/// four partial sums of each square, element `k` into sum `k mod 4`, so the norms are
/// not chains of dependent adds. Every sum is named by a constant index (four at a
/// time, then the last one to three), which keeps them in registers: an index known
/// only at run time puts them on the stack, and reading them back as one vector after
/// four scalar stores stalls on store forwarding.
#[inline(always)]
fn step_tail(theta: &mut [f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) -> StepCheck {
    let (mut esq, mut gsq, mut finite) = ([0.0f32; 4], [0.0f32; 4], true);
    let mut one = |j: usize, t: &mut f32, g: f32, e: &mut f32| {
        esq[j] += *e * *e;
        gsq[j] += g * g;
        let old = *t;
        *t = old + h * g + s * *e;
        *e = old;
        finite &= t.is_finite();
    };
    let mut tc = theta.chunks_exact_mut(4);
    let mut ec = noise.chunks_exact_mut(4);
    let mut gc = grad.chunks_exact(4);
    for ((t, e), g) in (&mut tc).zip(&mut ec).zip(&mut gc) {
        for j in 0..4 {
            one(j, &mut t[j], g[j], &mut e[j]);
        }
    }
    let (t, e, g) = (tc.into_remainder(), ec.into_remainder(), gc.remainder());
    for j in 0..3 {
        if let (Some(t), Some(e), Some(&g)) = (t.get_mut(j), e.get_mut(j), g.get(j)) {
            one(j, t, g, e);
        }
    }
    let sum = |q: [f32; 4]| (q[0] + q[1]) + (q[2] + q[3]);
    StepCheck {
        noise_sq: sum(esq),
        grad_sq: sum(gsq),
        finite,
    }
}

/// The preconditioned Langevin update in place, eq. 9 with a diagonal `M`:
/// `θ ← θ + (ε/2)·M·g + √ε·M^½·η`, given `h = ε/2` and `s = √ε`.
pub fn langevin_update_precond(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    m: &[f32],
    h: f32,
    s: f32,
) {
    let n = theta.len().min(grad.len()).min(noise.len()).min(m.len());
    let (theta, grad, noise, m) = (&mut theta[..n], &grad[..n], &noise[..n], &m[..n]);
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    let mut mc = m.chunks_exact(LANES);
    for (((t, g), e), mm) in (&mut tc).zip(&mut gc).zip(&mut nc).zip(&mut mc) {
        let mv = load(mm);
        let drift = (vh * mv).mul_add(load(g), load(t));
        let v = (vs * mv.sqrt()).mul_add(load(e), drift);
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    let rest = gc
        .remainder()
        .iter()
        .zip(nc.remainder())
        .zip(mc.remainder());
    for (t, ((g, e), mm)) in tail.zip(rest) {
        *t += h * mm * g + s * libm::sqrtf(*mm) * e;
    }
}

/// `out[i] ← σ(z[i]) = 1/(1 + e^{−z[i]})`, sixteen at a time with the crate's
/// branch-free `exp` (within 2 ulps of libm's `expf`); `σ(−∞) = 0`, `σ(+∞) = 1`, NaN
/// stays NaN.
#[inline]
pub fn sigmoid(z: &[f32], out: &mut [f32]) {
    let (z, out) = common2(z, out);
    let mut zc = z.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for (zs, os) in (&mut zc).zip(&mut oc) {
        store(sigmoid16(load(zs)), os);
    }
    let (zr, or) = (zc.remainder(), oc.into_remainder());
    if !zr.is_empty() {
        let v = sigmoid16(f32x16::from(padded16(zr)));
        super::copy(or, &v.to_array());
    }
}

/// `σ(z) = 1/(1 + e^{−z})` of sixteen lanes; a NaN lane stays NaN.
#[inline(always)]
fn sigmoid16(z: f32x16) -> f32x16 {
    let one = f32x16::ONE;
    let s = one / (one + exp16(-z));
    // exp16 clamps its argument, which would turn a NaN into a number.
    z.is_nan().select(z, s)
}

/// `eˣ` of sixteen lanes, [`crate::math::exp`]'s algorithm with fused multiply-adds
/// (within 2 ulps; a short chain of dependent operations and no branch, where `wide`'s
/// `exp` tests its range and handles special values on the way): `x` clamped to
/// `[−104, 89]` (beyond which `eˣ` rounds to 0 or overflows anyway), `x = k ln 2 + r`
/// with `|r| ≤ ½ ln 2`, a degree-6 polynomial for `eʳ`, and `2ᵏ` as two normal factors.
/// A NaN becomes a number: callers that must keep it test for it.
#[inline(always)]
fn exp16(x: f32x16) -> f32x16 {
    use crate::math::exp_consts::*;
    let c = f32x16::splat;
    let x = x.max(c(LO)).min(c(HI));
    let s = x.mul_add(c(core::f32::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    let r = k.mul_neg_add(c(LN2_LO), k.mul_neg_add(c(LN2_HI), x));
    let z = r * r;
    let p5 = c(P[5]).mul_add(r, c(P[4]));
    let p3 = c(P[3]).mul_add(r, c(P[2]));
    let p1 = c(P[1]).mul_add(r, c(P[0]));
    let y = p5.mul_add(z, p3).mul_add(z, p1).mul_add(z, r) + f32x16::ONE;
    // k ∈ [−150, 128] sits in the low bits of s; 2ᵏ = 2^⌊k/2⌋ · 2^⌈k/2⌉, both normal.
    let k: i32x16 = cast::<f32x16, i32x16>(s) - i32x16::splat(SHIFTER.to_bits() as i32);
    let k1 = k >> 1u32;
    let two = |e: i32x16| -> f32x16 { cast((e + i32x16::splat(127)) << 23u32) };
    y * two(k1) * two(k - k1)
}

#[inline(always)]
fn load_f64(chunk: &[f64]) -> wide::f64x8 {
    let mut a = [0.0f64; 8];
    a.copy_from_slice(chunk);
    wide::f64x8::from(a)
}

/// `Σ aᵢ·bᵢ` in f64: two vector accumulators of eight lanes, fused multiply-add.
pub fn dot_f64(a: &[f64], b: &[f64]) -> f64 {
    use wide::f64x8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [f64x8::ZERO; 2];
    let mut ac = a.chunks_exact(16);
    let mut bc = b.chunks_exact(16);
    for (x, y) in (&mut ac).zip(&mut bc) {
        acc[0] = load_f64(&x[..8]).mul_add(load_f64(&y[..8]), acc[0]);
        acc[1] = load_f64(&x[8..]).mul_add(load_f64(&y[8..]), acc[1]);
    }
    let mut s = (acc[0] + acc[1]).reduce_add();
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        s += x * y;
    }
    s
}

/// The sizes of `total` split into the fewest parts of at most `most` (> 0), as even as
/// their number allows, larger parts first (ten in parts of at most four: 4, 3, 3): how
/// the blocked kernels cut rows and vectors into blocks of a size known at compile time.
#[inline(always)]
fn even_parts(total: usize, most: usize) -> impl Iterator<Item = usize> {
    let parts = total.div_ceil(most);
    (0..parts).scan(total, move |left, g| {
        let part = left.div_ceil(parts - g);
        *left -= part;
        Some(part)
    })
}

/// A vector of `N` floats of one type: what the blocked matrix kernels need of it.
trait Lanes: Copy {
    type Elem: Copy + Default;
    const N: usize;
    const ZERO: Self;
    /// The vector of `s`, exactly `N` floats long.
    fn load(s: &[Self::Elem]) -> Self;
    /// `out ← self`, `out` exactly `N` floats long.
    fn store(self, out: &mut [Self::Elem]);
    fn splat(x: Self::Elem) -> Self;
    fn mul_add(self, b: Self, c: Self) -> Self;
}

impl Lanes for wide::f64x8 {
    type Elem = f64;
    const N: usize = 8;
    const ZERO: Self = wide::f64x8::ZERO;
    #[inline(always)]
    fn load(s: &[f64]) -> Self {
        load_f64(s)
    }
    #[inline(always)]
    fn store(self, out: &mut [f64]) {
        out.copy_from_slice(&self.to_array());
    }
    #[inline(always)]
    fn splat(x: f64) -> Self {
        wide::f64x8::splat(x)
    }
    #[inline(always)]
    fn mul_add(self, b: Self, c: Self) -> Self {
        wide::f64x8::mul_add(self, b, c)
    }
}

impl Lanes for wide::f32x8 {
    type Elem = f32;
    const N: usize = 8;
    const ZERO: Self = wide::f32x8::ZERO;
    #[inline(always)]
    fn load(s: &[f32]) -> Self {
        let mut a = [0.0f32; 8];
        a.copy_from_slice(s);
        wide::f32x8::from(a)
    }
    #[inline(always)]
    fn store(self, out: &mut [f32]) {
        out.copy_from_slice(&self.to_array());
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        wide::f32x8::splat(x)
    }
    #[inline(always)]
    fn mul_add(self, b: Self, c: Self) -> Self {
        wide::f32x8::mul_add(self, b, c)
    }
}

impl Lanes for f32x16 {
    type Elem = f32;
    const N: usize = LANES;
    const ZERO: Self = f32x16::ZERO;
    #[inline(always)]
    fn load(s: &[f32]) -> Self {
        load(s)
    }
    #[inline(always)]
    fn store(self, out: &mut [f32]) {
        store(self, out)
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        f32x16::splat(x)
    }
    #[inline(always)]
    fn mul_add(self, b: Self, c: Self) -> Self {
        f32x16::mul_add(self, b, c)
    }
}

/// `out = a · b` for row-major `a` (`rows × inner`), `b` (`inner × cols`) and `out`
/// (`rows × cols`) in f64; products whose operands do not fit in `a`, `b` or `out` are
/// skipped (the whole row or column is then left alone).
///
/// Blocked for registers: tiles of up to five rows of `out` by up to four vectors of
/// columns, or up to ten rows when a row is at most two vectors (rows and vectors split
/// as evenly as their numbers allow), so each vector of `b` loaded serves several fused
/// multiply-adds and each element of `a` several vectors' lanes, with enough
/// independent chains to hide the multiply-add latency (a plain row-times-matrix loop
/// is bound by its loads instead). The last vector of a row ends at its last column
/// (recomputing a few outputs by the same chain of operations, so they do not change).
/// Every output is the same chain of fused multiply-adds over `k`, wherever its column
/// falls (with fewer columns than a vector's lanes, the lanes past them compute numbers
/// nobody keeps), so a column of `out` does not depend on how many columns there are.
pub fn gemm_f64(a: &[f64], b: &[f64], out: &mut [f64], rows: usize, inner: usize, cols: usize) {
    gemm::<wide::f64x8>(a, b, out, rows, inner, cols);
}

/// [`gemm_f64`] in f32, sixteen lanes a vector.
pub fn gemm_f32(a: &[f32], b: &[f32], out: &mut [f32], rows: usize, inner: usize, cols: usize) {
    gemm::<f32x16>(a, b, out, rows, inner, cols);
}

#[inline(always)]
fn gemm<V: Lanes>(
    a: &[V::Elem],
    b: &[V::Elem],
    out: &mut [V::Elem],
    rows: usize,
    inner: usize,
    cols: usize,
) {
    let rows = super::reference::gemm_rows(a.len(), b.len(), out.len(), rows, inner, cols);
    if rows == 0 {
        return;
    }
    let b = &b[..inner * cols];
    // Blocks of rows as even as their number allows, a block size known at compile
    // time (no per-row branch inside): up to ten rows when a row of `out` is at most two
    // vectors (ten rows are one block, whose twenty chains keep both multiply-add ports
    // busy where two blocks of five would each wait on their chains' latency), else up
    // to five (ten rows are two blocks of five, each by tiles of up to four vectors).
    let most = if cols <= 2 * V::N { 10 } else { 5 };
    let mut i = 0;
    for rb in even_parts(rows, most) {
        match rb {
            10 => gemm_block::<V, 10>(a, b, out, i, rows, inner, cols),
            9 => gemm_block::<V, 9>(a, b, out, i, rows, inner, cols),
            8 => gemm_block::<V, 8>(a, b, out, i, rows, inner, cols),
            7 => gemm_block::<V, 7>(a, b, out, i, rows, inner, cols),
            6 => gemm_block::<V, 6>(a, b, out, i, rows, inner, cols),
            5 => gemm_block::<V, 5>(a, b, out, i, rows, inner, cols),
            4 => gemm_block::<V, 4>(a, b, out, i, rows, inner, cols),
            3 => gemm_block::<V, 3>(a, b, out, i, rows, inner, cols),
            2 => gemm_block::<V, 2>(a, b, out, i, rows, inner, cols),
            _ => gemm_block::<V, 1>(a, b, out, i, rows, inner, cols),
        }
        i += rb;
    }
}

/// Rows `i..i + RB` of [`gemm`]'s product of `rows_end` rows (all of which fit: the
/// caller checked).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gemm_block<V: Lanes, const RB: usize>(
    a: &[V::Elem],
    b: &[V::Elem],
    out: &mut [V::Elem],
    i: usize,
    rows_end: usize,
    inner: usize,
    cols: usize,
) {
    let n = V::N;
    let ar: [&[V::Elem]; RB] = core::array::from_fn(|r| &a[(i + r) * inner..][..inner]);
    if cols >= n {
        // Vectors of columns: the whole ones, then one ending at the last column (which
        // overlaps its neighbour), in tiles of up to four vectors as even as their
        // number allows (seven vectors are tiles of four and three).
        let vectors = cols.div_ceil(n);
        if vectors <= 2 {
            match vectors {
                2 => gemm_tile::<V, RB, 2>(&ar, b, out, i, cols, 0),
                _ => gemm_tile::<V, RB, 1>(&ar, b, out, i, cols, 0),
            }
            return;
        }
        // Wider rows come in blocks of at most five rows (the caller's split), and
        // only those blocks' wide tiles are compiled: 5 × 4 accumulators fit the
        // registers, 10 × 4 would not.
        if RB > 5 {
            return;
        }
        let mut j = 0;
        for w in even_parts(vectors, 4) {
            match w {
                4 => gemm_tile::<V, RB, 4>(&ar, b, out, i, cols, j),
                3 => gemm_tile::<V, RB, 3>(&ar, b, out, i, cols, j),
                2 => gemm_tile::<V, RB, 2>(&ar, b, out, i, cols, j),
                _ => gemm_tile::<V, RB, 1>(&ar, b, out, i, cols, j),
            }
            j += w;
        }
        return;
    }
    // One vector a row of `b`, read on into the rows after it where they exist (the
    // last rows padded with zeros): lanes past `cols` compute numbers nobody keeps.
    let mut acc = [V::ZERO; RB];
    let mut buf = [V::Elem::default(); LANES];
    for (k, bk) in b.chunks_exact(cols).enumerate() {
        let bv = match b.get(k * cols..k * cols + n) {
            Some(ahead) => V::load(ahead),
            None => {
                buf[..cols].copy_from_slice(bk);
                V::load(&buf[..n])
            }
        };
        for (acc, ar) in acc.iter_mut().zip(&ar) {
            *acc = V::splat(ar[k]).mul_add(bv, *acc);
        }
    }
    // A whole vector stored at the row's start where the product's rows reach that
    // far (its extra lanes fall on rows stored after it), else through a buffer.
    let end = out.len().min(rows_end * cols);
    for (r, acc) in acc.iter().enumerate() {
        let at = (i + r) * cols;
        match out.get_mut(at..at + n).filter(|_| at + n <= end) {
            Some(o) => acc.store(o),
            None => {
                acc.store(&mut buf[..n]);
                out[at..at + cols].copy_from_slice(&buf[..cols]);
            }
        }
    }
}

/// Rows `i..i + RB` of [`gemm`] by the `W` vectors of columns from vector `j0` (the
/// last vector of a row ends at its last column): `RB·W` accumulators, each vector of
/// `b` loaded once for `RB` multiply-adds and each element of `a` broadcast once for
/// `W`, enough independent chains to keep both multiply-add ports busy.
#[inline(always)]
fn gemm_tile<V: Lanes, const RB: usize, const W: usize>(
    ar: &[&[V::Elem]; RB],
    b: &[V::Elem],
    out: &mut [V::Elem],
    i: usize,
    cols: usize,
    j0: usize,
) {
    let n = V::N;
    let at: [usize; W] = core::array::from_fn(|w| ((j0 + w) * n).min(cols - n));
    let mut acc = [[V::ZERO; W]; RB];
    for (k, bk) in b.chunks_exact(cols).enumerate() {
        let bv: [V; W] = core::array::from_fn(|w| V::load(&bk[at[w]..at[w] + n]));
        for (acc, ar) in acc.iter_mut().zip(ar) {
            let v = V::splat(ar[k]);
            for (acc, bv) in acc.iter_mut().zip(&bv) {
                *acc = v.mul_add(*bv, *acc);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let row = &mut out[(i + r) * cols..][..cols];
        for (acc, &c) in acc.iter().zip(&at) {
            acc.store(&mut row[c..c + n]);
        }
    }
}

/// `b ← a·b` for `a` of `n × n` and `b` of `n × cols` when every entry of the product
/// is finite (true); otherwise, or when an operand is too short, `b` is left as it was
/// (false). Each entry is [`gemm_f64`]'s, bit for bit.
///
/// For `n ≤ 10` and `8 ≤ cols ≤ 16` the product stays in registers (one or two vectors
/// a row, the second ending at the last column) until it is checked and stored over `b`;
/// otherwise it goes through `tmp` (at least `n × cols` long in either case, as the
/// twin needs).
pub fn mul_left_checked_f64(
    a: &[f64],
    b: &mut [f64],
    tmp: &mut [f64],
    n: usize,
    cols: usize,
) -> bool {
    let Some(len) = super::reference::mul_left_fit(a.len(), b.len(), tmp.len(), n, cols) else {
        return false;
    };
    let (b, tmp) = (&mut b[..len], &mut tmp[..len]);
    macro_rules! by_rows {
        ($w:literal) => {
            match n {
                1 => return mul_left_block::<1, $w>(a, b, cols),
                2 => return mul_left_block::<2, $w>(a, b, cols),
                3 => return mul_left_block::<3, $w>(a, b, cols),
                4 => return mul_left_block::<4, $w>(a, b, cols),
                5 => return mul_left_block::<5, $w>(a, b, cols),
                6 => return mul_left_block::<6, $w>(a, b, cols),
                7 => return mul_left_block::<7, $w>(a, b, cols),
                8 => return mul_left_block::<8, $w>(a, b, cols),
                9 => return mul_left_block::<9, $w>(a, b, cols),
                10 => return mul_left_block::<10, $w>(a, b, cols),
                _ => {}
            }
        };
    }
    match cols {
        8 => by_rows!(1),
        9..=16 => by_rows!(2),
        _ => {}
    }
    gemm_f64(a, b, tmp, n, n, cols);
    // One OR over all values (which the compiler vectorises), not a search that stops
    // at the first non-finite one.
    if tmp.iter().fold(false, |bad, v| bad | !v.is_finite()) {
        return false;
    }
    b.copy_from_slice(tmp);
    true
}

/// [`mul_left_checked_f64`] for `N` rows of eight to sixteen columns in `W` vectors (the
/// last ending at the last column), in registers: [`gemm_tile`]'s chains, with `a`
/// read from one base (ten row pointers would not stay in registers beside the twenty
/// accumulators).
#[inline(always)]
fn mul_left_block<const N: usize, const W: usize>(a: &[f64], b: &mut [f64], cols: usize) -> bool {
    use wide::f64x8;
    let a = &a[..N * N];
    let last = cols - 8;
    // One flat array per vector of a row: LLVM keeps flat arrays of vectors in
    // registers, but a nested one goes through memory.
    let (mut acc0, mut acc1) = ([f64x8::ZERO; N], [f64x8::ZERO; N]);
    for (k, bk) in b.chunks_exact(cols).enumerate() {
        let (b0, b1) = (load_f64(&bk[..8]), load_f64(&bk[last..]));
        for r in 0..N {
            let v = f64x8::splat(a[r * N + k]);
            acc0[r] = v.mul_add(b0, acc0[r]);
            if W == 2 {
                acc1[r] = v.mul_add(b1, acc1[r]);
            }
        }
    }
    // x·0 is ±0 for finite x and NaN otherwise: their sum (in four chains) is 0
    // exactly when every entry is finite.
    let mut probe = [f64x8::ZERO; 4];
    for r in 0..N {
        probe[r % 4] = acc0[r].mul_add(f64x8::ZERO, probe[r % 4]);
        if W == 2 {
            probe[(r + 2) % 4] = acc1[r].mul_add(f64x8::ZERO, probe[(r + 2) % 4]);
        }
    }
    let probe = (probe[0] + probe[1]) + (probe[2] + probe[3]);
    if probe.to_array().iter().any(|&x| x != 0.0) {
        return false;
    }
    for (r, row) in b.chunks_exact_mut(cols).enumerate() {
        acc0[r].store(&mut row[..8]);
        if W == 2 {
            acc1[r].store(&mut row[last..]);
        }
    }
    true
}

/// `out[j] = Σₘ a[m]·rows[j·stride + m]` for every `j < out.len()`: the dot products
/// of `a` with the rows of a row-major matrix, which is [`dots_rows_f64`] with `a` as
/// its one row (up to eight rows of the matrix at a time, each summed the same way).
/// Rows that do not fit in `rows` give 0.
pub fn dots_f64(a: &[f64], rows: &[f64], stride: usize, out: &mut [f64]) {
    let cols = out.len();
    dots_rows_f64(a, rows, stride, a.len(), out, cols);
}

/// `out[i·cols + k] = Σ_{m < len} a[i·stride + m]·b[k·stride + m]`: every dot product
/// of a row of `a` with a row of `b` (`A·Bᵀ`), for `i < out.len() / cols` and
/// `k < cols`; products with a row that does not fit give 0.
///
/// Blocks of up to five rows of `a` by up to five rows of `b` (by up to eight when the
/// block of `a` has three rows or fewer), both in groups as even as their number allows
/// (ten rows are two groups of five): a step of a five-by-five block loads ten vectors
/// for twenty-five multiply-adds, so the multiply-add pipes, not the loads, set the
/// pace. Every product is summed as [`dots_f64`] sums it.
pub fn dots_rows_f64(
    a: &[f64],
    b: &[f64],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    dots_rows::<F64>(a, b, stride, len, out, cols);
}

/// [`dots_rows_f64`] of f32 rows, summed in f64: each product of two f32 is exact in
/// f64, so a sum differs from the exact one only by the f64 additions' rounding.
pub fn dots_rows_f32(
    a: &[f32],
    b: &[f32],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    dots_rows::<F32InF64>(a, b, stride, len, out, cols);
}

/// [`dots_rows_f32`] in sixteen f32 lanes where it keeps eight f64 ones, at about twice
/// its speed: [`reference::dots_rows_f32_lanes`](super::reference::dots_rows_f32_lanes)
/// bit for bit.
///
/// Element `m` of a product goes to lane `m mod 16` by a fused multiply-add in f32
/// (the elements of a ragged last vector, or of a row shorter than sixteen, to the lanes
/// the loads put them in), and
/// the sixteen lanes are added in f32 by a tree shared among sixteen products, whose
/// sums leave as one vector to be widened. A lane holds `k = ⌈len/16⌉` products or
/// fewer, so a dot is within about `(k + 4)·2⁻²⁴·Σ|aₘbₘ|` of the exact one, where
/// [`dots_rows_f32`] is exact but for f64 roundings: half the multiply-adds, and a
/// sixteenth of the reductions' shuffles, at a precision that suits products of values
/// themselves rounded to f32.
pub fn dots_rows_f32_lanes(
    a: &[f32],
    b: &[f32],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    dots_rows::<F32Lanes>(a, b, stride, len, out, cols);
}

/// `[a, b]` as one vector of sixteen lanes (an insert into the upper half).
#[inline(always)]
fn join(a: wide::f32x8, b: wide::f32x8) -> f32x16 {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        use safe_arch::{cast_m256_to_m512, insert_m256_to_m512, m256};
        cast(insert_m256_to_m512::<1>(
            cast_m256_to_m512(cast::<wide::f32x8, m256>(a)),
            cast::<wide::f32x8, m256>(b),
        ))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let (a, b) = (a.to_array(), b.to_array());
        f32x16::new(core::array::from_fn(
            |k| if k < 8 { a[k] } else { b[k - 8] },
        ))
    }
}

/// A vector of [`dots_rows`]' partial sums: what it needs beyond [`Lanes`].
trait SumLanes: Lanes + core::ops::BitAnd<Output = Self> {
    /// Only the last `tail` lanes set (`0 < tail < N`), the others clear.
    fn tail_mask(tail: usize) -> Self;
    /// The lane sums of the first `used` vectors (the rest are zero).
    fn lane_sums(v: &[Self; 16], used: usize) -> [f64; 16];
}

/// Eight f64 lanes: [`sum_lanes8`] eight vectors at a time.
impl SumLanes for wide::f64x8 {
    #[inline(always)]
    fn tail_mask(tail: usize) -> Self {
        tail_mask_f64(tail)
    }
    #[inline(always)]
    fn lane_sums(v: &[Self; 16], used: usize) -> [f64; 16] {
        let mut s = [0.0; 16];
        let (s8, v8) = (s.as_chunks_mut::<8>().0, v.as_chunks::<8>().0);
        for (s, v) in s8.iter_mut().zip(v8).take(used.div_ceil(8)) {
            *s = sum_lanes8(v);
        }
        s
    }
}

/// Sixteen f32 lanes: [`lane_sums16`]'s tree, shared by all sixteen vectors, its sums
/// widened.
impl SumLanes for f32x16 {
    #[inline(always)]
    fn tail_mask(tail: usize) -> Self {
        tail_mask(tail)
    }
    #[inline(always)]
    fn lane_sums(v: &[Self; 16], _used: usize) -> [f64; 16] {
        lane_sums16(*v).map(f64::from)
    }
}

/// How [`dots_rows`] sums: vectors of partial sums `V`, loaded from rows of `Elem`.
trait DotLanes {
    type Elem: Copy + Default;
    type V: SumLanes;
    /// The vector of `s`, exactly `V::N` floats long (as the sums' type).
    fn load(s: &[Self::Elem]) -> Self::V;
    /// A row shorter than a vector (`0 < s.len() < V::N`), padded with zeros.
    #[inline(always)]
    fn load_short(s: &[Self::Elem]) -> Self::V {
        Self::load(&padded16(s)[..Self::V::N])
    }
}

/// The first sixteen values of `s`, zeros after its end, by fixed-size moves (a slice
/// copy of unknown length would call `memcpy`).
#[inline(always)]
fn padded16<T: Copy + Default>(s: &[T]) -> [T; 16] {
    let mut padded = [T::default(); 16];
    super::copy(&mut padded, s);
    padded
}

/// f64 rows, f64 lanes.
struct F64;

/// f32 rows widened (exactly) to f64 lanes.
struct F32InF64;

/// f32 rows, f32 lanes.
struct F32Lanes;

impl DotLanes for F64 {
    type Elem = f64;
    type V = wide::f64x8;
    #[inline(always)]
    fn load(s: &[f64]) -> wide::f64x8 {
        load_f64(s)
    }
}

impl DotLanes for F32InF64 {
    type Elem = f32;
    type V = wide::f64x8;
    #[inline(always)]
    fn load(s: &[f32]) -> wide::f64x8 {
        let mut a = [0.0f32; 8];
        a.copy_from_slice(s);
        wide::f64x8::from(a.map(f64::from))
    }
}

impl DotLanes for F32Lanes {
    type Elem = f32;
    type V = f32x16;
    #[inline(always)]
    fn load(s: &[f32]) -> f32x16 {
        load(s)
    }
    /// Eight floats or more: the first eight in lanes 0–7 and the eight ending at the
    /// row's end in lanes 8–15, the ones the first eight hold already cleared (two
    /// loads from the row, where a padded copy would be read back across two stores,
    /// which does not forward); fewer, padded.
    #[inline(always)]
    fn load_short(s: &[f32]) -> f32x16 {
        let n = s.len();
        if n < 8 {
            return f32x16::from(padded16(s));
        }
        let half = |h: &[f32]| {
            let mut a = [0.0f32; 8];
            a.copy_from_slice(h);
            wide::f32x8::from(a)
        };
        const LANE: i32x16 = i32x16::new([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        let keep: f32x16 =
            cast(LANE.simd_lt(i32x16::splat(8)) | LANE.simd_gt(i32x16::splat(23 - n as i32)));
        join(half(&s[..8]), half(&s[n - 8..])) & keep
    }
}

#[inline(always)]
fn dots_rows<L: DotLanes>(
    a: &[L::Elem],
    b: &[L::Elem],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
) {
    if cols == 0 {
        return;
    }
    let rows = out.len() / cols;
    let fit_a = super::reference::rows_that_fit(a.len(), stride, len).min(rows);
    let fit_b = super::reference::rows_that_fit(b.len(), stride, len).min(cols);
    for (i, row) in out.chunks_exact_mut(cols).enumerate() {
        row[if i < fit_a { fit_b } else { 0 }..].fill(0.0);
    }
    // Blocks of up to five rows of `a`, as even as their number allows (ten rows are
    // two blocks of five), each against groups of rows of `b`.
    let mut i0 = 0;
    for p in even_parts(fit_a, 5) {
        match p {
            5 => dots_rows_block::<L, 5>(a, b, stride, len, out, cols, i0, fit_b),
            4 => dots_rows_block::<L, 4>(a, b, stride, len, out, cols, i0, fit_b),
            3 => dots_rows_block::<L, 3>(a, b, stride, len, out, cols, i0, fit_b),
            2 => dots_rows_block::<L, 2>(a, b, stride, len, out, cols, i0, fit_b),
            _ => dots_rows_block::<L, 1>(a, b, stride, len, out, cols, i0, fit_b),
        }
        i0 += p;
    }
}

/// [`dots_rows`] for the `P` rows of `a` from `i0` against the first `nb` rows of
/// `b` (all of which fit: the caller checked).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn dots_rows_block<L: DotLanes, const P: usize>(
    a: &[L::Elem],
    b: &[L::Elem],
    stride: usize,
    len: usize,
    out: &mut [f64],
    cols: usize,
    i0: usize,
    nb: usize,
) {
    let ar: [&[L::Elem]; P] = core::array::from_fn(|p| &a[(i0 + p) * stride..][..len]);
    // Groups of rows of `b` as even as their number allows (ten rows are two groups of
    // five, not eight and two), each at most what fits in the 32 vector registers with
    // the `P × R` accumulators: a group costs what its multiply-adds do only when it
    // has enough of them.
    let most = if P >= 4 { 5 } else { 8 };
    let mut k0 = 0;
    for r in even_parts(nb, most) {
        let group = match r {
            8 => dots_rows_group::<L, P, 8>,
            7 => dots_rows_group::<L, P, 7>,
            6 => dots_rows_group::<L, P, 6>,
            5 => dots_rows_group::<L, P, 5>,
            4 => dots_rows_group::<L, P, 4>,
            3 => dots_rows_group::<L, P, 3>,
            2 => dots_rows_group::<L, P, 2>,
            _ => dots_rows_group::<L, P, 1>,
        };
        group(&ar, b, stride, out, cols, i0, k0);
        k0 += r;
    }
}

/// The `P × R` products (`P ≤ 5`) of rows `ar` with the `R` rows of `b` from
/// `k0`, into `out`.
#[inline(always)]
fn dots_rows_group<L: DotLanes, const P: usize, const R: usize>(
    ar: &[&[L::Elem]; P],
    b: &[L::Elem],
    stride: usize,
    out: &mut [f64],
    cols: usize,
    i0: usize,
    k0: usize,
) {
    let zero = L::V::ZERO;
    let lanes = L::V::N;
    let n = ar.first().map_or(0, |r| r.len());
    // Rows of `a` past the first P repeat the last one (their sums are never written).
    let a: [&[L::Elem]; 5] = core::array::from_fn(|p| &ar[p.min(P - 1)][..n]);
    let body = n - n % lanes;
    let br: [&[L::Elem]; R] = core::array::from_fn(|q| &b[(k0 + q) * stride..][..n]);
    // A ragged end is one more vector: the last `lanes` elements with the lanes the body
    // counted already masked off (both operands masked, so such a lane adds 0·0 and an
    // ∞ there cannot make NaN), or for a row shorter than a vector, the row padded
    // with zeros.
    let mask = (n >= lanes && body < n).then(|| L::V::tail_mask(n - body));
    #[inline(always)]
    fn tail<L: DotLanes>(row: &[L::Elem], mask: Option<L::V>) -> L::V {
        let (n, lanes) = (row.len(), L::V::N);
        match mask {
            Some(mask) => L::load(&row[n - lanes..]) & mask,
            None => L::load_short(row),
        }
    }
    // One flat array per row of `a`: LLVM keeps flat arrays of vectors in registers
    // through the loop, but stores a nested one to memory on every step.
    let mut acc0 = [zero; R];
    let mut acc1 = [zero; R];
    let mut acc2 = [zero; R];
    let mut acc3 = [zero; R];
    let mut acc4 = [zero; R];
    #[inline(always)]
    fn step<V: Lanes, const R: usize>(acc: &mut [V; R], av: V, bv: &[V; R]) {
        for (acc, bv) in acc.iter_mut().zip(bv) {
            *acc = av.mul_add(*bv, *acc);
        }
    }
    for m in (0..body / lanes).map(|v| v * lanes) {
        let bv: [L::V; R] = core::array::from_fn(|q| L::load(&br[q][m..m + lanes]));
        step(&mut acc0, L::load(&a[0][m..m + lanes]), &bv);
        if P >= 2 {
            step(&mut acc1, L::load(&a[1][m..m + lanes]), &bv);
        }
        if P >= 3 {
            step(&mut acc2, L::load(&a[2][m..m + lanes]), &bv);
        }
        if P >= 4 {
            step(&mut acc3, L::load(&a[3][m..m + lanes]), &bv);
        }
        if P >= 5 {
            step(&mut acc4, L::load(&a[4][m..m + lanes]), &bv);
        }
    }
    if body < n {
        let bv: [L::V; R] = core::array::from_fn(|q| tail::<L>(br[q], mask));
        step(&mut acc0, tail::<L>(a[0], mask), &bv);
        if P >= 2 {
            step(&mut acc1, tail::<L>(a[1], mask), &bv);
        }
        if P >= 3 {
            step(&mut acc2, tail::<L>(a[2], mask), &bv);
        }
        if P >= 4 {
            step(&mut acc3, tail::<L>(a[3], mask), &bv);
        }
        if P >= 5 {
            step(&mut acc4, tail::<L>(a[4], mask), &bv);
        }
    }
    // The P·R horizontal sums, sixteen vectors at a time (a shuffle tree shares its
    // steps among them, where a sum on its own takes a shuffle and an add a level).
    let mut flat = [zero; 48];
    for (p, acc) in [acc0, acc1, acc2, acc3, acc4].iter().take(P).enumerate() {
        flat[p * R..(p + 1) * R].copy_from_slice(acc);
    }
    let mut sums = [0.0f64; 48];
    let (sums16, flat16) = (sums.as_chunks_mut::<16>().0, flat.as_chunks::<16>().0);
    for (k, (s, v)) in sums16
        .iter_mut()
        .zip(flat16)
        .enumerate()
        .take((P * R).div_ceil(16))
    {
        *s = L::V::lane_sums(v, P * R - 16 * k);
    }
    for p in 0..P {
        out[(i0 + p) * cols + k0..][..R].copy_from_slice(&sums[p * R..(p + 1) * R]);
    }
}

/// The lane sums of eight vectors, `[Σ v₀, …, Σ v₇]`, by a tree of three levels: each
/// level adds two vectors' halves, quarters and then neighbouring lanes, seven adds and
/// fourteen two-source shuffles for all eight sums.
#[inline(always)]
fn sum_lanes8(v: &[wide::f64x8; 8]) -> [f64; 8] {
    use wide::f64x8;
    // Halves: lanes 0–3 hold four partial sums of the first vector, 4–7 of the second.
    let halves = |a: f64x8, b: f64x8| {
        let (a, b) = (a.to_array(), b.to_array());
        f64x8::new([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]])
            + f64x8::new([a[4], a[5], a[6], a[7], b[4], b[5], b[6], b[7]])
    };
    // Quarters: two partial sums each of v₀, v₂, v₁, v₃ (and of v₄, v₆, v₅, v₇).
    let quarters = |a: f64x8, b: f64x8| {
        let (a, b) = (a.to_array(), b.to_array());
        f64x8::new([a[0], a[1], b[0], b[1], a[4], a[5], b[4], b[5]])
            + f64x8::new([a[2], a[3], b[2], b[3], a[6], a[7], b[6], b[7]])
    };
    // Neighbours: the sums of v₀, v₄, v₂, v₆, v₁, v₅, v₃, v₇.
    let pairs = |a: f64x8, b: f64x8| {
        let (a, b) = (a.to_array(), b.to_array());
        f64x8::new([a[0], b[0], a[2], b[2], a[4], b[4], a[6], b[6]])
            + f64x8::new([a[1], b[1], a[3], b[3], a[5], b[5], a[7], b[7]])
    };
    let q0 = quarters(halves(v[0], v[1]), halves(v[2], v[3]));
    let q1 = quarters(halves(v[4], v[5]), halves(v[6], v[7]));
    let s = pairs(q0, q1).to_array();
    [s[0], s[4], s[2], s[6], s[1], s[5], s[3], s[7]]
}

/// `out[k·stride + q] = rows[q][k]` as f64 for `q < 8` and `k` below the shortest row's
/// length; columns whose eight slots do not fit in `out` are skipped (and with
/// `stride < 8`, where columns overlap, the later column wins). Eight columns at
/// a time: eight loads, an 8 × 8 transpose in registers, and eight contiguous stores of
/// eight floats, instead of sixty-four scattered scalar stores.
pub fn columns_f64(rows: &[&[f32]; 8], out: &mut [f64], stride: usize) {
    columns(rows, out, stride);
}

/// [`columns_f64`] into f32.
pub fn columns_f32(rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    columns(rows, out, stride);
}

#[inline(always)]
fn columns<T: Copy + From<f32>>(rows: &[&[f32]; 8], out: &mut [T], stride: usize) {
    use wide::f32x8;
    let d = super::reference::columns_that_fit(rows, out.len(), stride);
    let block = |k0: usize, out: &mut [T]| {
        let cols = f32x8::transpose(core::array::from_fn(|q| f32x8::from(&rows[q][k0..k0 + 8])));
        for (c, col) in cols.iter().enumerate() {
            let at = (k0 + c) * stride;
            out[at..at + 8].copy_from_slice(&col.to_array().map(T::from));
        }
    };
    let mut k0 = 0;
    while k0 + 8 <= d {
        block(k0, out);
        k0 += 8;
    }
    if k0 < d && d >= 8 {
        // The last eight columns: the ones already written get the same values again, in
        // the same order, so the later column still wins where columns overlap.
        block(d - 8, out);
    } else {
        for k in k0..d {
            for (q, row) in rows.iter().enumerate() {
                out[k * stride + q] = T::from(row[k]);
            }
        }
    }
}

/// The widths `d` whose rows [`project_rows_f32`] and [`project_batch_f32`] transpose in
/// registers (the others take one lane at a time).
pub const PROJECT_IN_REGISTERS: core::ops::RangeInclusive<usize> = 8..=16;

/// Calls `f::<D>(args)` (or `f::<D, G>(args)`, written `f::<_, G>(args)`) with `D = d`
/// as a constant for `d` in [`PROJECT_IN_REGISTERS`], else evaluates the fallback.
macro_rules! in_registers {
    ($d:expr, $f:ident $(::<_, $g:tt>)? ($($arg:expr),*), else $fallback:block) => {
        match $d {
            8 => $f::<8 $(, $g)?>($($arg),*),
            9 => $f::<9 $(, $g)?>($($arg),*),
            10 => $f::<10 $(, $g)?>($($arg),*),
            11 => $f::<11 $(, $g)?>($($arg),*),
            12 => $f::<12 $(, $g)?>($($arg),*),
            13 => $f::<13 $(, $g)?>($($arg),*),
            14 => $f::<14 $(, $g)?>($($arg),*),
            15 => $f::<15 $(, $g)?>($($arg),*),
            16 => $f::<16 $(, $g)?>($($arg),*),
            _ => $fallback,
        }
    };
}
pub(crate) use in_registers;

/// [`reference::project_rows_f32`](super::reference::project_rows_f32): `W` times
/// eight rows, channel-major, each sum the same chain of fused multiply-adds, so the
/// twins agree bit for bit.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] the eight rows are turned into `d` vectors of
/// eight lanes in registers (transposes of four channels, the last four ending at
/// channel `d`) and
/// each output channel is `d` multiply-adds of a broadcast weight with them: the
/// transposed rows never go through memory, where [`columns_f32`] and then
/// [`gemm_f32`] store them and read them back. Other `d` take one lane at a time.
pub fn project_rows_f32(w: &[f32], d: usize, rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    if !super::reference::project_rows_fit(w.len(), d, rows, out.len(), stride) {
        return;
    }
    in_registers!(d, project_rows(w, rows, out, stride), else {
        super::reference::project_rows_f32(w, d, rows, out, stride)
    });
}

/// [`reference::project_batch_f32`](super::reference::project_batch_f32): `W` times
/// the rows of `x` at the offsets `at`, channel-major, bit for bit what the twin writes.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] it is [`project_rows_f32`]'s computation, two
/// groups of eight rows to a sixteen-lane vector, with the width a constant and the
/// operands checked once for the whole batch instead of once a group; other `d` take
/// the twin's path.
pub fn project_batch_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    out: &mut [f32],
    stride: usize,
) {
    if !super::reference::project_batch_fit(w.len(), d, at.len(), out.len(), stride) {
        return;
    }
    in_registers!(d, project_batch::<_, false>(w, x, at, out, &mut [], stride), else {
        super::reference::project_batch_f32(w, d, x, at, out, stride)
    });
}

/// [`project_batch_f32`] into `y`, and `t = tanh(y/2)` in the same layout (what
/// [`tanh_half_f32`] of `y` writes, bit for bit), when `t` is as long as `y`; nothing
/// is written otherwise, or when [`project_batch_f32`] writes nothing.
///
/// For `d` in [`PROJECT_IN_REGISTERS`] each group's sums go through `tanh` while they
/// are in registers, so `y` is never read back for a second pass. The two parts do not
/// overlap (the multiply-adds, the transposes and `tanh` share the same two vector
/// ports): the kernel costs the projection's time plus `tanh`'s, less that pass.
pub fn project_batch_tanh_f32(
    w: &[f32],
    d: usize,
    x: &[f32],
    at: &[usize],
    y: &mut [f32],
    t: &mut [f32],
    stride: usize,
) {
    if t.len() != y.len()
        || !super::reference::project_batch_fit(w.len(), d, at.len(), y.len(), stride)
    {
        return;
    }
    in_registers!(d, project_batch::<_, true>(w, x, at, y, t, stride), else {
        super::reference::project_batch_f32(w, d, x, at, y, stride);
        tanh_half_f32(y, t);
    });
}

/// [`project_batch_f32`] for `D` channels, `8 ≤ D ≤ 16` (operands checked), with
/// `TANH` also `tanh(y/2)` into `t` (as long as `out`, checked).
///
/// Sixteen rows at a time: two groups' transposed channels side by side in one
/// sixteen-lane vector, so each multiply-add does both groups' work (on cores with
/// 512-bit multiply-add units twice the work of an eight-lane one; elsewhere the same).
/// A last group of up to eight rows goes alone.
#[inline(always)]
fn project_batch<const D: usize, const TANH: bool>(
    w: &[f32],
    x: &[f32],
    at: &[usize],
    out: &mut [f32],
    t: &mut [f32],
    stride: usize,
) {
    // The rows that fill a last, partial group, and any row that does not fit in `x`.
    let zero = [0.0f32; D];
    let row = |a: usize| -> &[f32; D] {
        x.get(a..)
            .and_then(|r| r.first_chunk::<D>())
            .unwrap_or(&zero)
    };
    let group = |g: &[usize]| -> [&[f32; D]; 8] {
        core::array::from_fn(|q| g.get(q).map_or(&zero, |&a| row(a)))
    };
    for (g, j) in at.chunks(16).zip((0..).step_by(16)) {
        if let Some((lo, hi)) = g.split_at_checked(8).filter(|(_, hi)| !hi.is_empty()) {
            // `at.len()` rounded up to eight is at least j + 16 here, and the caller
            // checked that it fits in the stride.
            let x = transposed16::<D>(&group(lo), &group(hi));
            let ys = slots::<D, LANES>(&mut out[j..], stride);
            let ts = TANH.then(|| slots::<D, LANES>(&mut t[j..], stride));
            let sums = channel_sums(w, &x);
            for (slot, v) in ys.into_iter().zip(sums) {
                v.store(slot);
            }
            for (slot, v) in ts.into_iter().flatten().zip(sums) {
                tanh_half_x16(v).store(slot);
            }
        } else {
            let x = transposed::<D>(&group(g));
            let ys = slots::<D, 8>(&mut out[j..], stride);
            let ts = TANH.then(|| slots::<D, 8>(&mut t[j..], stride));
            let sums = channel_sums(w, &x);
            for (slot, v) in ys.into_iter().zip(sums) {
                v.store(slot);
            }
            if let Some(mut ts) = ts {
                // Two channels to a sixteen-lane tanh: half the divisions of one each.
                for (slots, v) in ts.chunks_mut(2).zip(sums.chunks(2)) {
                    let pair = join(v[0], v.get(1).copied().unwrap_or(wide::f32x8::ZERO));
                    let th = tanh_half_x16(pair).to_array();
                    for (slot, th) in slots.iter_mut().zip(th.chunks_exact(8)) {
                        slot.copy_from_slice(th);
                    }
                }
            }
        }
    }
    // tanh(0/2) = 0: the slots past the last group are zeros in both.
    let end = at.len().next_multiple_of(8);
    for i in 0..D {
        super::zero(&mut out[i * stride + end..(i + 1) * stride]);
        if TANH {
            super::zero(&mut t[i * stride + end..(i + 1) * stride]);
        }
    }
}

/// [`project_rows_f32`] for `D` channels, `8 ≤ D ≤ 16` (operands checked).
#[inline(always)]
fn project_rows<const D: usize>(w: &[f32], rows: &[&[f32]; 8], out: &mut [f32], stride: usize) {
    // Every row has at least `D` values (checked), so the zeros are never taken.
    let zero = [0.0f32; D];
    let rows = rows.map(|r| r.first_chunk::<D>().unwrap_or(&zero));
    let ys = slots::<D, 8>(out, stride);
    for (slot, v) in ys.into_iter().zip(channel_sums(w, &transposed::<D>(&rows))) {
        v.store(slot);
    }
}

/// The `D` output slots of `L` floats, `stride` apart. They are taken before the
/// multiply-adds: with a slot's bounds check after them, the compiler moved the first
/// channel's whole chain below it, to run alone at the end. (The callers checked that
/// every slot fits, so the splits cannot fail.)
#[inline(always)]
fn slots<const D: usize, const L: usize>(out: &mut [f32], stride: usize) -> [&mut [f32; L]; D] {
    let mut rest = out;
    core::array::from_fn(|i| {
        let (head, tail) =
            core::mem::take(&mut rest).split_at_mut(if i + 1 < D { stride } else { L });
        rest = tail;
        head.first_chunk_mut::<L>().expect("stride ≥ L")
    })
}

/// `Σ_k w[i·D + k]·x[k]` for each output channel `i`, lane by lane, each a chain of fused multiply-adds
/// over `k` from 0 (as the twin's). All `D` chains advance together, one multiply-add
/// each per input channel: `D` independent chains keep both multiply-add pipes busy,
/// where one channel's chain at a time waits on its own latency.
#[inline(always)]
fn channel_sums<V: Lanes<Elem = f32>, const D: usize>(w: &[f32], x: &[V; D]) -> [V; D] {
    let w = &w[..D * D];
    let mut acc = [V::ZERO; D];
    for (k, &xk) in x.iter().enumerate() {
        for (i, acc) in acc.iter_mut().enumerate() {
            *acc = V::splat(w[i * D + k]).mul_add(xk, *acc);
        }
    }
    acc
}

/// Eight rows' first `D` channels (`D ≥ 4`) as `D` vectors of eight lanes, lane `q`
/// row `q`: four channels at a time, the last four ending at channel `D`.
#[inline(always)]
fn transposed<const D: usize>(rows: &[&[f32; D]; 8]) -> [wide::f32x8; D] {
    by_quads(|at| channels4(rows, at))
}

/// `D` channels (`D ≥ 4`) from `quad(k0)`, which gives channels `k0..k0 + 4`: four at
/// a time, the last four ending at channel `D`.
#[inline(always)]
fn by_quads<V: Lanes, const D: usize>(quad: impl Fn(usize) -> [V; 4]) -> [V; D] {
    let mut x = [V::ZERO; D];
    let mut k0 = 0;
    while k0 < D {
        let at = k0.min(D - 4);
        for (j, v) in quad(at).into_iter().enumerate() {
            x[at + j] = v;
        }
        k0 += 4;
    }
    x
}

/// Sixteen rows' first `D` channels (`D ≥ 4`), rows `lo` then `hi`, as `D` vectors of
/// sixteen lanes, lane `q` row `q`: [`transposed`]'s four channels at a time, on
/// sixteen-lane registers where AVX-512 has them (half the shuffles of two groups of
/// eight, and no joining of their halves after).
#[inline(always)]
fn transposed16<const D: usize>(lo: &[&[f32; D]; 8], hi: &[&[f32; D]; 8]) -> [f32x16; D] {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    ))]
    {
        by_quads(|at| channels4x16(lo, hi, at))
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f"
    )))]
    {
        let (a, b) = (transposed::<D>(lo), transposed::<D>(hi));
        core::array::from_fn(|k| cast([a[k], b[k]]))
    }
}

/// Channels `k0..k0 + 4` of sixteen rows, one vector each (lane `q` row `q`): register
/// `q` holds rows `q`, `q + 4`, `q + 8` and `q + 12` in its four quarters, so the
/// transpose is [`channels4`]'s in-quarter 4 × 4 one, eight shuffles for all sixteen
/// rows.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
#[inline(always)]
fn channels4x16<const D: usize>(
    lo: &[&[f32; D]; 8],
    hi: &[&[f32; D]; 8],
    k0: usize,
) -> [f32x16; 4] {
    use safe_arch::{cast_m256_to_m512, insert_m256_to_m512, m512, shuffle_m512};
    let r: [m512; 4] = core::array::from_fn(|q| {
        insert_m256_to_m512::<1>(
            cast_m256_to_m512(two_quads(lo[q], lo[q + 4], k0)),
            two_quads(hi[q], hi[q + 4], k0),
        )
    });
    // Pairs of channels from two registers, then single channels from two pairs.
    let (t0, t1) = (
        shuffle_m512::<0b01_00_01_00>(r[0], r[1]),
        shuffle_m512::<0b11_10_11_10>(r[0], r[1]),
    );
    let (t2, t3) = (
        shuffle_m512::<0b01_00_01_00>(r[2], r[3]),
        shuffle_m512::<0b11_10_11_10>(r[2], r[3]),
    );
    [
        shuffle_m512::<0b10_00_10_00>(t0, t2),
        shuffle_m512::<0b11_01_11_01>(t0, t2),
        shuffle_m512::<0b10_00_10_00>(t1, t3),
        shuffle_m512::<0b11_01_11_01>(t1, t3),
    ]
    .map(cast)
}

/// Channels `k0..k0 + 4` of eight rows, one vector each (lane `q` row `q`).
///
/// Each register is loaded as two rows' four channels, row `q` in its low half and row
/// `q + 4` in its high half (a load and an insert from memory, which x86 runs off the
/// shuffle port), so the transpose is the in-half 4 × 4 one: eight shuffles for four
/// channels, where an 8 × 8 transpose in registers takes twenty-four for eight.
#[inline(always)]
fn channels4<const D: usize>(rows: &[&[f32; D]; 8], k0: usize) -> [wide::f32x8; 4] {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx"
    ))]
    {
        use safe_arch::{m256, shuffle_m256, unpack_hi_m256, unpack_lo_m256};
        let r: [m256; 4] = core::array::from_fn(|q| two_quads(rows[q], rows[q + 4], k0));
        let (a0, a1) = (unpack_lo_m256(r[0], r[1]), unpack_hi_m256(r[0], r[1]));
        let (a2, a3) = (unpack_lo_m256(r[2], r[3]), unpack_hi_m256(r[2], r[3]));
        [
            shuffle_m256::<0b01_00_01_00>(a0, a2),
            shuffle_m256::<0b11_10_11_10>(a0, a2),
            shuffle_m256::<0b01_00_01_00>(a1, a3),
            shuffle_m256::<0b11_10_11_10>(a1, a3),
        ]
        .map(cast)
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx"
    )))]
    {
        let r: [[f32; 4]; 8] = core::array::from_fn(|q| quad(rows[q], k0));
        core::array::from_fn(|j| wide::f32x8::new(core::array::from_fn(|q| r[q][j])))
    }
}

/// Channels `k0..k0 + 4` of `row`.
#[inline(always)]
fn quad<const D: usize>(row: &[f32; D], k0: usize) -> [f32; 4] {
    let mut a = [0.0f32; 4];
    a.copy_from_slice(&row[k0..k0 + 4]);
    a
}

/// Channels `k0..k0 + 4` of row `lo` in the low half and of row `hi` in the high half:
/// a 128-bit load and an insert from memory.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx"
))]
#[inline(always)]
fn two_quads<const D: usize>(lo: &[f32; D], hi: &[f32; D], k0: usize) -> safe_arch::m256 {
    use safe_arch::{load_unaligned_m128, set_m128_m256};
    set_m128_m256(
        load_unaligned_m128(&quad(hi, k0)),
        load_unaligned_m128(&quad(lo, k0)),
    )
}

/// `y ← y + α·x` in f64.
pub fn axpy_f64(alpha: f64, x: &[f64], y: &mut [f64]) {
    let (x, y) = common2(x, y);
    let va = wide::f64x8::splat(alpha);
    let mut xc = x.chunks_exact(8);
    let mut yc = y.chunks_exact_mut(8);
    for (xs, ys) in (&mut xc).zip(&mut yc) {
        ys.copy_from_slice(&va.mul_add(load_f64(xs), load_f64(ys)).to_array());
    }
    for (xi, yi) in xc.remainder().iter().zip(yc.into_remainder()) {
        *yi += alpha * xi;
    }
}

/// `out[i] ← tanh(y[i]/2)` in f64, eight at a time: `sign(y)·(1 − t)/(1 + t)` with
/// `t = e^{−|y|}`, within `4·f64::EPSILON` of the exact value in absolute terms;
/// `±∞ → ±1`, NaN stays NaN.
///
/// `e^{−|y|}` is specialised to its range: `|y|` is capped at 40 (beyond it
/// `tanh(|y|/2)` rounds to 1), so `e^x` for `x ∈ [−40, 0]` needs no overflow, underflow
/// or special-value paths. `x = (16m + j)·ln2/16 + r` with `16m + j` rounded by the
/// `1.5·2⁵²` shifter; `e^x = 2^m · 2^{j/16} · e^r`, with `2^{j/16}` from a sixteen-entry
/// table (one two-register permute), `e^r` by its Taylor polynomial of degree 6 on
/// `|r| ≤ ln2/32` (relative truncation below `4.5·10⁻¹⁶`, about 2 ulp of `t`, which
/// moves `tanh` by at most 1 ulp), and `2^m` added to the exponent bits. Ten multiplies
/// per vector where a polynomial on the whole `|r| ≤ ln2/2` needs seventeen.
pub fn tanh_half(y: &[f64], out: &mut [f64]) {
    let (y, out) = common2(y, out);
    let mut yc = y.chunks_exact(8);
    let mut oc = out.chunks_exact_mut(8);
    for (ys, os) in (&mut yc).zip(&mut oc) {
        os.copy_from_slice(&tanh_half_x8(load_f64(ys)).to_array());
    }
    let (yr, or) = (yc.remainder(), oc.into_remainder());
    if !yr.is_empty() {
        let mut a = [0.0f64; 8];
        super::copy(&mut a, yr);
        super::copy(or, &tanh_half_x8(wide::f64x8::from(a)).to_array());
    }
}

/// `2^{j/16}` for `j = 0, …, 15`, correctly rounded, as two vectors for a permute.
const EXP2_SIXTEENTHS: [[f64; 8]; 2] = [
    [
        1.0,
        1.044_273_782_427_413_8,
        1.090_507_732_665_257_7,
        1.138_788_634_756_691_6,
        1.189_207_115_002_721,
        1.241_857_812_073_484,
        1.296_839_554_651_009_6,
        1.354_255_546_936_892_7,
    ],
    [
        core::f64::consts::SQRT_2,
        1.476_826_145_939_499_3,
        1.542_210_825_407_940_7,
        1.610_490_331_949_254_3,
        1.681_792_830_507_429,
        1.756_252_160_373_299_5,
        1.834_008_086_409_342_4,
        1.915_206_561_397_147_4,
    ],
];

#[inline(always)]
fn tanh_half_x8(v: wide::f64x8) -> wide::f64x8 {
    use wide::{ShuffleExt, f64x8, u64x8};
    const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²
    // ln2/16 in two parts; the high part has 17 significant bits, so k times it is
    // exact for |k| ≤ 16·40/ln2.
    const LN2_16_HI: f64 = 0.693_145_751_953_125 / 16.0;
    const LN2_16_LO: f64 = 1.428_606_820_309_417_2e-6 / 16.0;
    let c = f64x8::splat;
    let x = -v.abs().fast_min(c(40.0));
    // s = k + 1.5·2⁵² exactly, k = round(16x/ln2); its low bits hold 2⁵¹ + k.
    let s = x.mul_add(c(16.0 * core::f64::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    let r = k.mul_neg_add(c(LN2_16_HI), x);
    let r = k.mul_neg_add(c(LN2_16_LO), r);
    let mut p = c(1.0 / 720.0);
    for d in [120.0, 24.0, 6.0, 2.0, 1.0, 1.0] {
        p = p.mul_add(r, c(1.0 / d));
    }
    // j = k mod 16 is the low four bits (2⁵¹ is a multiple of 16); m = ⌊k/16⌋ is the
    // rest, shifted into the exponent field (the 2⁴⁷ left of it falls off the top).
    let bits: u64x8 = cast(s);
    let table: [f64x8; 2] = [
        f64x8::new(EXP2_SIXTEENTHS[0]),
        f64x8::new(EXP2_SIXTEENTHS[1]),
    ];
    let scaled = p * table.shuffle_wrapping(bits & u64x8::splat(15));
    // e^x ≥ e^{−40} is a normal number: adding m to the exponent is exact.
    let t: f64x8 = cast(cast::<f64x8, u64x8>(scaled) + ((bits >> 4u32) << 52u32));
    let mag = (c(1.0) - t) / (c(1.0) + t);
    let signed = mag | (v & c(-0.0));
    v.is_nan().select(v, signed)
}

/// `out[i] ← tanh(y[i]/2)` in f32, sixteen at a time, by [`tanh_half`]'s method: within
/// `4·f32::EPSILON` of the exact value in absolute terms; `±∞ → ±1`, NaN stays NaN.
///
/// The f32 version of `e^r` on `|r| ≤ ln2/32` is its Taylor polynomial of degree 3
/// (relative truncation below `10⁻⁸`, a tenth of an ulp), and the sixteen-entry table of
/// `2^{j/16}` is one vector, so the lookup is a one-register permute. It takes the
/// signed argument: `t = e^{−y}` for `y` clamped to `[−40, 40]` (up to `e^{40} < 2^{58}`,
/// a normal f32) and `(1 − t)/(1 + t)` has `y`'s sign already, two operations fewer
/// than taking `|y|` and copying the sign back.
pub fn tanh_half_f32(y: &[f32], out: &mut [f32]) {
    let (y, out) = common2(y, out);
    let mut yc = y.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for (ys, os) in (&mut yc).zip(&mut oc) {
        store(tanh_half_x16(load(ys)), os);
    }
    let (yr, or) = (yc.remainder(), oc.into_remainder());
    if !yr.is_empty() {
        super::copy(or, &tanh_half_x16(f32x16::from(padded16(yr))).to_array());
    }
}

#[inline(always)]
fn tanh_half_x16(v: f32x16) -> f32x16 {
    use wide::u32x16;
    const SHIFTER: f32 = 12_582_912.0; // 1.5·2²³
    let c = f32x16::splat;
    // e^x for x = −a: a = y clamped to [−40, 40]. x86's max and min return their
    // second operand when either is NaN, so a NaN comes through the clamp, and every
    // step after carries it to the result.
    let a = c(40.0).fast_min(c(-40.0).fast_max(v));
    // s = k + 1.5·2²³ exactly, k = round(−16a/ln2); its low bits hold 2²² + k.
    let s = a.mul_add(c(-16.0 * core::f32::consts::LOG2_E), c(SHIFTER));
    let k = s - c(SHIFTER);
    // ρ = −r = a + k·ln2/16, and e^r = 1 − ρ + ρ²/2 − ρ³/6. One multiply-add with
    // ln2/16 rounded to f32 (no second, low part): its error, |k| times half an ulp
    // of ln2/16, moves e^r by at most 2·10⁻⁶ relatively, where |k| is largest, and
    // tanh by under 0.3 ulp, as tanh is flat there.
    let rho = k.mul_add(c(core::f32::consts::LN_2 / 16.0), a);
    let p = rho
        .mul_add(c(-1.0 / 6.0), c(0.5))
        .mul_add(rho, c(-1.0))
        .mul_add(rho, c(1.0));
    // j = k mod 16 is the low four bits, all the permute reads (it wraps). The bits
    // are 0x4B40_0000 + k, so shifted left by 19 they are k·2¹⁹ = m·2²³ + j·2¹⁹
    // (mod 2³², the rest falls off the top) with m = ⌊k/16⌋: m in the exponent field,
    // and j·2¹⁹ that the table's entries have taken off already.
    let bits: u32x16 = cast(s);
    let table = f32x16::new(core::array::from_fn(|j| {
        f32::from_bits((EXP2_SIXTEENTHS[j / 8][j % 8] as f32).to_bits() - ((j as u32) << 19))
    }));
    // 2^{j/16}·2^m ∈ [2^{−58}, 2^{59}] is a normal f32: adding m (of either sign) to
    // the table entry's exponent is exact, and so is scaling by 2^m after the product
    // with p (a normal result), which this is the same number as. Taken before the
    // product, a NaN's p makes the result NaN whatever bits the addition left.
    let pow: f32x16 = cast(cast::<f32x16, u32x16>(table.shuffle_wrapping(bits)) + (bits << 19u32));
    // t = p·2^{j/16}·2^m, and 1 ∓ t each rounded once (fused).
    let th = (-p).mul_add(pow, c(1.0)) / p.mul_add(pow, c(1.0));
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let th = v.is_nan().select(v, th);
    th
}

/// [`reference::line_indices_u32`](super::reference::line_indices_u32), bit for bit:
/// with AVX-512 the sixteen products are two 32 × 32 → 64-bit multiplies of eight
/// lanes (the even halves, then the odd ones shifted down), their low halves checked
/// with two compares, and the indices interleaved back into order by two permutes.
pub fn line_indices_u32(line: &[u8; 64], n: u32, out: &mut [usize; 16]) -> bool {
    #[cfg(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f",
        target_pointer_width = "64"
    ))]
    {
        use safe_arch::{
            cmp_op_mask_u32, m512i, mul_u32_wide_m512i, permute2_i32_m512i, set_splat_i32_m512i,
            set_splat_i64_m512i, shr_all_u64_m512i,
        };
        const LT: i32 = 1; // _MM_CMPINT_LT
        let (h, n64) = (
            cast::<[u8; 64], m512i>(*line),
            set_splat_i64_m512i(i64::from(n)),
        );
        let even = mul_u32_wide_m512i(h, n64);
        let odd = mul_u32_wide_m512i(shr_all_u64_m512i(h, 32), n64);
        // The products' low halves are their even 32-bit lanes.
        let nn = set_splat_i32_m512i(n as i32);
        let low = cmp_op_mask_u32::<LT>(even, nn) | cmp_op_mask_u32::<LT>(odd, nn);
        if low & 0x5555 != 0 {
            return false;
        }
        let (even, odd) = (shr_all_u64_m512i(even, 32), shr_all_u64_m512i(odd, 32));
        // Index 2k from even's lane k, 2k + 1 from odd's (32-bit lanes 16 on).
        let pick = |k0: i32| -> m512i {
            cast::<[i32; 16], m512i>(core::array::from_fn(|j| {
                let (k, word) = (k0 + j as i32 / 4, j as i32 % 2);
                2 * k + word + if j % 4 >= 2 { 16 } else { 0 }
            }))
        };
        let lo = permute2_i32_m512i(even, pick(0), odd);
        let hi = permute2_i32_m512i(even, pick(4), odd);
        *out = cast::<[m512i; 2], [usize; 16]>([lo, hi]);
        true
    }
    #[cfg(not(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx512f",
        target_pointer_width = "64"
    )))]
    {
        super::reference::line_indices_u32(line, n, out)
    }
}

/// True when every value is finite (no NaN, no ±∞).
///
/// Branch-free past the first vector: `x·0` is `±0` for finite `x` and NaN otherwise,
/// so the sum of those products is `0` exactly when all values are finite.
pub fn all_finite(xs: &[f32]) -> bool {
    if xs.len() < LANES {
        return xs.iter().all(|x| x.is_finite());
    }
    let mut acc = f32x16::ZERO;
    for x in xs.chunks_exact(LANES) {
        acc += load(x) * f32x16::ZERO;
    }
    if !xs.len().is_multiple_of(LANES) {
        // The last sixteen values (some checked twice, which changes nothing).
        acc += load(&xs[xs.len() - LANES..]) * f32x16::ZERO;
    }
    acc.reduce_add() == 0.0
}

/// `v` into `xs`: one 512-bit store when `xs` holds sixteen floats or more (the first
/// sixteen), lanes `0..xs.len()` in the pieces of [`tail`] when it holds fewer.
#[inline(always)]
pub(crate) fn store_or_tail(v: f32x16, xs: &mut [f32]) {
    if xs.len() >= LANES {
        store(v, xs);
    } else if !xs.is_empty() {
        tail::store(v, xs);
    }
}

/// The last `rem < 16` floats of a slice as one vector, moved in fixed pieces: with
/// AVX-512, floats `0..8` as one 256-bit access when `rem ≥ 8`, each further whole
/// group of four as one 128-bit access, and the floats of a last partial group one at
/// a time; lanes from `rem` on are zero. A kernel that stores a tail with `store` and
/// one that loads it with `load` move the same pieces, so every load reads from
/// exactly one store: a load that spans two stores (the last sixteen floats read after
/// the loop's last vector and an overlapping tail were stored) cannot take its value
/// from them and waits until both reach the cache. Other targets copy through a
/// padded array.
#[cfg(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
))]
mod tail {
    use super::*;
    use safe_arch::{m128, m256};

    /// `$body` with the const `$r` set to `$len` for lengths 1 to 15, so each length
    /// gets its own fixed pieces; `$other` for any other length.
    macro_rules! by_len {
        ($len:expr, $r:ident => $body:expr, _ => $other:expr) => {
            by_len!(@arms $len, $r, $body, $other, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
        };
        (@arms $len:expr, $r:ident, $body:expr, $other:expr, $($n:literal)*) => {
            match $len {
                $($n => {
                    const $r: usize = $n;
                    $body
                })*
                _ => $other,
            }
        };
    }

    /// `xs` (fewer than sixteen floats) in lanes `0..xs.len()`, zeros above.
    #[inline(always)]
    pub(super) fn load(xs: &[f32]) -> f32x16 {
        by_len!(xs.len(), R => xs.first_chunk::<R>().map_or(f32x16::ZERO, load_n::<R>),
            _ => f32x16::new(padded16(xs)))
    }

    /// Stores lanes `0..xs.len()` of `v` into `xs` (fewer than sixteen floats).
    #[inline(always)]
    pub(super) fn store(v: f32x16, xs: &mut [f32]) {
        by_len!(xs.len(), R => if let Some(o) = xs.first_chunk_mut::<R>() {
            store_n::<R>(v, o)
        }, _ => crate::kernels::copy(xs, &v.to_array()))
    }

    /// Group `q` (floats `4q..4q + 4`) of `xs`: one 128-bit load when whole, the floats
    /// one at a time when partial, zeros past the end.
    #[inline(always)]
    fn load_quad<const R: usize>(xs: &[f32; R], q: usize) -> m128 {
        use safe_arch::{load_unaligned_m128, set_m128, zeroed_m128};
        match xs.get(4 * q..).unwrap_or(&[]) {
            [a, b, c, d, ..] => load_unaligned_m128(&[*a, *b, *c, *d]),
            [a, b, c] => set_m128(0.0, *c, *b, *a),
            [a, b] => set_m128(0.0, 0.0, *b, *a),
            [a] => set_m128(0.0, 0.0, 0.0, *a),
            [] => zeroed_m128(),
        }
    }

    #[inline(always)]
    fn load_n<const R: usize>(xs: &[f32; R]) -> f32x16 {
        use safe_arch::{load_unaligned_m256, set_m128_m256};
        let lo: m256 = match xs.first_chunk::<8>() {
            Some(eight) => load_unaligned_m256(eight),
            None => set_m128_m256(load_quad(xs, 1), load_quad(xs, 0)),
        };
        let hi = set_m128_m256(load_quad(xs, 3), load_quad(xs, 2));
        join(cast(lo), cast(hi))
    }

    /// Stores group `q` of `v`'s lanes into `xs` as [`load_quad`] reads it.
    #[inline(always)]
    fn store_quad<const R: usize>(quad: m128, xs: &mut [f32; R], q: usize) {
        use safe_arch::store_unaligned_m128;
        let part = xs.get_mut(4 * q..).unwrap_or(&mut []);
        if let Some(whole) = part.first_chunk_mut::<4>() {
            store_unaligned_m128(whole, quad);
        } else {
            for (o, x) in part.iter_mut().zip(quad.to_array()) {
                *o = x;
            }
        }
    }

    #[inline(always)]
    fn store_n<const R: usize>(v: f32x16, xs: &mut [f32; R]) {
        use safe_arch::{
            cast_to_m128_from_m256, extract_m128_from_m256, extract_m256_from_m512, m512,
            store_unaligned_m256,
        };
        let m: m512 = cast(v);
        let (lo, hi) = (
            extract_m256_from_m512::<0>(m),
            extract_m256_from_m512::<1>(m),
        );
        match xs.first_chunk_mut::<8>() {
            Some(eight) => store_unaligned_m256(eight, lo),
            None => {
                store_quad(cast_to_m128_from_m256(lo), xs, 0);
                store_quad(extract_m128_from_m256::<1>(lo), xs, 1);
            }
        }
        store_quad(cast_to_m128_from_m256(hi), xs, 2);
        store_quad(extract_m128_from_m256::<1>(hi), xs, 3);
    }
}

/// [`tail`] where there are no 512-bit registers: no pieces to match, a padded copy.
#[cfg(not(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
)))]
mod tail {
    use super::*;

    /// `xs` (fewer than sixteen floats) in lanes `0..xs.len()`, zeros above.
    #[inline(always)]
    pub(super) fn load(xs: &[f32]) -> f32x16 {
        f32x16::new(padded16(xs))
    }

    /// Stores lanes `0..xs.len()` of `v` into `xs` (fewer than sixteen floats).
    #[inline(always)]
    pub(super) fn store(v: f32x16, xs: &mut [f32]) {
        crate::kernels::copy(xs, &v.to_array())
    }
}

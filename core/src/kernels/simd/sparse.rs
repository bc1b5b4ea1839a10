//! Sparse binary rows: as index lists (gather and scatter) and as bitmaps (sixteen
//! features a word, AVX-512 mask registers where the target has them).

use super::*;

/// `Σ_{j ∈ idx} w[j]`: the dot product of a sparse binary row with `w`.
///
/// Out-of-range indices are skipped. Four partial sums on x86 and AArch64, which hide
/// the latency of the gathers' adds; elsewhere one, left to right.
pub fn sparse_dot<I: SparseIndex>(idx: &[I], w: &[f32]) -> f32 {
    gather_sum(idx, |j| w.get(j.index()).copied().unwrap_or(0.0))
}

/// Whether [`gather_sum`] keeps four partial sums: on an out-of-order core (x86,
/// AArch64) they hide the latency of the gathers' adds. Elsewhere — wasm32, whose
/// engines cost each operation, and in-order microcontrollers — one running sum, left
/// to right as the scalar twin adds, does less work.
const PARTIAL_SUMS: bool = cfg!(any(
    target_arch = "x86",
    target_arch = "x86_64",
    target_arch = "aarch64"
));

/// `Σ at(j)` over `idx`: with four partial sums where [`PARTIAL_SUMS`] says so, else
/// [`gather_sum_serial`].
#[inline(always)]
fn gather_sum<I: SparseIndex>(idx: &[I], at: impl Fn(I) -> f32) -> f32 {
    if !PARTIAL_SUMS {
        return gather_sum_serial(idx, at);
    }
    let mut acc = [0.0f32; 4];
    // Fixed-size chunks, each index named by a constant: a load at a constant offset
    // from the chunk (wasm folds it into the load; a running pointer per index does not).
    let (chunks, rest) = idx.as_chunks::<4>();
    for &[a, b, c, d] in chunks {
        acc[0] += at(a);
        acc[1] += at(b);
        acc[2] += at(c);
        acc[3] += at(d);
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for_each_index(rest, |j| s += at(j));
    s
}

/// `Σ at(j)` over `idx` in one running sum, left to right (the scalar twin's order).
#[inline(always)]
fn gather_sum_serial<I: SparseIndex>(idx: &[I], at: impl Fn(I) -> f32) -> f32 {
    let mut s = 0.0f32;
    for_each_index(idx, |j| s += at(j));
    s
}

/// `f(j)` for every index in order, four a chunk and the last one to three by name:
/// each at a constant offset from its chunk (wasm folds it into the load; a running
/// pointer per index does not), and no loop to set up for the rest.
#[inline(always)]
fn for_each_index<I: SparseIndex>(idx: &[I], mut f: impl FnMut(I)) {
    let (chunks, rest) = idx.as_chunks::<4>();
    for &[a, b, c, d] in chunks {
        f(a);
        f(b);
        f(c);
        f(d);
    }
    match *rest {
        [a] => f(a),
        [a, b] => {
            f(a);
            f(b);
        }
        [a, b, c] => {
            f(a);
            f(b);
            f(c);
        }
        _ => {}
    }
}

/// [`sparse_dot`] for indices known to be in range: the same sum in the same order,
/// without a bounds check per index (a third of the work of a short row).
///
/// # Safety
///
/// Every index of `idx` is below `w.len()`.
// Called where the crate dispatches to the SIMD kernels, and by the tests.
#[cfg_attr(any(sgld_force_scalar, sgld_scalar_target), allow(dead_code))]
#[allow(unsafe_code)]
pub(crate) unsafe fn sparse_dot_in_bounds<I: SparseIndex>(idx: &[I], w: &[f32]) -> f32 {
    debug_assert!(idx.iter().all(|j| j.index() < w.len()));
    // SAFETY: the caller guarantees every index is below `w.len()`.
    gather_sum(idx, |j| unsafe { *w.get_unchecked(j.index()) })
}

/// [`sparse_axpy`] for indices known to be in range.
///
/// # Safety
///
/// Every index of `idx` is below `y.len()`.
// Called where the crate dispatches to the SIMD kernels, and by the tests.
#[cfg_attr(any(sgld_force_scalar, sgld_scalar_target), allow(dead_code))]
#[allow(unsafe_code)]
pub(crate) unsafe fn sparse_axpy_in_bounds<I: SparseIndex>(alpha: f32, idx: &[I], y: &mut [f32]) {
    debug_assert!(idx.iter().all(|j| j.index() < y.len()));
    // SAFETY: the caller guarantees every index is below `y.len()`.
    for_each_index(idx, |j| unsafe { *y.get_unchecked_mut(j.index()) += alpha });
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
pub(super) const BITMAP_BLOCK: usize = 8;

/// `acc + v` in the lanes whose bit is set in `word`, `acc` in the others.
///
/// With AVX-512 this is one add under a mask register loaded straight from the word.
/// `wide` has no mask registers, so that path goes through `safe_arch`, the crate
/// `wide` itself is built on; other targets test the word's bits lane by lane.
#[inline(always)]
pub(super) fn add_lanes(acc: f32x16, word: u16, v: f32x16) -> f32x16 {
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
pub(super) fn table_row(table: &[u16], stride: usize, i: usize) -> &[u16] {
    i.checked_mul(stride)
        .and_then(|a| table.get(a..a.checked_add(stride)?))
        .unwrap_or(&[])
}

/// Words `first..first + N` of a bitmap row: the row's own when it has them all, else a
/// copy in `pad` with zeros for those past its end.
#[inline(always)]
pub(super) fn block_words<'a, const N: usize>(
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
pub(super) fn load_upto(xs: &[f32], at: usize) -> f32x16 {
    match xs.get(at..at.saturating_add(LANES)) {
        Some(whole) => load(whole),
        None => load_part(xs, at),
    }
}

/// [`load_upto`] of fewer than sixteen floats: out of line, so that the loops over a
/// row's vectors stay small enough to unroll and keep their vectors in registers.
#[inline(never)]
pub(super) fn load_part(xs: &[f32], at: usize) -> f32x16 {
    f32x16::new(padded16(xs.get(at..).unwrap_or(&[])))
}

/// Stores the lanes of `v` that fall inside `xs` at `at..at + 16`.
#[inline(always)]
pub(super) fn store_upto(v: f32x16, xs: &mut [f32], at: usize) {
    match xs.get_mut(at..at.saturating_add(LANES)) {
        Some(whole) => whole.copy_from_slice(&v.to_array()),
        None => store_part(v, xs, at),
    }
}

/// [`store_upto`] of fewer than sixteen floats, out of line as [`load_part`].
#[inline(never)]
pub(super) fn store_part(v: f32x16, xs: &mut [f32], at: usize) {
    crate::kernels::copy(xs.get_mut(at..).unwrap_or(&mut []), &v.to_array());
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
        crate::kernels::copy(out, &bitmap_dots16(table, stride, rows, w));
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
pub(super) fn dots_general(
    table: &[u16],
    stride: usize,
    rows: &[usize],
    w: &[f32],
    out: &mut [f32],
) {
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
pub(super) fn wide_block<const N: usize>(w: &[f32], first: usize) -> [f32x16; N] {
    let mut wv = [f32x16::ZERO; N];
    for (c, v) in wv.iter_mut().enumerate() {
        *v = load_upto(w, (first + c) * LANES);
    }
    wv
}

/// The lanes of `wv` that the words select, added up vector by vector in two chains:
/// a vector whose lanes sum to their sum.
#[inline(always)]
pub(super) fn masked_lanes<const N: usize>(words: &[u16; N], wv: &[f32x16; N]) -> f32x16 {
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
pub(super) fn fixed_vectors<const W: usize>(xs: &[f32]) -> [f32x16; W] {
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
pub(super) fn ends_inside_last<const W: usize>(len: usize) -> bool {
    W >= 1 && len > (W - 1) * LANES && len < W * LANES
}

/// Stores the `W` vectors of [`fixed_vectors`] back into the slice, a partial last one
/// in the same pieces.
#[inline(always)]
pub(super) fn store_fixed<const W: usize>(acc: &[f32x16; W], xs: &mut [f32]) {
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
pub(super) fn dots16_fixed<const W: usize>(
    table: &[[u16; W]],
    rows: &[usize],
    w: &[f32],
) -> [f32; LANES] {
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
pub(super) fn lane_sums16(v: [f32x16; 16]) -> [f32; LANES] {
    let pairs: [f32x16; 8] = core::array::from_fn(|k| pair_sums(v[2 * k], v[2 * k + 1]));
    let quads: [f32x16; 4] = core::array::from_fn(|k| pair_sums(pairs[2 * k], pairs[2 * k + 1]));
    quarter_sums(&quads).to_array()
}

/// `[a₀ + a₁, a₂ + a₃, b₀ + b₁, b₂ + b₃]` in every quarter (four lanes) of the vectors.
///
/// On sixteen rows' vectors in pairs, each quarter then holds two partial sums of each
/// row of the pair; on those results in pairs, one partial sum of each of four rows.
#[inline(always)]
pub(super) fn pair_sums(a: f32x16, b: f32x16) -> f32x16 {
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
pub(super) fn quarter_sums(t: &[f32x16; 4]) -> f32x16 {
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
pub(super) fn axpys_general(
    alphas: &[f32],
    table: &[u16],
    stride: usize,
    rows: &[usize],
    y: &mut [f32],
) {
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
pub(super) fn masked_adds<const N: usize>(acc: &mut [f32x16; N], words: &[u16; N], alpha: f32) {
    let a = f32x16::splat(alpha);
    for (v, &word) in acc.iter_mut().zip(words) {
        *v = add_lanes(*v, word, a);
    }
}

/// [`bitmap_axpys`] on a table of rows of `W ≤ 8` words: `y` in `W` vectors, the rows'
/// additions, then `y` stored back.
#[inline(never)]
pub(super) fn axpys_fixed<const W: usize>(
    table: &[[u16; W]],
    alphas: &[f32],
    rows: &[usize],
    y: &mut [f32],
) {
    let mut acc = fixed_vectors::<W>(y);
    for (&alpha, &i) in alphas.iter().zip(rows) {
        if let Some(words) = table.get(i) {
            masked_adds(&mut acc, words, alpha);
        }
    }
    store_fixed(&acc, y);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One running sum adds as the scalar twin does, so it gives the same bits, for
    /// every length's chunks and rest (the path of targets without partial sums).
    #[test]
    fn a_serial_gather_is_the_scalar_twins_sum() {
        let w: [f32; 40] = core::array::from_fn(|i| {
            libm::sinf(i as f32 * 0.37) * libm::powf(10.0, (i % 7) as f32 - 3.0)
        });
        for n in 0..=17usize {
            let idx: heapless::Vec<u8, 17> = (0..n).map(|k| ((k * 7) % 40) as u8).collect();
            let serial = gather_sum_serial(&idx, |j| w[j.index()]);
            let twin = crate::kernels::reference::sparse_dot(&idx, &w);
            assert_eq!(serial.to_bits(), twin.to_bits(), "{n} indices");
        }
    }
}

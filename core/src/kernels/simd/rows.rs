//! Matrix kernels of the ICA step: blocked products, the checked left product, dots of
//! rows, columns gathered from rows.

use super::*;

/// The sizes of `total` split into the fewest parts of at most `most` (> 0), as even as
/// their number allows, larger parts first (ten in parts of at most four: 4, 3, 3): how
/// the blocked kernels cut rows and vectors into blocks of a size known at compile time.
#[inline(always)]
pub(super) fn even_parts(total: usize, most: usize) -> impl Iterator<Item = usize> {
    let parts = total.div_ceil(most);
    (0..parts).scan(total, move |left, g| {
        let part = left.div_ceil(parts - g);
        *left -= part;
        Some(part)
    })
}

/// A vector of `N` floats of one type: what the blocked matrix kernels need of it.
pub(super) trait Lanes: Copy {
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
pub(super) fn gemm<V: Lanes>(
    a: &[V::Elem],
    b: &[V::Elem],
    out: &mut [V::Elem],
    rows: usize,
    inner: usize,
    cols: usize,
) {
    let rows = crate::kernels::reference::gemm_rows(a.len(), b.len(), out.len(), rows, inner, cols);
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
pub(super) fn gemm_block<V: Lanes, const RB: usize>(
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
pub(super) fn gemm_tile<V: Lanes, const RB: usize, const W: usize>(
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
    let Some(len) = crate::kernels::reference::mul_left_fit(a.len(), b.len(), tmp.len(), n, cols)
    else {
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
pub(super) fn mul_left_block<const N: usize, const W: usize>(
    a: &[f64],
    b: &mut [f64],
    cols: usize,
) -> bool {
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
/// its speed: [`reference::dots_rows_f32_lanes`](crate::kernels::reference::dots_rows_f32_lanes)
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
pub(super) fn join(a: wide::f32x8, b: wide::f32x8) -> f32x16 {
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
pub(super) trait SumLanes: Lanes + core::ops::BitAnd<Output = Self> {
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
pub(super) trait DotLanes {
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
pub(super) fn padded16<T: Copy + Default>(s: &[T]) -> [T; 16] {
    let mut padded = [T::default(); 16];
    crate::kernels::copy(&mut padded, s);
    padded
}

/// f64 rows, f64 lanes.
pub(super) struct F64;

/// f32 rows widened (exactly) to f64 lanes.
pub(super) struct F32InF64;

/// f32 rows, f32 lanes.
pub(super) struct F32Lanes;

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
pub(super) fn dots_rows<L: DotLanes>(
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
    let fit_a = crate::kernels::reference::rows_that_fit(a.len(), stride, len).min(rows);
    let fit_b = crate::kernels::reference::rows_that_fit(b.len(), stride, len).min(cols);
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
pub(super) fn dots_rows_block<L: DotLanes, const P: usize>(
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
pub(super) fn dots_rows_group<L: DotLanes, const P: usize, const R: usize>(
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
pub(super) fn sum_lanes8(v: &[wide::f64x8; 8]) -> [f64; 8] {
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
pub(super) fn columns<T: Copy + From<f32>>(rows: &[&[f32]; 8], out: &mut [T], stride: usize) {
    use wide::f32x8;
    let d = crate::kernels::reference::columns_that_fit(rows, out.len(), stride);
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

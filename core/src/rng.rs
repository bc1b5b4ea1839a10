//! The default generator: eight xoshiro256++ streams advanced together.
//!
//! xoshiro256++ (Blackman & Vigna 2019) has a 256-bit state, period 2²⁵⁶ − 1 and passes
//! BigCrush; its update is adds, shifts, xors and rotations, so eight copies advance in
//! one pass of 64-bit vector instructions (with AVX-512 each state word is one
//! register). Lane `k` is lane 0's stream jumped `k · 2¹²⁸` steps ahead, so the eight
//! streams never overlap within 2¹²⁸ draws each.
//!
//! A *round* advances every lane once and yields eight words, lane order. The output
//! stream is the concatenation of rounds: [`TryRng::try_fill_bytes`] writes whole rounds
//! (little-endian words) and takes a prefix of one more round for a ragged tail;
//! `next_u64` hands out the words of a buffered round one at a time. A round is eight
//! lanes of `wide::u64x8` arithmetic, vector instructions on any target with 64-bit SIMD
//! and scalar code elsewhere — the same arithmetic, so the same stream on every target.

use core::convert::Infallible;

use rand_core::{SeedableRng, TryRng};
#[cfg(not(sgld_scalar_target))]
use wide::u64x8;

/// Lanes advanced per round.
pub const LANES: usize = 8;

/// A value (an array) on 64-byte cache lines of its own: a buffer that vector stores
/// fill and loads read back right after, so that no store straddles two lines (a
/// straddling store does not forward to the load that follows it).
#[repr(align(64))]
pub(crate) struct CacheLines<T>(pub(crate) T);

/// Eight xoshiro256++ streams advanced in lockstep (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xoshiro256x8 {
    /// State word `i` of every lane.
    s: [[u64; LANES]; 4],
    /// The last round, for `next_u64`.
    buf: [u64; LANES],
    /// The next unread word of `buf` (`LANES` when empty).
    next: usize,
}

/// xoshiro256's jump polynomial: 2¹²⁸ steps.
const JUMP: [u64; 4] = [
    0x180e_c6d3_3cfd_0aba,
    0xd5a6_1266_f0c9_392c,
    0xa958_2618_e03f_c9aa,
    0x39ab_dc45_29b1_661c,
];

/// One xoshiro256++ step of a single state.
#[inline(always)]
fn step1(s: &mut [u64; 4]) -> u64 {
    let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
    let t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3].rotate_left(45);
    out
}

/// The state 2¹²⁸ steps after `s`.
fn jump(s: [u64; 4]) -> [u64; 4] {
    let mut cur = s;
    let mut acc = [0u64; 4];
    for word in JUMP {
        for b in 0..64 {
            if word & (1u64 << b) != 0 {
                for (a, c) in acc.iter_mut().zip(cur) {
                    *a ^= c;
                }
            }
            step1(&mut cur);
        }
    }
    acc
}

impl Xoshiro256x8 {
    /// The generator whose lane 0 starts at the state words `s` (not all zero; an
    /// all-zero state is replaced by a fixed non-zero one, since it would stay zero).
    pub fn from_state(s: [u64; 4]) -> Self {
        let mut lane = if s == [0; 4] {
            [
                0x9e37_79b9_7f4a_7c15,
                0xbf58_476d_1ce4_e5b9,
                0x94d0_49bb_1331_11eb,
                1,
            ]
        } else {
            s
        };
        let mut st = [[0u64; LANES]; 4];
        for k in 0..LANES {
            for (word, v) in st.iter_mut().zip(lane) {
                word[k] = v;
            }
            lane = jump(lane);
        }
        Self {
            s: st,
            buf: [0; LANES],
            next: LANES,
        }
    }

    /// A new round into the buffer of `next_u64`: out of line, so the common path of
    /// `next_u64` (one buffered word) is small enough to inline where words are drawn.
    #[inline(never)]
    fn refill(&mut self) {
        self.buf = self.round();
        self.next = 0;
    }

    /// [`round`](Self::round) one lane at a time: what `round` is on a target without
    /// 64-bit SIMD, where `wide`'s emulation of the vectors is the same arithmetic
    /// unrolled eight times over (public so the tests compare the two anywhere).
    #[inline(never)]
    pub fn round_lanes(&mut self) -> [u64; LANES] {
        let [s0, s1, s2, s3] = &mut self.s;
        let mut out = [0u64; LANES];
        for k in 0..LANES {
            let mut lane = [s0[k], s1[k], s2[k], s3[k]];
            out[k] = step1(&mut lane);
            [s0[k], s1[k], s2[k], s3[k]] = lane;
        }
        out
    }

    /// Advances every lane once and returns their outputs, lane order.
    #[cfg(sgld_scalar_target)]
    #[inline(always)]
    pub fn round(&mut self) -> [u64; LANES] {
        self.round_lanes()
    }

    /// Advances every lane once and returns their outputs, lane order.
    #[cfg(not(sgld_scalar_target))]
    #[inline(always)]
    pub fn round(&mut self) -> [u64; LANES] {
        // One vector per state word (`wide` runs it as scalar code where there is no
        // 64-bit SIMD): written per lane, the compiler mixed the lanes with shuffles.
        let rotl = |x: u64x8, r: u32| (x << r) | (x >> (64 - r));
        let [s0, s1, s2, s3] = self.s.map(u64x8::new);
        let out = rotl(s0 + s3, 23) + s0;
        let t = s1 << 17u32;
        let s2 = s2 ^ s0;
        let s3 = s3 ^ s1;
        let s1 = s1 ^ s2;
        let s0 = s0 ^ s3;
        let s2 = s2 ^ t;
        let s3 = rotl(s3, 45);
        self.s = [s0, s1, s2, s3].map(u64x8::to_array);
        out.to_array()
    }
}

impl TryRng for Xoshiro256x8 {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.try_next_u64().map(|w| (w >> 32) as u32)
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        if self.next >= LANES {
            self.refill();
        }
        // `next < LANES` here, so the index is in range (the `min` lets the compiler
        // drop the bounds check).
        let w = self.buf[self.next.min(LANES - 1)];
        self.next += 1;
        Ok(w)
    }

    /// Whole rounds as little-endian words; a ragged tail takes a prefix of one more
    /// round (the buffer of `next_u64` is neither used nor changed).
    #[inline]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let mut chunks = dst.chunks_exact_mut(8 * LANES);
        for chunk in &mut chunks {
            // One 64-byte store, so a reader's vector load of the round forwards from it.
            let bytes = self.round().map(u64::to_le_bytes);
            chunk.copy_from_slice(bytes.as_flattened());
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let r = self.round();
            for (out, w) in tail.chunks_mut(8).zip(r) {
                out.copy_from_slice(&w.to_le_bytes()[..out.len()]);
            }
        }
        Ok(())
    }
}

impl SeedableRng for Xoshiro256x8 {
    /// Lane 0's state words, little-endian.
    type Seed = [u8; 32];

    fn from_seed(seed: [u8; 32]) -> Self {
        let mut s = [0u64; 4];
        for (w, b) in s.iter_mut().zip(seed.chunks_exact(8)) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(b);
            *w = u64::from_le_bytes(bytes);
        }
        Self::from_state(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference implementation's first outputs from the state (1, 2, 3, 4).
    const REFERENCE: [u64; 10] = [
        41943041,
        58720359,
        3588806011781223,
        3591011842654386,
        9228616714210784205,
        9973669472204895162,
        14011001112246962877,
        12406186145184390807,
        15849039046786891736,
        10450023813501588000,
    ];

    #[test]
    fn lane_zero_is_the_reference_stream() {
        let mut g = Xoshiro256x8::from_state([1, 2, 3, 4]);
        for want in REFERENCE {
            assert_eq!(g.round()[0], want);
        }
    }

    #[test]
    fn lane_k_is_lane_zero_jumped_k_times() {
        let mut g = Xoshiro256x8::from_state([5, 6, 7, 8]);
        let mut lanes = [[5u64, 6, 7, 8]; LANES];
        for k in 1..LANES {
            lanes[k] = jump(lanes[k - 1]);
        }
        for _ in 0..100 {
            let r = g.round();
            for (k, lane) in lanes.iter_mut().enumerate() {
                assert_eq!(r[k], step1(lane));
            }
        }
    }

    /// The lane-at-a-time round (the scalar targets' `round`) is the vector round.
    #[test]
    fn lane_rounds_are_vector_rounds() {
        let mut a = Xoshiro256x8::from_state([11, 12, 13, 14]);
        let mut b = a.clone();
        for _ in 0..1000 {
            assert_eq!(a.round_lanes(), b.round());
        }
        assert_eq!(a, b);
    }

    #[test]
    fn jump_is_the_polynomial_of_2_pow_128_steps() {
        // Jumping is linear: jump(a ^ b) = jump(a) ^ jump(b) for xoshiro's linear engine.
        let (a, b) = ([1u64, 2, 3, 4], [0xdead, 0xbeef, 0xf00d, 0xcafe]);
        let x: [u64; 4] = core::array::from_fn(|i| a[i] ^ b[i]);
        let (ja, jb, jx) = (jump(a), jump(b), jump(x));
        for i in 0..4 {
            assert_eq!(jx[i], ja[i] ^ jb[i]);
        }
        assert_ne!(ja, a);
        // A jump is a polynomial in the one-step map, so it commutes with a step.
        let (mut stepped, mut jumped) = (a, jump(a));
        step1(&mut stepped);
        step1(&mut jumped);
        assert_eq!(jump(stepped), jumped);
    }

    #[test]
    fn bytes_and_words_come_from_the_same_rounds() {
        use rand_core::Rng;
        let mut a = Xoshiro256x8::from_state([9, 8, 7, 6]);
        let mut b = a.clone();
        let mut bytes = [0u8; 8 * LANES + 12];
        a.fill_bytes(&mut bytes);
        let words: [u64; 2 * LANES] = core::array::from_fn(|_| b.next_u64());
        for (k, w) in words.iter().enumerate().take(LANES + 1) {
            let mut chunk = [0u8; 8];
            let end = (8 * k + 8).min(bytes.len());
            chunk[..end - 8 * k].copy_from_slice(&bytes[8 * k..end]);
            let want = if k == LANES { w & 0xffff_ffff } else { *w };
            assert_eq!(u64::from_le_bytes(chunk), want, "word {k}");
        }
        assert_eq!(
            Xoshiro256x8::from_state([0; 4]),
            Xoshiro256x8::from_seed([0; 32])
        );
    }
}

//! The generator streams of a run: each a function of `--seed` and its own id
//! ([`Stream`]), so that no two of a run's random choices share draws and a chain's
//! stream depends only on the seed and its number.

/// A stream of a run's generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Chain `c`'s steps (id `c`).
    Chain(usize),
    /// The per-coordinate gradient scale of pSGLD's default step (id `u64::MAX − 2`).
    PsgldScale,
    /// The rows the mini-batch noise of eq. 10 is measured on (id `u64::MAX − 3`).
    NoiseRows,
    /// Chain `c`'s dispersed start around the mode (id `u64::MAX − 16 − c`).
    Start(usize),
    /// A network chain's initialisation (id `u64::MAX − 32 − c`).
    NetworkStart(usize),
    /// The `k`-th start of the full-data Metropolis check of a step's bias
    /// (id `u64::MAX − 64 − k`).
    BiasCheck(usize),
}

impl Stream {
    /// The stream's id.
    pub fn id(self) -> u64 {
        match self {
            Stream::Chain(c) => c as u64,
            Stream::PsgldScale => u64::MAX - 2,
            Stream::NoiseRows => u64::MAX - 3,
            Stream::Start(c) => u64::MAX - 16 - c as u64,
            Stream::NetworkStart(c) => u64::MAX - 32 - c as u64,
            Stream::BiasCheck(k) => u64::MAX - 64 - k as u64,
        }
    }

    /// The generator seed of this stream under `--seed seed`.
    pub fn seed(self, seed: u64) -> u64 {
        chain_seed(seed, self.id())
    }
}

/// Mixes a seed and a chain number into an independent generator seed (SplitMix64).
pub fn chain_seed(seed: u64, chain: u64) -> u64 {
    let mut z = seed
        ^ chain
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

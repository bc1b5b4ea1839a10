//! Shared inputs of the criterion benchmarks: data sets with the workloads' shapes.

use sgld::noise::{DefaultRng, default_rng, fill_normal};

/// a9a's shape: 32,561 rows, 123 binary features plus a bias (d = 124), 13 features
/// and the bias set in every row, labels ±1 from a logistic model.
pub struct A9aShape {
    /// Compressed-row offsets.
    pub offsets: Vec<usize>,
    /// Feature indices, sorted within a row.
    pub indices: Vec<u32>,
    /// The same rows dense (`n × d`).
    pub dense: Vec<f32>,
    /// Labels.
    pub y: Vec<f32>,
    /// Features including the bias.
    pub d: usize,
}

impl A9aShape {
    /// The data set, from a fixed seed ([`sgld_harness::bench::synthetic_a9a`], the
    /// rows `sgld bench` uses without a data directory).
    pub fn new() -> Self {
        let (n, d) = (32_561usize, 124usize);
        let mut rng = default_rng(3);
        let mut beta = vec![0.0f32; d];
        fill_normal(&mut rng, &mut beta);
        let (offsets, indices, y) = sgld_harness::bench::synthetic_a9a(n, &beta, &mut rng);
        let mut dense = vec![0.0f32; n * d];
        for (i, w) in offsets.windows(2).enumerate() {
            for &j in &indices[w[0]..w[1]] {
                dense[i * d + j as usize] = 1.0;
            }
        }
        Self {
            offsets,
            indices,
            dense,
            y,
            d,
        }
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// The rows as bitmaps, [`sgld::models::BitRows::words_per_row`] words each.
    pub fn bitmaps(&self) -> Vec<u16> {
        let rows = sgld::models::SparseRows::new(&self.offsets, &self.indices, self.d).unwrap();
        let mut words = vec![0u16; self.len() * sgld::models::BitRows::words_per_row(self.d)];
        sgld::models::BitRows::fill_from_sparse(&rows, &mut words).unwrap();
        words
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

impl Default for A9aShape {
    fn default() -> Self {
        Self::new()
    }
}

/// `count` mini-batches of `size` indices below `n`, to cycle through in a timed loop.
pub fn batches(count: usize, size: usize, n: usize, rng: &mut DefaultRng) -> Vec<Vec<usize>> {
    (0..count)
        .map(|_| {
            let mut b = vec![0usize; size];
            sgld::gradient::sample_batch(rng, n, &mut b).expect("n > 0 and size > 0");
            b
        })
        .collect()
}

/// The ICA workload's shape: 5,000 rows of 10 channels (standard normals).
pub fn ica_rows(rng: &mut DefaultRng) -> Vec<f32> {
    let mut x = vec![0.0f32; 5000 * 10];
    fill_normal(rng, &mut x);
    x
}

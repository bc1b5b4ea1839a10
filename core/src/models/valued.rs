//! Sparse rows with values (compressed rows: indices and their values), the form of
//! LIBSVM data whose non-zeros are not all 1 — tf-idf text such as rcv1, news20 and
//! real-sim — read by the generalised linear models ([`super::Glm`]).

use super::glm::{sparse_add_interleaved, sparse_dot_interleaved};
use super::{Design, SparseRows};
use crate::error::{Error, check_len};
use crate::kernels::SparseIndex;

/// Sparse rows with values: row `i` has `values[k]` at feature `indices[k]` for `k` in
/// `offsets[i]..offsets[i+1]` (0-based indices, any [`SparseIndex`] type). A GLM on them
/// costs a gather and a scatter per non-zero, whatever the number of features.
///
/// ```
/// use sgld::models::{Design, Glm, Laplace, Logit, Model, SparseRows, ValuedRows};
/// let offsets = [0, 2, 3]; // two rows: 0.5 at feature 0 and 2 at feature 3; 1.5 at 1
/// let rows = ValuedRows::new(SparseRows::new(&offsets, &[0, 3, 1], 4)?, &[0.5, 2.0, 1.5])?;
/// assert_eq!(rows.dot(0, &[1.0, 1.0, 1.0, 1.0]), 2.5);
/// let y = [1.0, -1.0];
/// let m = Glm::new(rows, &y, Logit, Laplace::new(1.0)?)?; // logistic regression
/// assert_eq!(m.row_width(), 2);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ValuedRows<'a, I = u32> {
    rows: SparseRows<'a, I>,
    values: &'a [f32],
}

impl<'a, I: SparseIndex> ValuedRows<'a, I> {
    /// Checks one finite value per index of `rows`.
    pub fn new(rows: SparseRows<'a, I>, values: &'a [f32]) -> Result<Self, Error> {
        check_len("values", rows.nnz(), values.len())?;
        crate::error::check_finite("values", values)?;
        Ok(Self { rows, values })
    }

    /// The rows' indices.
    pub fn indices(&self) -> SparseRows<'a, I> {
        self.rows
    }

    /// Row `i`'s indices and values (both empty past the end).
    pub fn row(&self, i: usize) -> (&'a [I], &'a [f32]) {
        let (start, end) = self.rows.extent(i);
        match self.values.get(start..end) {
            Some(v) => (self.rows.row(i), v),
            None => (&[], &[]),
        }
    }
}

impl<I: SparseIndex> Design for ValuedRows<'_, I> {
    const INTERLEAVED: bool = true;
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn dim(&self) -> usize {
        self.rows.dim()
    }
    /// `Σₖ values[k] θ[indices[k]]` in four partial sums (the gathers' adds overlap).
    fn dot(&self, i: usize, theta: &[f32]) -> f32 {
        let (idx, val) = self.row(i);
        let term = |k: usize| theta.get(idx[k].index()).map_or(0.0, |t| t * val[k]);
        let mut acc = [0.0f32; 4];
        let whole = idx.len() / 4 * 4;
        for k in (0..whole).step_by(4) {
            for (l, a) in acc.iter_mut().enumerate() {
                *a += term(k + l);
            }
        }
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for k in whole..idx.len() {
            s += term(k);
        }
        s
    }
    fn add_scaled(&self, i: usize, c: f32, grad: &mut [f32]) {
        let (idx, val) = self.row(i);
        for (&j, &v) in idx.iter().zip(val) {
            if let Some(g) = grad.get_mut(j.index()) {
                *g += c * v;
            }
        }
    }
    fn dot_interleaved<const K: usize>(&self, i: usize, thetas: &[[f32; K]], out: &mut [f32; K]) {
        let (idx, val) = self.row(i);
        *out = sparse_dot_interleaved(
            idx.iter().map(|j| j.index()).zip(val.iter().copied()),
            thetas,
        );
    }
    fn add_scaled_interleaved<const K: usize>(
        &self,
        i: usize,
        c: &[f32; K],
        grads: &mut [[f32; K]],
    ) {
        let (idx, val) = self.row(i);
        sparse_add_interleaved(
            idx.iter().map(|j| j.index()).zip(val.iter().copied()),
            c,
            grads,
        );
    }
    fn prefetch(&self, i: usize) {
        let (idx, val) = self.row(i);
        crate::kernels::prefetch(idx);
        crate::kernels::prefetch(val);
    }
    /// The rows' mean count of non-zeros, rounded up.
    fn row_width(&self) -> usize {
        self.rows.mean_width()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_their_values_and_refuse_a_mismatch() {
        let offsets = [0, 3, 3, 5];
        let idx = [0u32, 2, 6, 1, 6];
        let vals = [1.0, -2.0, 0.5, 3.0, 4.0];
        let rows = ValuedRows::new(SparseRows::new(&offsets, &idx, 7).unwrap(), &vals).unwrap();
        assert_eq!(rows.row(0), (&idx[..3], &vals[..3]));
        assert_eq!(rows.row(1), (&[][..], &[][..]));
        assert_eq!(rows.row(9), (&[][..], &[][..]));
        let theta = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        assert_eq!(rows.dot(0, &theta), 1.0 - 6.0 + 3.5);
        assert_eq!(rows.dot(2, &theta), 6.0 + 28.0);
        assert_eq!(rows.dot(5, &theta), 0.0);
        let mut g = [0.0f32; 7];
        rows.add_scaled(2, 0.5, &mut g);
        rows.add_scaled(8, 0.5, &mut g);
        assert_eq!(g, [0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 2.0]);
        assert_eq!(rows.row_width(), 2);
        let sparse = SparseRows::new(&offsets, &idx, 7).unwrap();
        assert!(ValuedRows::new(sparse, &vals[..4]).is_err());
        assert!(ValuedRows::new(sparse, &[1.0, 2.0, f32::NAN, 1.0, 1.0]).is_err());
    }
}

//! The matrix product of a dense layer, `C += A · B` with `B` the layer's weight, in two
//! implementations chosen once at load:
//!
//! - **Panels** (x86-64 with AVX2 and FMA, i.e. every x86 server of the last ten years): the
//!   weight is stored once, at load, as panels of 16 columns (`k × 16` floats each, contiguous),
//!   and a 6×16 register-blocked kernel multiplies 6 rows of `A` by a panel, the inner dimension
//!   cut in blocks of `KC` so a panel block sits in L1 and the rows of `A` in L2.
//!   `matrixmultiply` packs its `B` on every call, which for a query (20 rows) costs as much as
//!   the arithmetic: the whole 42 MB of weights read and written once more per text; here they
//!   are only read.
//! - **Row-major** (any other machine): `[k, n]` row-major, through `matrixmultiply`.
//!
//! Each output element is summed in an order that depends only on `k` (never on how many rows
//! are multiplied together or on which columns a thread takes), so a text gets the same vector
//! alone or in a batch.

/// Columns per panel: two AVX registers.
const PANEL: usize = 16;
/// Rows per kernel call: 6 × 2 accumulators, 2 panel loads and a broadcast fit the 16 registers.
const ROWS: usize = 6;
/// The inner dimension's block: a 256 × 16 panel block is 16 KB (L1), six rows' blocks 6 KB.
const KC: usize = 256;

/// A weight matrix `[k, n]` in the layout the product uses.
pub(super) enum Weight {
    /// Panels of `PANEL` columns, each `k × PANEL` row-major, panel after panel (`n % PANEL ==
    /// 0`). Only built when the CPU has AVX2 and FMA.
    Panels(Vec<f32>),
    /// `[k, n]` row-major, for `matrixmultiply`.
    RowMajor(Vec<f32>),
}

/// Whether this CPU runs the panel kernel.
pub(super) fn panels_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Weight {
    /// `row_major` (`[k, n]`) in the layout this CPU multiplies fastest, or in row-major when
    /// `panels` is false.
    pub(super) fn new(row_major: Vec<f32>, k: usize, n: usize, panels: bool) -> Weight {
        if !panels || !n.is_multiple_of(PANEL) {
            return Weight::RowMajor(row_major);
        }
        let mut packed = Vec::with_capacity(k * n);
        for panel in 0..n / PANEL {
            for row in row_major.chunks_exact(n) {
                packed.extend_from_slice(&row[panel * PANEL..(panel + 1) * PANEL]);
            }
        }
        Weight::Panels(packed)
    }

    /// The weight's element at row `i`, column `j` (for tests).
    #[cfg(test)]
    pub(super) fn at(&self, i: usize, j: usize, k: usize, n: usize) -> f32 {
        match self {
            Weight::Panels(packed) => packed[(j / PANEL) * k * PANEL + i * PANEL + j % PANEL],
            Weight::RowMajor(values) => values[i * n + j],
        }
    }

    /// How finely the columns can be split between threads.
    pub(super) fn column_step(&self) -> usize {
        PANEL
    }

    /// `C[:, columns] += A · B[:, columns]` for `rows` rows; A is `rows × k`, C `rows × n`, both
    /// row-major.
    ///
    /// # Safety
    /// `a` must hold `rows × k` floats and `c` address `rows × n` floats; no other thread may
    /// touch `columns` of `c` during the call; `columns` must lie within `0..n` and start and
    /// end on a multiple of `column_step()` (or at `n`).
    pub(super) unsafe fn multiply_add(
        &self,
        a: &[f32],
        rows: usize,
        k: usize,
        n: usize,
        c: *mut f32,
        columns: std::ops::Range<usize>,
    ) {
        debug_assert!(a.len() >= rows * k && columns.end <= n);
        match self {
            #[cfg(target_arch = "x86_64")]
            Weight::Panels(packed) => {
                // SAFETY: `Panels` is only built when the CPU has AVX2 and FMA; the sizes are the
                // caller's contract.
                unsafe { panels_multiply_add(a, rows, k, n, packed, c, columns) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            Weight::Panels(_) => unreachable!("panels are only built on x86-64"),
            Weight::RowMajor(weight) => {
                // SAFETY: A is rows×k row-major inside `a`; B is the k×(columns) block of the
                // k×n row-major weight starting at column `columns.start` (row stride n); C is
                // the same block of the rows×n output, ours alone by the caller's contract. C
                // does not alias A or B.
                unsafe {
                    matrixmultiply::sgemm(
                        rows,
                        k,
                        columns.len(),
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        weight.as_ptr().add(columns.start),
                        n as isize,
                        1,
                        1.0,
                        c.add(columns.start),
                        n as isize,
                        1,
                    );
                }
            }
        }
    }
}

/// The panel product: for each block of the inner dimension, each panel of the columns, each
/// six rows.
///
/// # Safety
/// As `Weight::multiply_add`, plus: the CPU has AVX2 and FMA, and `packed` holds `k × n`
/// floats in panels.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn panels_multiply_add(
    a: &[f32],
    rows: usize,
    k: usize,
    n: usize,
    packed: &[f32],
    c: *mut f32,
    columns: std::ops::Range<usize>,
) {
    debug_assert!(
        packed.len() == k * n
            && columns.start.is_multiple_of(PANEL)
            && columns.end.is_multiple_of(PANEL)
    );
    let mut depth = 0;
    while depth < k {
        let block = KC.min(k - depth);
        for panel in columns.start / PANEL..columns.end / PANEL {
            let b = &packed[panel * k * PANEL + depth * PANEL..][..block * PANEL];
            let mut row = 0;
            while row < rows {
                let count = ROWS.min(rows - row);
                let a = &a[row * k + depth..];
                // SAFETY: rows row..row+count of C exist (row + count ≤ rows), columns
                // panel·16..+16 lie within `columns`, which is ours.
                let c = unsafe { c.add(row * n + panel * PANEL) };
                // SAFETY: the CPU has AVX2 and FMA (our contract); `a` holds `count` rows of
                // stride `k` with `block` values each from its start, `b` holds `block` rows of
                // 16, `c` as above.
                unsafe {
                    match count {
                        6 => kernel::<6>(a, k, b, block, c, n),
                        5 => kernel::<5>(a, k, b, block, c, n),
                        4 => kernel::<4>(a, k, b, block, c, n),
                        3 => kernel::<3>(a, k, b, block, c, n),
                        2 => kernel::<2>(a, k, b, block, c, n),
                        _ => kernel::<1>(a, k, b, block, c, n),
                    }
                }
                row += count;
            }
        }
        depth += block;
    }
}

/// `C[0..R, 0..16] += A[0..R, 0..depth] · B[0..depth, 0..16]`, the sums in registers.
///
/// # Safety
/// The CPU has AVX2 and FMA; `a` holds R rows of stride `stride` with `depth` values each from
/// its start (the last row may end there); `b` holds `depth × 16` floats; `c` addresses R rows
/// of stride `c_stride` with 16 floats each, which no one else touches during the call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn kernel<const R: usize>(
    a: &[f32],
    stride: usize,
    b: &[f32],
    depth: usize,
    c: *mut f32,
    c_stride: usize,
) {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps, _mm256_storeu_ps,
    };
    assert!(b.len() >= depth * PANEL && (R == 0 || a.len() >= (R - 1) * stride + depth));
    let mut sums: [[__m256; 2]; R] = [[_mm256_setzero_ps(); 2]; R];
    let a = a.as_ptr();
    let b = b.as_ptr();
    for i in 0..depth {
        // SAFETY: i < depth, so the panel row i (16 floats) is within `b` (asserted above).
        let (low, high) = unsafe {
            (
                _mm256_loadu_ps(b.add(i * PANEL)),
                _mm256_loadu_ps(b.add(i * PANEL + 8)),
            )
        };
        for (r, sum) in sums.iter_mut().enumerate() {
            // SAFETY: element i of row r < R is within `a` (asserted above).
            let value = unsafe { _mm256_broadcast_ss(&*a.add(r * stride + i)) };
            sum[0] = _mm256_fmadd_ps(value, low, sum[0]);
            sum[1] = _mm256_fmadd_ps(value, high, sum[1]);
        }
    }
    for (r, sum) in sums.iter().enumerate() {
        // SAFETY: row r of C has 16 floats from `c + r·c_stride`, ours alone (the contract).
        unsafe {
            let out = c.add(r * c_stride);
            _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), sum[0]));
            _mm256_storeu_ps(
                out.add(8),
                _mm256_add_ps(_mm256_loadu_ps(out.add(8)), sum[1]),
            );
        }
    }
}

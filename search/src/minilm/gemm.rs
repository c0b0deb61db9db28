//! The matrix product of a dense layer, `C += A · B` with `B` the layer's weight, in two
//! implementations chosen once at load:
//!
//! - **Panels** (x86-64 with AVX2, FMA and F16C, i.e. every x86 server of the last ten years):
//!   the weight is stored once, at load, as panels of 16 columns (`k × 16` values each,
//!   contiguous) in half precision, and a 6×16 register-blocked kernel multiplies 6 rows of `A`
//!   by a panel, widening each panel row to single precision in registers (`vcvtph2ps`), the
//!   inner dimension cut in blocks of `KC` so a panel block sits in L1 and the rows of `A` in L2.
//!   A query (a dozen rows) reads every weight once and does little with it: its time is the
//!   memory traffic of the weights, which half precision halves (90 MB → 45 MB a query; the
//!   model's vectors move by ~1e-3 in cosine, docs/search.md). The sums stay in single
//!   precision.
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
    /// 0`), as IEEE half-precision bits. Only built when the CPU has AVX2, FMA and F16C.
    Panels(Vec<u16>),
    /// `[k, n]` row-major, for `matrixmultiply`.
    RowMajor(Vec<f32>),
}

/// Whether this CPU runs the panel kernel.
pub(super) fn panels_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
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
                packed.extend(
                    row[panel * PANEL..(panel + 1) * PANEL]
                        .iter()
                        .map(|&value| half_bits(value)),
                );
            }
        }
        Weight::Panels(packed)
    }

    /// The weight's element at row `i`, column `j` (for tests).
    #[cfg(test)]
    pub(super) fn at(&self, i: usize, j: usize, k: usize, n: usize) -> f32 {
        match self {
            Weight::Panels(packed) => {
                single_of_half(packed[(j / PANEL) * k * PANEL + i * PANEL + j % PANEL])
            }
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

/// `value` as IEEE 754 half-precision bits, rounded to the nearest (ties to even); beyond the
/// half range, infinity (no weight of a trained model comes near 65,504).
pub(super) fn half_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if exponent == 0xff {
        return sign | 0x7c00 | if mantissa != 0 { 0x200 } else { 0 };
    }
    let half_exponent = exponent - 127 + 15;
    if half_exponent >= 0x1f {
        return sign | 0x7c00;
    }
    if half_exponent <= 0 {
        // A subnormal half (or zero): the 24-bit significand shifted into 10 bits.
        if half_exponent < -10 {
            return sign;
        }
        let significand = mantissa | 0x80_0000;
        let shift = (14 - half_exponent) as u32;
        let rounded = significand + (1 << (shift - 1)) - 1 + ((significand >> shift) & 1);
        return sign | (rounded >> shift) as u16;
    }
    let rounded = mantissa + 0xfff + ((mantissa >> 13) & 1);
    // A carry out of the mantissa raises the exponent, as it should.
    let magnitude = ((half_exponent as u32) << 10) + (rounded >> 13);
    if magnitude >= 0x7c00 {
        return sign | 0x7c00;
    }
    sign | magnitude as u16
}

/// The single-precision value of half-precision `bits` (exact).
#[cfg(test)]
pub(super) fn single_of_half(bits: u16) -> f32 {
    let negative = bits & 0x8000 != 0;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match exponent {
        0 => mantissa as f32 * (1.0 / 16_777_216.0),
        0x1f => f32::from_bits(0x7f80_0000 | (mantissa << 13)),
        _ => f32::from_bits(((exponent + 112) << 23) | (mantissa << 13)),
    };
    if negative { -magnitude } else { magnitude }
}

/// The panel product: for each block of the inner dimension, each panel of the columns, each
/// six rows.
///
/// # Safety
/// As `Weight::multiply_add`, plus: the CPU has AVX2, FMA and F16C, and `packed` holds `k × n`
/// halves in panels.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn panels_multiply_add(
    a: &[f32],
    rows: usize,
    k: usize,
    n: usize,
    packed: &[u16],
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
                // SAFETY: the CPU has AVX2, FMA and F16C (our contract); `a` holds `count` rows of
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
/// The CPU has AVX2, FMA and F16C; `a` holds R rows of stride `stride` with `depth` values each
/// from its start (the last row may end there); `b` holds `depth × 16` halves; `c` addresses R
/// rows of stride `c_stride` with 16 floats each, which no one else touches during the call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn kernel<const R: usize>(
    a: &[f32],
    stride: usize,
    b: &[u16],
    depth: usize,
    c: *mut f32,
    c_stride: usize,
) {
    use std::arch::x86_64::{
        __m128i, __m256, _mm_loadu_si128, _mm256_add_ps, _mm256_broadcast_ss, _mm256_cvtph_ps,
        _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    assert!(b.len() >= depth * PANEL && (R == 0 || a.len() >= (R - 1) * stride + depth));
    let mut sums: [[__m256; 2]; R] = [[_mm256_setzero_ps(); 2]; R];
    let a = a.as_ptr();
    let b = b.as_ptr();
    for i in 0..depth {
        // SAFETY: i < depth, so the panel row i (16 halves, 32 bytes) is within `b` (asserted
        // above); unaligned loads.
        let (low, high) = unsafe {
            (
                _mm256_cvtph_ps(_mm_loadu_si128(b.add(i * PANEL).cast::<__m128i>())),
                _mm256_cvtph_ps(_mm_loadu_si128(b.add(i * PANEL + 8).cast::<__m128i>())),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_rounds_to_nearest_and_widens_exactly() {
        for value in [
            0.0f32,
            1.0,
            -2.5,
            0.099_975_586,
            65_504.0,
            6.103_515_6e-5,
            5.960_464_5e-8,
        ] {
            assert_eq!(single_of_half(half_bits(value)), value, "{value} is a half");
        }
        assert_eq!(half_bits(-0.0), 0x8000);
        assert_eq!(half_bits(1.0), 0x3c00);
        // 1 + 2^-11 lies halfway between two halves: ties go to the even one (1.0).
        assert_eq!(half_bits(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(half_bits(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(half_bits(1e6), 0x7c00);
        assert_eq!(half_bits(1e-9), 0);
        // Every weight-sized value comes back within half an ulp (2^-11 relative).
        for step in 0..10_000 {
            let value = (step as f32 - 5_000.0) * 1.37e-4;
            let back = single_of_half(half_bits(value));
            assert!(
                (back - value).abs() <= value.abs() / 2048.0 + 3e-8,
                "{value} → {back}"
            );
        }
    }
}

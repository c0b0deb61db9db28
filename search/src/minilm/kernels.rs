//! The numeric kernels of the encoder: a dense layer as one matrix product (split over two
//! threads when a single text is embedded), layer normalisation, GELU and the softmax's `exp`.
//!
//! `exp` and `erf` are written without library calls or branches so the compiler vectorises the
//! loops over a whole row or a whole intermediate matrix: GELU alone is ~1,500 `exp` per token
//! per layer, and libm's scalar `expf` made it a tenth of a query's time.

use super::gemm::{self, Weight};

/// A dense layer `y = x · W + b`, its weight stored transposed from PyTorch's `[out, in]` to
/// `[in, out]`, in the layout this CPU multiplies fastest (`gemm.rs`).
pub(super) struct Dense {
    pub(super) weight: Weight,
    pub(super) bias: Vec<f32>,
    pub(super) inputs: usize,
    pub(super) outputs: usize,
}

impl Dense {
    /// A dense layer from PyTorch weights (`[out, in]` row-major, one block per stacked layer,
    /// e.g. query, key and value fused into one `[3·384, 384]` product) and their biases.
    pub(super) fn from_pytorch(blocks: &[(&[f32], &[f32])], inputs: usize) -> Dense {
        Dense::from_pytorch_in(blocks, inputs, gemm::panels_supported())
    }

    /// As `from_pytorch`, in the panel layout or not.
    pub(super) fn from_pytorch_in(
        blocks: &[(&[f32], &[f32])],
        inputs: usize,
        panels: bool,
    ) -> Dense {
        let outputs: usize = blocks.iter().map(|(_, bias)| bias.len()).sum();
        let mut weight = vec![0.0f32; inputs * outputs];
        let mut bias = Vec::with_capacity(outputs);
        let mut first_output = 0;
        for (block, block_bias) in blocks {
            debug_assert_eq!(block.len(), block_bias.len() * inputs);
            for (out, row) in block.chunks_exact(inputs).enumerate() {
                for (input, value) in row.iter().enumerate() {
                    weight[input * outputs + first_output + out] = *value;
                }
            }
            bias.extend_from_slice(block_bias);
            first_output += block_bias.len();
        }
        Dense {
            weight: Weight::new(weight, inputs, outputs, panels),
            bias,
            inputs,
            outputs,
        }
    }

    /// `output += input · W` for `rows` rows (`output` already holds the bias, and the residual
    /// when the layer adds one). With `threads` 2 and enough work the output's columns are split
    /// in two, one half on a scoped helper thread: every output element is the same sum in the
    /// same order either way, so the split never changes a result.
    pub(super) fn accumulate(
        &self,
        input: &[f32],
        rows: usize,
        output: &mut [f32],
        threads: usize,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        assert!(input.len() >= rows * k && output.len() >= rows * n);
        // Below this many multiply-adds a thread's start-up (~20–50 µs) costs more than it saves.
        const SPLIT_MIN_WORK: usize = 2_000_000;
        if threads < 2 || rows * k * n < SPLIT_MIN_WORK {
            // SAFETY: the sizes were checked above; the whole column range is ours.
            unsafe {
                self.weight
                    .multiply_add(input, rows, k, n, output.as_mut_ptr(), 0..n)
            };
            return;
        }
        let middle = (n / 2).next_multiple_of(self.weight.column_step()).min(n);
        let output = SharedOutput(output.as_mut_ptr());
        std::thread::scope(|scope| {
            let helper_output = &output;
            scope.spawn(move || {
                // SAFETY: the helper writes only columns middle..n of each row, the caller only
                // 0..middle: disjoint, both on the kernel's column step, and within the checked
                // `output`, which outlives the scope.
                unsafe {
                    self.weight
                        .multiply_add(input, rows, k, n, helper_output.0, middle..n)
                };
            });
            // SAFETY: as above, the other half.
            unsafe {
                self.weight
                    .multiply_add(input, rows, k, n, output.0, 0..middle)
            };
        });
    }

    /// Fills `output` with the bias, one row per input row.
    pub(super) fn fill_bias(&self, rows: usize, output: &mut Vec<f32>) {
        output.clear();
        for _ in 0..rows {
            output.extend_from_slice(&self.bias);
        }
    }

    /// Adds the bias to every row of `rows` (a residual the layer's product is added to).
    pub(super) fn add_bias(&self, rows: &mut [f32]) {
        for row in rows.chunks_exact_mut(self.outputs) {
            for (x, b) in row.iter_mut().zip(&self.bias) {
                *x += b;
            }
        }
    }
}

/// The output pointer shared by the two halves of a split product, which write disjoint columns.
struct SharedOutput(*mut f32);

// SAFETY: the pointer is only dereferenced by `Dense::columns` on disjoint column ranges, inside
// a scope that ends before the buffer it points into can be used again.
unsafe impl Sync for SharedOutput {}

/// A layer normalisation's scale and shift.
pub(super) struct Norm {
    pub(super) weight: Vec<f32>,
    pub(super) bias: Vec<f32>,
}

/// Normalises each row of `width` values to zero mean and unit variance (`epsilon` added to the
/// variance: BERT's 1e-12, MPNet's 1e-5), then scales and shifts.
#[inline(never)]
pub(super) fn layer_norm(hidden: &mut [f32], width: usize, norm: &Norm, epsilon: f32) {
    for row in hidden.chunks_exact_mut(width) {
        let mean = row.iter().sum::<f32>() / width as f32;
        let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / width as f32;
        let inverse = 1.0 / (variance + epsilon).sqrt();
        for ((x, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *x = (*x - mean) * inverse * w + b;
        }
    }
}

/// GELU with the exact (erf) form BERT uses, in place.
#[inline(never)]
pub(super) fn gelu_in_place(values: &mut [f32]) {
    for x in values {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The error function, Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), branch-free.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    let magnitude = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * magnitude);
    let polynomial = t
        * (0.254_829_6
            + t * (-0.284_496_7 + t * (1.421_413_7 + t * (-1.453_152 + t * 1.061_405_4))));
    (1.0 - polynomial * exp(-magnitude * magnitude)).copysign(x)
}

/// `e^x` to within 2e-7 relative error for x in [-87, 88] (and clamped to that range: below it
/// the result is ~1e-38, where the softmax and GELU need nothing finer), branch-free so loops
/// over it vectorise. `x = n·ln 2 + r` with |r| ≤ ln 2 / 2, `e^r` by its Taylor polynomial of
/// degree 6, `2^n` built in the exponent bits.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so `n · LN2_HIGH` is exact for the n that occur.
    const LN2_HIGH: f32 = 0.693_145_75;
    const LN2_LOW: f32 = 1.428_606_8e-6;
    // 1.5 · 2^23: adding it rounds to an integer held in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let polynomial = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // The low bits of `shifted` are n + 0x400000 (in two's complement within the mantissa).
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    let scale = f32::from_bits(n_bits.wrapping_add(127) << 23);
    polynomial * scale
}

/// Softmax of `scores` in place.
pub(super) fn softmax_in_place(scores: &mut [f32]) {
    let largest = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for score in scores.iter_mut() {
        *score = exp(*score - largest);
        total += *score;
    }
    let inverse = 1.0 / total;
    for score in scores.iter_mut() {
        *score *= inverse;
    }
}

/// Dot product of two short rows (one attention head's 32 values), in eight lanes.
#[inline(always)]
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    let tail: f32 = a
        .chunks_exact(8)
        .remainder()
        .iter()
        .zip(b.chunks_exact(8).remainder())
        .map(|(x, y)| x * y)
        .sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_matches_the_library_within_its_bound() {
        let mut worst = 0.0f32;
        let mut x = -87.0f32;
        while x < 88.0 {
            let exact = x.exp();
            worst = worst.max(((exp(x) - exact) / exact).abs());
            x += 0.013;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
        assert!(exp(1000.0).is_finite());
    }

    #[test]
    fn erf_matches_known_values() {
        // erf(0.5), erf(1), erf(2) to 7 places.
        for (x, expected) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (-1.0, -0.842_700_8),
        ] {
            assert!((erf(x) - expected).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn products_match_a_plain_loop_in_both_layouts_split_or_not() {
        // k 384 is one full and one partial block of the inner dimension; 25 rows end on a
        // partial block of six.
        let (k, n, rows) = (384, 1152, 25);
        // Multiples of 1/1024 in [-0.5, 0.5): exact in half precision, so both layouts hold
        // the same weights and differ only in the order of additions.
        let weight: Vec<f32> = (0..k * n)
            .map(|i| ((i * 7919) % 1024) as f32 / 1024.0 - 0.5)
            .collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
        let input: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 104_729) % 997) as f32 / 997.0 - 0.5)
            .collect();
        let mut layouts = vec![false];
        if gemm::panels_supported() {
            layouts.push(true);
        }
        let mut results = Vec::new();
        for panels in layouts {
            let dense = Dense::from_pytorch_in(&[(&weight, &bias)], k, panels);
            let mut whole = Vec::new();
            dense.fill_bias(rows, &mut whole);
            dense.accumulate(&input, rows, &mut whole, 1);
            let mut split = Vec::new();
            dense.fill_bias(rows, &mut split);
            dense.accumulate(&input, rows, &mut split, 2);
            assert_eq!(whole, split, "panels {panels}");
            // One row alone gives that row of the whole (what makes a batch equal one by one).
            let mut alone = Vec::new();
            dense.fill_bias(1, &mut alone);
            dense.accumulate(&input[7 * k..8 * k], 1, &mut alone, 1);
            assert_eq!(alone, whole[7 * n..8 * n], "panels {panels}");
            for (row, out) in whole.chunks_exact(n).enumerate() {
                for column in (0..n).step_by(7) {
                    // `weight` is PyTorch's [out, in]: row `column` holds that output's weights.
                    let expected: f32 = bias[column]
                        + (0..k)
                            .map(|i| input[row * k + i] * weight[column * k + i])
                            .sum::<f32>();
                    assert!(
                        (out[column] - expected).abs() < 1e-3,
                        "panels {panels}: {} vs {expected}",
                        out[column]
                    );
                    assert_eq!(dense.weight.at(0, column, k, n), weight[column * k]);
                }
            }
            results.push(whole);
        }
        if let [row_major, panels] = results.as_slice() {
            let largest = row_major
                .iter()
                .zip(panels)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(largest < 1e-4, "the layouts differ by {largest}");
        }
    }
}

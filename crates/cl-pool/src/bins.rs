//! The pool's bin arithmetic, bit for bit PyOpenCL's (`src/mempool.hpp`, `src/bitlog.cpp`).
//!
//! A request of `size` bytes goes to bin `bin_number(size)`; every block of that bin is
//! `alloc_size(bin)` bytes, the **largest** size that shares the request's leading
//! `leading_bits + 1` bits, so any block of a bin can serve any request mapped to it. Sizes below
//! `2^(L+1)` are exact; above, the rounding wastes less than `size / 2^L` (6.25 % for the default
//! `L = 4`). Sizes 0 and 1 share bin 0, whose blocks are 1 byte.
//!
//! All arithmetic is on `u64`/`usize` (PyOpenCL's 32-bit shift bug, fixed in its PR #453, cannot
//! recur: sizes past 2^32 are tested).

use std::fmt;

/// A bin number (PyOpenCL's `bin_nr_t`, a `uint32`).
pub type BinNumber = u32;

/// The default number of mantissa bits in a bin number (PyOpenCL's `leading_bits_in_bin_id=4`).
pub(crate) const DEFAULT_LEADING_BITS: u32 = 4;

/// The largest `leading_bits_in_bin_id` accepted.
///
/// `(63 << L) | (2^L - 1)` must fit a `u32` bin number; PyOpenCL documents nothing and has
/// undefined behaviour past 30, we refuse past 25 (the reference's limit).
pub(crate) const MAX_LEADING_BITS: u32 = 25;

/// `floor(log2(v))` with `bitlog2(0) == 0` (PyOpenCL's `bitlog2`; 0 and 1 both give 0): what
/// `v.checked_ilog2().unwrap_or(0)` gives.
const fn bitlog2(v: u64) -> u32 {
    if v == 0 {
        0
    } else {
        63 - v.leading_zeros()
    }
}

/// A `leading_bits_in_bin_id` outside `0..=25` (PyOpenCL has undefined behaviour past 30; the
/// largest accepted keeps `(63 << L) | (2^L - 1)` within a `u32` bin number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidLeadingBits(pub u32);

impl fmt::Display for InvalidLeadingBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "leading_bits_in_bin_id {} is out of range 0..={MAX_LEADING_BITS}",
            self.0
        )
    }
}

impl std::error::Error for InvalidLeadingBits {}

/// The bin layout of a pool: its `leading_bits_in_bin_id` (`L`), validated once.
///
/// # Examples
///
/// ```
/// use cl_pool::BinLayout;
/// let bins = BinLayout::default(); // L = 4
/// assert_eq!(bins.bin_number(100), 105);
/// assert_eq!(bins.alloc_size(105), 103);
/// assert_eq!(bins.alloc_size(bins.bin_number(1000)), 1023);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BinLayout {
    leading_bits: u32,
}

impl Default for BinLayout {
    fn default() -> Self {
        Self {
            leading_bits: DEFAULT_LEADING_BITS,
        }
    }
}

impl BinLayout {
    /// A layout with `leading_bits` mantissa bits.
    ///
    /// # Errors
    ///
    /// [`InvalidLeadingBits`] when `leading_bits > 25`.
    pub const fn new(leading_bits: u32) -> Result<Self, InvalidLeadingBits> {
        if leading_bits > MAX_LEADING_BITS {
            Err(InvalidLeadingBits(leading_bits))
        } else {
            Ok(Self { leading_bits })
        }
    }

    /// `leading_bits_in_bin_id`.
    #[must_use]
    pub const fn leading_bits(self) -> u32 {
        self.leading_bits
    }

    /// The bin a request of `size` bytes goes to (PyOpenCL's `bin_number`).
    #[must_use]
    #[inline]
    pub const fn bin_number(self, size: usize) -> BinNumber {
        bin_number_l(size as u64, self.leading_bits)
    }

    /// The size of every block of bin `bin` (PyOpenCL's `alloc_size`).
    ///
    /// For bin numbers no size maps to (exponent past 63) the result saturates at `usize::MAX`.
    #[must_use]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "checked against usize::MAX just before"
    )]
    #[inline]
    pub const fn alloc_size(self, bin: BinNumber) -> usize {
        let s = alloc_size_l(bin, self.leading_bits);
        if s > usize::MAX as u64 {
            usize::MAX
        } else {
            s as usize
        }
    }
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "l <= 63 and l_bits <= 25: the bin number is below 2^31"
)]
#[inline]
const fn bin_number_l(size: u64, l_bits: u32) -> BinNumber {
    let l = bitlog2(size);
    let shifted = if l >= l_bits {
        size >> (l - l_bits)
    } else {
        size << (l_bits - l)
    };
    let chopped = shifted & ((1u64 << l_bits) - 1);
    // l <= 63 and l_bits <= 25: (63 << 25) | (2^25 - 1) < 2^31, so the cast is lossless.
    ((l << l_bits) as u64 | chopped) as BinNumber
}

#[inline]
const fn alloc_size_l(bin: BinNumber, l_bits: u32) -> u64 {
    let e = bin >> l_bits;
    let m = (bin & ((1u32 << l_bits) - 1)) as u64;
    let head_bits = (1u64 << l_bits) | m;
    if e >= l_bits {
        let shift = e - l_bits;
        if shift >= 64 || (shift + l_bits + 1) > 64 {
            // No usize maps to this bin; saturate rather than overflow.
            return u64::MAX;
        }
        (head_bits << shift) | ((1u64 << shift) - 1)
    } else {
        head_bits >> (l_bits - e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin_number(size: usize) -> BinNumber {
        BinLayout::default().bin_number(size)
    }

    fn alloc_size(bin: BinNumber) -> usize {
        BinLayout::default().alloc_size(bin)
    }

    trait Rounded {
        fn rounded_size(self, size: usize) -> usize;
    }

    impl Rounded for BinLayout {
        fn rounded_size(self, size: usize) -> usize {
            self.alloc_size(self.bin_number(size))
        }
    }

    /// The reference's Python model (section 10.1), on u128 so it cannot overflow.
    fn py_bin_number(size: u128, l: u32) -> u128 {
        let lg = if size == 0 {
            0
        } else {
            127 - size.leading_zeros()
        };
        let shifted = if lg >= l {
            size >> (lg - l)
        } else {
            size << (l - lg)
        };
        (u128::from(lg) << l) | (shifted & ((1 << l) - 1))
    }

    fn py_alloc_size(b: u128, l: u32) -> u128 {
        let e = u32::try_from(b >> l).unwrap();
        let m = b & ((1 << l) - 1);
        if e >= l {
            (((1 << l) | m) << (e - l)) | ((1 << (e - l)) - 1)
        } else {
            ((1 << l) | m) >> (l - e)
        }
    }

    const P30: usize = (1 << 30) + 1;
    const P32: usize = (1 << 32) + 5;

    /// Every row of the reference's worked-example table (section 3.2):
    /// size, (bin, alloc) for L = 4, 0, 2, 8.
    const TABLE: &[(usize, [(u32, usize); 4])] = &[
        (0, [(0, 1), (0, 1), (0, 1), (0, 1)]),
        (1, [(0, 1), (0, 1), (0, 1), (0, 1)]),
        (2, [(16, 2), (1, 3), (4, 2), (256, 2)]),
        (3, [(24, 3), (1, 3), (6, 3), (384, 3)]),
        (5, [(36, 5), (2, 7), (9, 5), (576, 5)]),
        (15, [(62, 15), (3, 15), (15, 15), (992, 15)]),
        (16, [(64, 16), (4, 31), (16, 19), (1024, 16)]),
        (17, [(65, 17), (4, 31), (16, 19), (1040, 17)]),
        (31, [(79, 31), (4, 31), (19, 31), (1264, 31)]),
        (32, [(80, 33), (5, 63), (20, 39), (1280, 32)]),
        (33, [(80, 33), (5, 63), (20, 39), (1288, 33)]),
        (100, [(105, 103), (6, 127), (26, 111), (1680, 100)]),
        (1000, [(159, 1023), (9, 1023), (39, 1023), (2548, 1001)]),
        (1023, [(159, 1023), (9, 1023), (39, 1023), (2559, 1023)]),
        (1024, [(160, 1087), (10, 2047), (40, 1279), (2560, 1027)]),
        (1025, [(160, 1087), (10, 2047), (40, 1279), (2560, 1027)]),
        (4096, [(192, 4351), (12, 8191), (48, 5119), (3072, 4111)]),
        (4097, [(192, 4351), (12, 8191), (48, 5119), (3072, 4111)]),
        (
            1_000_000,
            [
                (318, 1_015_807),
                (19, 1_048_575),
                (79, 1_048_575),
                (5096, 1_001_471),
            ],
        ),
        (
            1 << 20,
            [
                (320, 1_114_111),
                (20, 2_097_151),
                (80, 1_310_719),
                (5120, 1_052_671),
            ],
        ),
        (
            P30,
            [
                (480, 1_140_850_687),
                (30, 2_147_483_647),
                (120, 1_342_177_279),
                (7680, 1_077_936_127),
            ],
        ),
        (
            P32,
            [
                (512, 4_563_402_751),
                (32, 8_589_934_591),
                (128, 5_368_709_119),
                (8192, 4_311_744_511),
            ],
        ),
    ];

    #[test]
    fn worked_examples_of_the_reference_table_match() {
        for &(size, cols) in TABLE {
            for (l, (bin, alloc)) in [4u32, 0, 2, 8].into_iter().zip(cols) {
                let layout = BinLayout::new(l).unwrap();
                assert_eq!(layout.bin_number(size), bin, "bin_number({size}) L={l}");
                assert_eq!(layout.alloc_size(bin), alloc, "alloc_size({bin}) L={l}");
                assert_eq!(layout.rounded_size(size), alloc, "rounded({size}) L={l}");
            }
        }
    }

    #[test]
    fn hand_check_of_size_100_matches_reference() {
        assert_eq!(bin_number(100), 6 * 16 + 9);
        assert_eq!(alloc_size(105), ((16 | 9) << 2) | 3);
    }

    #[test]
    fn bitlog2_matches_reference_values() {
        assert_eq!(bitlog2(0), 0);
        assert_eq!(bitlog2(1), 0);
        assert_eq!(bitlog2(2), 1);
        assert_eq!(bitlog2(3), 1);
        assert_eq!(bitlog2(1 << 40), 40);
        assert_eq!(bitlog2((1 << 40) - 1), 39);
        assert_eq!(bitlog2(u64::MAX), 63);
    }

    #[test]
    fn sizes_past_2_pow_32_are_binned_with_64_bit_arithmetic() {
        // PyOpenCL before PR #453: 2^32 -> alloc 2^30 - 1.
        let b = bin_number(1 << 32);
        assert_eq!(b, 32 << 4);
        assert_eq!(alloc_size(b), (1 << 32) | ((1 << 28) - 1));
        for e in 32..63 {
            let size = (1usize << e) + 12345;
            let r = BinLayout::default().rounded_size(size);
            assert!(r >= size);
            assert_eq!(bin_number(r), bin_number(size));
        }
        let max = BinLayout::default().rounded_size(usize::MAX);
        assert_eq!(max, usize::MAX);
    }

    #[test]
    fn leading_bits_past_25_are_refused() {
        assert_eq!(BinLayout::new(26), Err(InvalidLeadingBits(26)));
        assert!(BinLayout::new(25).is_ok());
        assert_eq!(
            InvalidLeadingBits(31).to_string(),
            "leading_bits_in_bin_id 31 is out of range 0..=25"
        );
    }

    /// splitmix64, enough randomness for cross-checks without a dependency.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn python_model_agrees_over_many_sizes_and_layouts() {
        let mut s = 7;
        for l in 0..=MAX_LEADING_BITS {
            let layout = BinLayout::new(l).unwrap();
            let mut sizes: Vec<u64> = (0..2000).collect();
            for e in 0..64 {
                let p = 1u64 << e;
                sizes.extend([p - 1, p, p.saturating_add(1)]);
            }
            for _ in 0..20_000 {
                let r = next(&mut s);
                // spread over all magnitudes
                sizes.push(r >> (r % 64));
            }
            for size in sizes {
                let Ok(size_us) = usize::try_from(size) else {
                    continue;
                };
                let b = layout.bin_number(size_us);
                let pb = py_bin_number(u128::from(size), l);
                assert_eq!(u128::from(b), pb, "bin_number({size}) L={l}");
                let a = layout.alloc_size(b);
                let pa = py_alloc_size(pb, l);
                assert_eq!(a as u128, pa.min(usize::MAX as u128), "alloc({b}) L={l}");
                // The invariants the pool asserts (step 2 of section 3.3).
                assert!(a >= size_us.max(1));
                assert_eq!(layout.bin_number(a), b);
                // waste bound: < 2^(e-L) <= size / 2^L
                if size > 1 {
                    let e = bitlog2(size);
                    let bound = if e >= l { 1u64 << (e - l) } else { 1 };
                    assert!(((a as u64) - size) < bound, "waste of {size} L={l}");
                }
            }
        }
    }

    #[test]
    fn bins_are_monotone_in_size() {
        let layout = BinLayout::default();
        let mut prev = layout.bin_number(0);
        for size in 1..70_000usize {
            let b = layout.bin_number(size);
            assert!(b >= prev);
            prev = b;
        }
    }
}

//! Decoding structured values from fuzzer bytes, and a seeded generator for the stable tests.
//!
//! Reads past the end yield zeros, so every byte string is a valid input and a shorter input is a
//! simpler one (what libFuzzer's minimiser wants).

/// A cursor over fuzzer bytes.
#[derive(Debug)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next `n <= 8` bytes, little-endian.
    fn le(&mut self, n: usize) -> u64 {
        (0..n).fold(0u64, |acc, i| acc | (u64::from(self.u8()) << (8 * i)))
    }

    /// A bool from the next byte's low bit.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// A full 64-bit value.
    pub fn u64(&mut self) -> u64 {
        self.le(8)
    }

    /// A `usize` biased towards the edges that break size arithmetic: small values, powers of
    /// two and their neighbours, values near `usize::MAX` and near `sqrt(usize::MAX)`.
    pub fn size(&mut self) -> usize {
        let tag = self.u8();
        let small = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        match tag % 8 {
            0 | 1 => usize::from(self.u8() % 16),
            2 => usize::from(self.u8()),
            3 => small(self.le(2)),
            4 => {
                // 2^k + d, d in -2..=2
                let base = 1usize << (u32::from(self.u8()) % usize::BITS);
                match self.u8() % 5 {
                    0 => base.wrapping_sub(2),
                    1 => base.wrapping_sub(1),
                    2 => base,
                    3 => base.wrapping_add(1),
                    _ => base.wrapping_add(2),
                }
            }
            5 => usize::MAX - usize::from(self.u8()),
            6 => {
                // near 2^32 (products of two of these overflow 64 bits)
                (1usize << (usize::BITS / 2)).wrapping_add(usize::from(self.u8()))
            }
            _ => small(self.u64()),
        }
    }

    /// A size in `0..=max`: small values more often.
    pub fn small(&mut self, max: usize) -> usize {
        let v = usize::from(self.u8()) | (usize::from(self.u8()) << 8);
        v % (max + 1)
    }

    /// The rest, as text (invalid UTF-8 replaced, so the text parsers see every byte string).
    pub fn rest_text(&mut self) -> String {
        let s = String::from_utf8_lossy(self.data).into_owned();
        self.data = &[];
        s
    }

    /// Bytes left.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether no byte is left.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// SplitMix64: a tiny deterministic generator for the stable property tests (no dependency).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        // Modulo bias is irrelevant here.
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64().to_le_bytes()[0]).collect()
    }

    /// `seed` mutated the way a fuzzer starts: a few byte flips, insertions, deletions and
    /// splices of random bytes.
    pub fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut out = seed.to_vec();
        for _ in 0..=self.below(4) {
            let at = if out.is_empty() {
                0
            } else {
                self.below(out.len())
            };
            match self.below(4) {
                0 if !out.is_empty() => out[at] ^= 1 << self.below(8),
                1 => out.insert(at, self.next_u64().to_le_bytes()[0]),
                2 if !out.is_empty() => {
                    out.remove(at);
                }
                _ => {
                    let n = self.below(9);
                    let b = self.bytes(n);
                    let at = at.min(out.len());
                    out.splice(at..at, b);
                }
            }
        }
        out
    }
}

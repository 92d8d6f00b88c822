//! Target `conflict`: `why_not_local_access_conflict_free`, PyOpenCL's bank-conflict model.
//!
//! Input: device facts (type bits, local memory type, NVIDIA compute capability), an item size,
//! a shape of rank 0..=6 and an optional stored shape (possibly of another rank), all with
//! edge-case sizes up to `usize::MAX`.
//!
//! Properties:
//! - never panics, and the error is the documented one, in PyOpenCL's order:
//!   `BankCountMeaningless` exactly when `local_memory_bank_count` fails, else (for rank > 0)
//!   `ZeroSizedAxis` for a 0 among the axes both shapes have, else `ShapeRankMismatch`;
//! - an answer has `1 <= multiplicity <= simultaneous work items`, no more than the array's
//!   elements when it has fewer, and an explanation exactly when `multiplicity > 1`, starting
//!   with `"{multiplicity}x conflict on axis "`;
//! - the multiplicity equals a reference that computes each address exactly in `u128` (no
//!   modulo), whenever the addresses fit.

use cl_characterize::{
    local_memory_bank_count, simultaneous_work_items_on_local_access,
    why_not_local_access_conflict_free, CharacterizeError, DeviceProfile, LocalMemType,
};

use crate::input::Input;

fn profile(input: &mut Input<'_>) -> DeviceProfile {
    let flags = input.u8();
    let nv = if flags & 1 != 0 {
        Some((u32::from(input.u8() % 10), u32::from(input.u8() % 10)))
    } else {
        None
    };
    DeviceProfile {
        device_type: u64::from(input.u8() & 0x1F),
        local_mem_type: LocalMemType::from_raw(u32::from(flags >> 1) % 4),
        nv_compute_capability: nv,
        extensions: if nv.is_some() {
            "cl_nv_device_attribute_query".into()
        } else {
            String::new()
        },
        ..DeviceProfile::default()
    }
}

fn shape(input: &mut Input<'_>, rank: usize) -> Vec<usize> {
    (0..rank)
        .map(|_| {
            if input.u8() & 3 == 0 {
                input.size()
            } else {
                input.small(70)
            }
        })
        .collect()
}

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let dev = profile(&mut input);
    let itemsize = match input.u8() % 4 {
        0 => input.size(),
        n => 1 << (n + 1),
    };
    let rank = usize::from(input.u8() % 7);
    let array = shape(&mut input, rank);
    let stored = match input.u8() % 4 {
        0 => None,
        1 => Some(shape(&mut input, rank)),
        2 => {
            let other = usize::from(input.u8() % 7);
            Some(shape(&mut input, other))
        }
        // Padded: each stored axis at least the array's.
        _ => Some(
            array
                .iter()
                .map(|&a| a.saturating_add(usize::from(input.u8() % 3)))
                .collect(),
        ),
    };
    check_case(&dev, itemsize, &array, stored.as_deref());
}

/// The properties for one call.
///
/// # Panics
///
/// When a property does not hold.
pub fn check_case(dev: &DeviceProfile, itemsize: usize, array: &[usize], stored: Option<&[usize]>) {
    let got = why_not_local_access_conflict_free(dev, itemsize, array, stored);
    let st = stored.unwrap_or(array);
    let rank = array.len();
    let overlap = rank.min(st.len());
    let expected_err = if local_memory_bank_count(dev).is_err() {
        Some(CharacterizeError::BankCountMeaningless)
    } else if rank > 0 && array[rank - overlap..].contains(&0) {
        // The axes both shapes have, counted from the right (fastest axis first).
        Some(CharacterizeError::ZeroSizedAxis)
    } else if rank > 0 && st.len() != rank {
        Some(CharacterizeError::ShapeRankMismatch {
            shape_len: rank,
            stored_len: st.len(),
        })
    } else {
        None
    };
    let answer = match (got, expected_err) {
        (Ok(a), None) => a.value,
        (Err(e), Some(want)) => {
            assert_eq!(e, want, "{array:?} / {stored:?}");
            return;
        }
        (got, want) => panic!("{array:?} / {stored:?} on {dev:?}: got {got:?}, expected {want:?}"),
    };
    let sim_wi = simultaneous_work_items_on_local_access(dev).value as usize;
    let m = answer.multiplicity;
    assert!(
        m >= 1 && m <= sim_wi.max(1),
        "multiplicity {m} of {sim_wi} work items"
    );
    let elements = array
        .iter()
        .try_fold(1usize, |acc, &a| acc.checked_mul(a))
        .unwrap_or(usize::MAX);
    if rank > 0 {
        assert!(
            m <= elements.max(1),
            "multiplicity {m} for {elements} elements"
        );
    }
    match &answer.explanation {
        None => assert_eq!(m, 1),
        Some(text) => {
            assert!(m > 1, "explanation for multiplicity 1: {text}");
            assert!(
                text.starts_with(&format!("{m}x conflict on axis ")),
                "{text}"
            );
        }
    }
    if let Some(want) = reference_multiplicity(dev, itemsize, array, st) {
        assert_eq!(
            m, want,
            "{array:?} / {st:?}, itemsize {itemsize}: modulo arithmetic differs"
        );
    }
}

/// PyOpenCL's loop with exact `u128` addresses, or `None` when an address could overflow.
fn reference_multiplicity(
    dev: &DeviceProfile,
    itemsize: usize,
    array: &[usize],
    stored: &[usize],
) -> Option<usize> {
    let sim_wi = u128::from(simultaneous_work_items_on_local_access(dev).value);
    let banks = u128::from(local_memory_bank_count(dev).ok()?.value);
    let shape: Vec<u128> = array.iter().rev().map(|&s| s as u128).collect();
    let stor: Vec<u128> = stored.iter().rev().map(|&s| s as u128).collect();
    // Largest address: itemsize * product of stored axes; must stay far below u128::MAX.
    let bound = stor
        .iter()
        .try_fold(itemsize as u128, |acc, &s| acc.checked_mul(s.max(1)))?;
    // Each address is at most rank * 32 work items * bound.
    bound.checked_mul(1 << 10)?;
    let mut best = 1usize;
    for axis in 0..shape.len() {
        let mut counts: Vec<(u128, usize)> = Vec::new();
        for wi in 0..sim_wi {
            let (mut addr, mut mult, mut left) = (0u128, itemsize as u128, wi);
            for (a, (&size, &st)) in shape.iter().zip(&stor).enumerate() {
                if a >= axis {
                    addr += mult * (left % size);
                    left /= size;
                }
                mult *= st;
            }
            if left != 0 {
                continue;
            }
            let bank = (addr / 4) % banks;
            match counts.iter_mut().find(|(b, _)| *b == bank) {
                Some((_, n)) => *n += 1,
                None => counts.push((bank, 1)),
            }
        }
        best = best.max(counts.iter().map(|&(_, n)| n).max().unwrap_or(0));
    }
    Some(best)
}

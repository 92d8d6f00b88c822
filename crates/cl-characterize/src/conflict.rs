//! `why_not_local_access_conflict_free`: PyOpenCL's local-memory bank-conflict model (§6.1).

use crate::error::{emit, CharacterizeError, Estimate, Warning};
use crate::heuristics::{
    local_memory_access_granularity, local_memory_bank_count,
    simultaneous_work_items_on_local_access,
};
use crate::profile::DeviceProfile;

/// The answer of [`why_not_local_access_conflict_free`]: PyOpenCL's `(multiplicity, explanation)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LocalAccessConflict {
    /// How many simultaneous work items hit the same bank in the worst case (1 = conflict-free).
    pub multiplicity: usize,
    /// PyOpenCL's explanation of the worst conflict, byte for byte, or `None` when conflict-free.
    pub explanation: Option<String>,
}

/// `why_not_local_access_conflict_free(dev, itemsize, array_shape, array_stored_shape=None)`: the
/// worst local-memory bank conflict when simultaneous work items walk along each axis of an array.
///
/// `array_shape` is in C order (fastest axis last); `array_stored_shape` (default: `array_shape`)
/// gives the padded allocation, e.g. `(32, 33)` for a `(32, 32)` tile padded by one column.
/// For each axis (counted from the right, 0-based) the first
/// [`simultaneous_work_items_on_local_access`] work items are laid along the array from that axis
/// on (work items outside the array are skipped), each address is mapped to bank
/// `(addr / 4) % bank_count`, and the banks hit by the most work items are listed. The result is
/// the maximum over all axes and banks by `(multiplicity, explanation)` exactly as Python compares
/// the tuples, so ties go to the lexicographically largest explanation, as in PyOpenCL.
///
/// The warnings are PyOpenCL's: "Local conflict info might be inaccurate for itemsize != 4", then
/// those of [`simultaneous_work_items_on_local_access`] and [`local_memory_bank_count`].
///
/// Addresses are computed modulo `4 * bank_count`, which gives the same banks as PyOpenCL's
/// unbounded integers without any overflow.
///
/// # Errors
///
/// - [`CharacterizeError::BankCountMeaningless`] on CPUs with cache-based local memory (from
///   [`local_memory_bank_count`]; every CPU runtime).
/// - [`CharacterizeError::ZeroSizedAxis`] when `array_shape` has a 0 (PyOpenCL: `ZeroDivisionError`).
/// - [`CharacterizeError::ShapeRankMismatch`] when the two shapes differ in length (PyOpenCL:
///   `ValueError` from `zip(..., strict=True)`).
pub fn why_not_local_access_conflict_free(
    dev: &DeviceProfile,
    itemsize: usize,
    array_shape: &[usize],
    array_stored_shape: Option<&[usize]>,
) -> Result<Estimate<LocalAccessConflict>, CharacterizeError> {
    let stored = array_stored_shape.unwrap_or(array_shape);
    let rank = array_shape.len();
    // Index 0 = fastest axis.
    let shape: Vec<u64> = array_shape.iter().rev().map(|&s| s as u64).collect();
    let stored: Vec<u64> = stored.iter().rev().map(|&s| s as u64).collect();

    let gran = u64::from(local_memory_access_granularity(dev));
    let mut warnings = Vec::new();
    if itemsize as u64 != gran {
        let w = Warning::ItemsizeNotGranularity { itemsize };
        emit(&w);
        warnings.push(w);
    }
    let sim_wi = simultaneous_work_items_on_local_access(dev);
    warnings.extend(sim_wi.warnings);
    let bank_count = local_memory_bank_count(dev)?;
    warnings.extend(bank_count.warnings);
    let sim_wi = u64::from(sim_wi.value);
    let bank_count = u64::from(bank_count.value);

    // PyOpenCL fails inside the loop, after the warnings and the bank count: first on a zero axis
    // (`divmod`), then when `zip(..., strict=True)` finds the shapes differ in length. With rank 0
    // the loop does not run and nothing fails.
    if rank > 0 {
        let overlap = rank.min(stored.len());
        if shape[..overlap].contains(&0) {
            return Err(CharacterizeError::ZeroSizedAxis);
        }
        if stored.len() != rank {
            return Err(CharacterizeError::ShapeRankMismatch {
                shape_len: rank,
                stored_len: stored.len(),
            });
        }
    }
    // Only `(addr / gran) % bank_count` is used, so all address arithmetic can be done modulo
    // `gran * bank_count` (both are small, non-zero constants).
    let modulus = gran * bank_count;

    let mut best: Option<(usize, String)> = None;
    for work_item_axis in 0..rank {
        // bank -> "w.item ..." entries, in work-item order.
        let mut bank_accesses: Vec<(u64, Vec<String>)> = Vec::new();
        for work_item_id in 0..sim_wi {
            let mut addr = 0u64;
            let mut addr_mult = itemsize as u64 % modulus;
            let mut left = work_item_id;
            let mut idx = Vec::with_capacity(rank);
            for (axis, (&ax_size, &ax_stor_size)) in shape.iter().zip(&stored).enumerate() {
                if axis >= work_item_axis {
                    let ax_idx = left % ax_size;
                    left /= ax_size;
                    addr = (addr + addr_mult * (ax_idx % modulus)) % modulus;
                    idx.push(ax_idx);
                } else {
                    idx.push(0);
                }
                addr_mult = addr_mult * (ax_stor_size % modulus) % modulus;
            }
            if left != 0 {
                // Outside the array: PyOpenCL assumes the access does not take place.
                continue;
            }
            let bank = (addr / gran) % bank_count;
            idx.reverse();
            let entry = format!("w.item {work_item_id} -> {}", python_list(&idx));
            match bank_accesses.iter_mut().find(|(b, _)| *b == bank) {
                Some((_, list)) => list.push(entry),
                None => bank_accesses.push((bank, vec![entry])),
            }
        }
        let multiplicity = bank_accesses
            .iter()
            .map(|(_, list)| list.len())
            .max()
            .unwrap_or(0);
        if multiplicity > 1 {
            for (bank, list) in &bank_accesses {
                if list.len() == multiplicity {
                    let text = format!(
                        "{multiplicity}x conflict on axis {work_item_axis} (from right, 0-based): {} access bank {bank}",
                        list.join(", ")
                    );
                    let candidate = (multiplicity, text);
                    if best.as_ref().is_none_or(|b| candidate > *b) {
                        best = Some(candidate);
                    }
                }
            }
        }
    }
    let value = match best {
        Some((multiplicity, explanation)) => LocalAccessConflict {
            multiplicity,
            explanation: Some(explanation),
        },
        None => LocalAccessConflict {
            multiplicity: 1,
            explanation: None,
        },
    };
    Ok(Estimate { value, warnings })
}

/// Python's `str()` of a list of ints: `[1, 0]`.
fn python_list(items: &[u64]) -> String {
    let inner: Vec<String> = items.iter().map(u64::to_string).collect();
    format!("[{}]", inner.join(", "))
}

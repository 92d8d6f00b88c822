//! Sub-devices (device fission, `clCreateSubDevices`, OpenCL 1.2): how the CPU runtimes here give
//! multi-device contexts, and how a GPU's compute units are split.
//!
//! # Design: sub-devices live as long as the process
//!
//! [`Device`] is `Copy` because root devices are process-lifetime handles. Sub-devices are
//! reference counted; wrapping them in a second, non-`Copy` type would split every API that takes
//! a device in two, and a `Copy` handle to a released sub-device would reach the driver with a
//! dangling id. So partitions are interned: the first [`Device::create_sub_devices`] of a
//! (device, partition) pair creates them and keeps one reference for the rest of the process;
//! asking again returns the same devices. The cost is bounded by the distinct partitions a
//! program asks for (a handful), the same trade PyOpenCL's users make when they keep sub-devices
//! in module globals. Contexts and queues retain their devices anyway (OpenCL 1.2, 4.3).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use cl_raw::{device as raw, sys, Version};

use crate::error::{Error, Result};
use crate::runtime::device::Device;

/// How to split a device (`cl_device_partition_property`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Partition {
    /// `CL_DEVICE_PARTITION_EQUALLY`: as many sub-devices of `n` compute units each as fit.
    Equally(u32),
    /// `CL_DEVICE_PARTITION_BY_COUNTS`: one sub-device per count, with that many compute units.
    ByCounts(Vec<u32>),
    /// `CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN`: one sub-device per domain of this kind.
    ByAffinityDomain(AffinityDomain),
}

/// `cl_device_affinity_domain`: the cache or NUMA level to split along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AffinityDomain {
    /// `CL_DEVICE_AFFINITY_DOMAIN_NUMA`.
    Numa,
    /// `CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE`.
    L4Cache,
    /// `CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE`.
    L3Cache,
    /// `CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE`.
    L2Cache,
    /// `CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE`.
    L1Cache,
    /// `CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE`: the first level the device can split.
    NextPartitionable,
}

impl AffinityDomain {
    fn bits(self) -> sys::cl_device_affinity_domain {
        match self {
            AffinityDomain::Numa => sys::CL_DEVICE_AFFINITY_DOMAIN_NUMA,
            AffinityDomain::L4Cache => sys::CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE,
            AffinityDomain::L3Cache => sys::CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE,
            AffinityDomain::L2Cache => sys::CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE,
            AffinityDomain::L1Cache => sys::CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE,
            AffinityDomain::NextPartitionable => sys::CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE,
        }
    }
}

/// The kinds of [`Partition`] a device accepts (`CL_DEVICE_PARTITION_PROPERTIES`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PartitionSupport {
    /// [`Partition::Equally`].
    pub equally: bool,
    /// [`Partition::ByCounts`].
    pub by_counts: bool,
    /// [`Partition::ByAffinityDomain`].
    pub by_affinity_domain: bool,
}

impl Partition {
    /// The 0-terminated property list, after the checks that need no driver.
    fn properties(&self) -> Result<Vec<sys::cl_device_partition_property>> {
        let p = |v: sys::cl_uint| v as sys::cl_device_partition_property;
        Ok(match self {
            Partition::Equally(n) => {
                if *n == 0 {
                    return Err(Error::InvalidArgument(
                        "an equal partition needs at least one compute unit per sub-device".into(),
                    ));
                }
                vec![p(sys::CL_DEVICE_PARTITION_EQUALLY), *n as isize, 0]
            }
            Partition::ByCounts(counts) => {
                if counts.is_empty() || counts.contains(&0) {
                    return Err(Error::InvalidArgument(format!(
                        "a partition by counts needs positive counts, got {counts:?}"
                    )));
                }
                let mut v = vec![p(sys::CL_DEVICE_PARTITION_BY_COUNTS)];
                v.extend(counts.iter().map(|&c| c as isize));
                v.push(p(sys::CL_DEVICE_PARTITION_BY_COUNTS_LIST_END));
                v.push(0);
                v
            }
            Partition::ByAffinityDomain(d) => vec![
                p(sys::CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN),
                // The domain bits are 1 << 0 .. 1 << 5.
                sys::cl_device_partition_property::try_from(d.bits()).unwrap_or(0),
                0,
            ],
        })
    }
}

type Interned = HashMap<(usize, Vec<isize>), Vec<usize>>;

fn interned() -> &'static Mutex<Interned> {
    static SUB_DEVICES: OnceLock<Mutex<Interned>> = OnceLock::new();
    SUB_DEVICES.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Device {
    /// The partitions the device accepts (`CL_DEVICE_PARTITION_PROPERTIES`; none before 1.2).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn partition_support(&self) -> Result<PartitionSupport> {
        let mut s = PartitionSupport::default();
        if self.version() < Version::V1_2 || self.platform_version() < Version::V1_2 {
            return Ok(s);
        }
        // SAFETY: a 1.2 parameter of a 1.2+ device (checked above).
        let props: Vec<sys::cl_device_partition_property> =
            unsafe { raw::get_info(self.as_raw(), sys::CL_DEVICE_PARTITION_PROPERTIES) }
                .map_err(Error::cl("clGetDeviceInfo"))?;
        for p in props {
            match u32::try_from(p) {
                Ok(sys::CL_DEVICE_PARTITION_EQUALLY) => s.equally = true,
                Ok(sys::CL_DEVICE_PARTITION_BY_COUNTS) => s.by_counts = true,
                Ok(sys::CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN) => s.by_affinity_domain = true,
                _ => {}
            }
        }
        Ok(s)
    }

    /// `CL_DEVICE_PARTITION_MAX_SUB_DEVICES` (0 before 1.2).
    fn partition_max_sub_devices(&self) -> Result<u32> {
        if self.version() < Version::V1_2 || self.platform_version() < Version::V1_2 {
            return Ok(0);
        }
        // SAFETY: a 1.2 parameter of a 1.2+ device.
        unsafe { raw::get_info(self.as_raw(), sys::CL_DEVICE_PARTITION_MAX_SUB_DEVICES) }
            .map_err(Error::cl("clGetDeviceInfo"))
    }

    /// The device this one was split from (`CL_DEVICE_PARENT_DEVICE`); `None` for root devices.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn parent_device(&self) -> Result<Option<Device>> {
        if self.version() < Version::V1_2 || self.platform_version() < Version::V1_2 {
            return Ok(None);
        }
        // SAFETY: a 1.2 parameter of a 1.2+ device.
        let parent: sys::cl_device_id =
            unsafe { raw::get_info(self.as_raw(), sys::CL_DEVICE_PARENT_DEVICE) }
                .map_err(Error::cl("clGetDeviceInfo"))?;
        if parent.is_null() {
            return Ok(None);
        }
        // SAFETY: the driver's id of this device's parent, alive while this device is (a root
        // device, or an interned sub-device that is never released).
        Ok(Some(unsafe { Device::from_raw(parent) }?))
    }

    /// Splits the device (`clCreateSubDevices`); asking twice for the same partition of the same
    /// device returns the same sub-devices (see the module documentation for why they live as long
    /// as the process).
    ///
    /// Every sub-device is a [`Device`]: contexts, queues, memory objects and pools take it as
    /// they take a root device, and a context over several of them is a multi-device context.
    ///
    /// # Errors
    ///
    /// Checked first: [`Error::Unsupported`] below OpenCL 1.2 or for a partition kind the device
    /// does not list; [`Error::InvalidArgument`] for zero or empty counts, more compute units
    /// than the device has, or more sub-devices than `CL_DEVICE_PARTITION_MAX_SUB_DEVICES`. Then
    /// [`Error::Cl`] from `clCreateSubDevices` (`CL_DEVICE_PARTITION_FAILED` when the driver
    /// cannot split along an affinity domain).
    pub fn create_sub_devices(&self, partition: &Partition) -> Result<Vec<Device>> {
        self.require_version(Version::V1_2, "clCreateSubDevices")?;
        let props = partition.properties()?;
        let support = self.partition_support()?;
        let (ok, kind) = match partition {
            Partition::Equally(_) => (support.equally, "CL_DEVICE_PARTITION_EQUALLY"),
            Partition::ByCounts(_) => (support.by_counts, "CL_DEVICE_PARTITION_BY_COUNTS"),
            Partition::ByAffinityDomain(_) => (
                support.by_affinity_domain,
                "CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN",
            ),
        };
        if !ok {
            return Err(Error::Unsupported {
                feature: "clCreateSubDevices",
                needs: format!(
                    "{kind} in CL_DEVICE_PARTITION_PROPERTIES; device '{}' lists {support:?}",
                    self.name().unwrap_or_default().trim()
                ),
            });
        }
        let units = self.max_compute_units()?;
        let max_sub = self.partition_max_sub_devices()?;
        match partition {
            Partition::Equally(n) if *n > units => {
                return Err(Error::InvalidArgument(format!(
                    "sub-devices of {n} compute units from a device of {units}"
                )));
            }
            Partition::ByCounts(counts) => {
                let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
                if total > u64::from(units) || counts.len() > max_sub as usize {
                    return Err(Error::InvalidArgument(format!(
                        "a partition by counts {counts:?} ({total} compute units, {} \
                         sub-devices) of a device of {units} compute units and at most \
                         {max_sub} sub-devices",
                        counts.len()
                    )));
                }
            }
            _ => {}
        }
        let key = (self.as_raw() as usize, props.clone());
        let mut map = interned().lock().unwrap_or_else(PoisonError::into_inner);
        let ids = match map.get(&key) {
            Some(ids) => ids.clone(),
            None => {
                // SAFETY: a valid 1.2+ device (checked); `props` is 0-terminated; the returned
                // references are kept (interned) for the rest of the process.
                let ids = unsafe { raw::create_sub_devices(self.as_raw(), &props) }
                    .map_err(Error::cl("clCreateSubDevices"))?;
                let ids: Vec<usize> = ids.into_iter().map(|d| d as usize).collect();
                map.insert(key, ids.clone());
                ids
            }
        };
        drop(map);
        ids.into_iter()
            // SAFETY: sub-device ids the driver returned, retained for the process's life.
            .map(|id| unsafe { Device::from_raw(id as sys::cl_device_id) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_lists_are_terminated_and_checked() {
        assert_eq!(
            Partition::Equally(2).properties().unwrap(),
            vec![sys::CL_DEVICE_PARTITION_EQUALLY as isize, 2, 0]
        );
        assert_eq!(
            Partition::ByCounts(vec![1, 3]).properties().unwrap(),
            vec![
                sys::CL_DEVICE_PARTITION_BY_COUNTS as isize,
                1,
                3,
                sys::CL_DEVICE_PARTITION_BY_COUNTS_LIST_END as isize,
                0
            ]
        );
        for bad in [
            Partition::Equally(0),
            Partition::ByCounts(vec![]),
            Partition::ByCounts(vec![2, 0]),
        ] {
            assert!(
                matches!(bad.properties(), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }
}

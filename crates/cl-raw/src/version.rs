//! OpenCL versions: parsed from version strings and from the packed `cl_version` numbers of 3.0.
//!
//! Callers gate every entry point newer than 1.2 on the *platform* version (the ICD dispatches the
//! call to the platform) and device-side features on the *device* version, **before** calling: an
//! OpenCL 1.2 platform (Oclgrind 21.10) hangs on a 3.0 entry point instead of failing.

use std::fmt;
use std::str::FromStr;

/// An OpenCL version, `major.minor`. Ordered, so `v >= Version::V2_0` reads naturally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version (the `3` of 3.0).
    pub major: u32,
    /// Minor version (the `0` of 3.0).
    pub minor: u32,
}

/// A version string that is not of the form the spec prescribes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed OpenCL version string {input:?}: expected {expected}")]
pub struct VersionParseError {
    /// The string that failed to parse.
    pub input: String,
    /// What the parser expected, e.g. `"OpenCL <major>.<minor> <vendor info>"`.
    pub expected: &'static str,
}

impl Version {
    /// OpenCL 1.0.
    pub const V1_0: Version = Version::new(1, 0);
    /// OpenCL 1.1.
    pub const V1_1: Version = Version::new(1, 1);
    /// OpenCL 1.2.
    pub const V1_2: Version = Version::new(1, 2);
    /// OpenCL 2.0 (SVM, pipes, `...WithProperties` queues and samplers).
    pub const V2_0: Version = Version::new(2, 0);
    /// OpenCL 2.1 (`clEnqueueSVMMigrateMem`, `clCloneKernel`).
    pub const V2_1: Version = Version::new(2, 1);
    /// OpenCL 3.0 (numeric versions, `clCreateBufferWithProperties`, optional 2.x features).
    pub const V3_0: Version = Version::new(3, 0);

    /// A version from its parts.
    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    /// Parses a platform or device version string, `"OpenCL <major>.<minor> <vendor info>"`
    /// (`CL_PLATFORM_VERSION`, `CL_DEVICE_VERSION`). The vendor part may be empty.
    ///
    /// # Errors
    ///
    /// [`VersionParseError`] when the string does not start with `"OpenCL "` followed by
    /// `<digits>.<digits>` and then a space or the end.
    pub fn parse_platform(s: &str) -> Result<Version, VersionParseError> {
        const EXPECTED: &str = "\"OpenCL <major>.<minor> <vendor info>\"";
        s.strip_prefix("OpenCL ")
            .and_then(parse_major_minor)
            .ok_or_else(|| VersionParseError {
                input: s.to_owned(),
                expected: EXPECTED,
            })
    }

    /// Parses an OpenCL C version string, `"OpenCL C <major>.<minor> <vendor info>"`
    /// (`CL_DEVICE_OPENCL_C_VERSION`).
    ///
    /// # Errors
    ///
    /// [`VersionParseError`] when the string does not start with `"OpenCL C "` followed by
    /// `<digits>.<digits>` and then a space or the end.
    pub fn parse_opencl_c(s: &str) -> Result<Version, VersionParseError> {
        const EXPECTED: &str = "\"OpenCL C <major>.<minor> <vendor info>\"";
        s.strip_prefix("OpenCL C ")
            .and_then(parse_major_minor)
            .ok_or_else(|| VersionParseError {
                input: s.to_owned(),
                expected: EXPECTED,
            })
    }

    /// Unpacks a `cl_version` (OpenCL 3.0: 10 bits major, 10 bits minor, 12 bits patch); the patch
    /// is dropped.
    pub const fn from_cl_version(v: u32) -> Version {
        Version {
            major: v >> 22,
            minor: (v >> 12) & 0x3ff,
        }
    }
}

/// `<digits>.<digits>` followed by a space or the end of the string.
fn parse_major_minor(s: &str) -> Option<Version> {
    let (major, rest) = s.split_once('.')?;
    let minor_len = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (minor, tail) = rest.split_at(minor_len);
    if !(tail.is_empty() || tail.starts_with(' ')) {
        return None;
    }
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return None;
    }
    Some(Version {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for Version {
    type Err = VersionParseError;

    /// Parses a bare `"<major>.<minor>"`.
    fn from_str(s: &str) -> Result<Version, VersionParseError> {
        parse_major_minor(s)
            .filter(|_| !s.contains(' '))
            .ok_or_else(|| VersionParseError {
                input: s.to_owned(),
                expected: "\"<major>.<minor>\"",
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_platform_and_device_strings() {
        let cases = [
            ("OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG", 3, 0),
            ("OpenCL 1.2 (Oclgrind 21.10)", 1, 2),
            ("OpenCL 3.0 LINUX", 3, 0),
            ("OpenCL 3.0 CUDA 12.8.90", 3, 0),
            ("OpenCL 2.1 AMD-APP (3614.0)", 2, 1),
            ("OpenCL 3.0 ", 3, 0),
            ("OpenCL 1.2", 1, 2),
            ("OpenCL 10.12 future", 10, 12),
        ];
        for (s, major, minor) in cases {
            assert_eq!(
                Version::parse_platform(s),
                Ok(Version::new(major, minor)),
                "{s}"
            );
        }
    }

    #[test]
    fn parses_opencl_c_strings() {
        assert_eq!(
            Version::parse_opencl_c("OpenCL C 1.2 PoCL"),
            Ok(Version::V1_2)
        );
        assert_eq!(Version::parse_opencl_c("OpenCL C 1.2 "), Ok(Version::V1_2));
        assert_eq!(Version::parse_opencl_c("OpenCL C 3.0"), Ok(Version::V3_0));
        assert!(Version::parse_opencl_c("OpenCL 3.0 PoCL").is_err());
    }

    #[test]
    fn malformed_strings_are_errors() {
        for s in [
            "",
            "OpenCL",
            "OpenCL ",
            "OpenCL3.0 x",
            "opencl 3.0 x",
            "OpenCL 3 PoCL",
            "OpenCL 3. x",
            "OpenCL .0 x",
            "OpenCL 3.0x",
            "OpenCL a.b",
            "OpenCL -1.2 x",
            "OpenCL 99999999999.0 x",
            " OpenCL 3.0 x",
            "OpenCL C 1.2 ",
        ] {
            let err = Version::parse_platform(s).unwrap_err();
            assert_eq!(err.input, s);
            assert!(err.to_string().contains("malformed OpenCL version string"));
        }
    }

    #[test]
    fn numeric_versions_unpack() {
        // CL_MAKE_VERSION(3, 0, 0) = 3 << 22 = 0x00c0_0000; (1, 2, 0) = 0x0040_2000.
        assert_eq!(Version::from_cl_version(0x00c0_0000), Version::V3_0);
        assert_eq!(Version::from_cl_version(0x0040_2000), Version::V1_2);
        // Patch bits are dropped: CL_MAKE_VERSION(2, 1, 7).
        assert_eq!(
            Version::from_cl_version((2 << 22) | (1 << 12) | 7),
            Version::V2_1
        );
        assert_eq!(Version::from_cl_version(u32::MAX), Version::new(1023, 1023));
    }

    #[test]
    fn ordering_and_display() {
        assert!(Version::V1_2 < Version::V2_0);
        assert!(Version::V2_1 < Version::V3_0);
        assert!(Version::new(1, 10) > Version::V1_2);
        assert_eq!(Version::V2_1.to_string(), "2.1");
        assert_eq!("3.0".parse::<Version>(), Ok(Version::V3_0));
        assert!("3.0 x".parse::<Version>().is_err());
        assert!("3".parse::<Version>().is_err());
    }
}

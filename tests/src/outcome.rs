//! What a device test returns, and how a result becomes an outcome.

use std::fmt;

use crate::expectations::Expectation;

/// The result of one device test: `Ok(())` passes; `Err` fails, or skips when made by [`skip`].
pub type TestResult = Result<(), TestError>;

/// Why a device test did not pass: a failure (any [`std::error::Error`] converted with `?`, or
/// [`fail`]) or a skip with its reason ([`skip`]).
///
/// It deliberately does not implement [`std::error::Error`] itself, so that every error type converts
/// into it through `?`.
pub struct TestError {
    skip: bool,
    message: String,
}

impl TestError {
    /// Whether this is a skip (the device lacks what the test needs) rather than a failure.
    pub fn is_skip(&self) -> bool {
        self.skip
    }

    /// The failure message or skip reason.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: std::error::Error> From<E> for TestError {
    /// A failure whose message is the error and its `source()` chain, joined with `: `.
    fn from(e: E) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        TestError {
            skip: false,
            message,
        }
    }
}

impl fmt::Display for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.skip {
            write!(f, "skipped: {}", self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl fmt::Debug for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A skip: the device lacks a feature the test needs. The reason is printed in the matrix.
///
/// ```
/// # fn has_svm() -> bool { false }
/// fn svm_roundtrips() -> cl_tests::TestResult {
///     if !has_svm() {
///         return Err(cl_tests::skip("device has no coarse-grain buffer SVM (OpenCL 2.0)"));
///     }
///     Ok(())
/// }
/// assert!(svm_roundtrips().unwrap_err().is_skip());
/// ```
pub fn skip(reason: impl Into<String>) -> TestError {
    TestError {
        skip: true,
        message: reason.into(),
    }
}

/// `Err(skip(reason))` unless `condition` holds: `skip_unless(dev.has_svm(), "no SVM")?;`.
///
/// # Errors
///
/// The skip, when `condition` is false.
pub fn skip_unless(condition: bool, reason: impl Into<String>) -> TestResult {
    if condition {
        Ok(())
    } else {
        Err(skip(reason))
    }
}

/// A failure with a message, for checks that are not an `assert!`.
pub fn fail(message: impl Into<String>) -> TestError {
    TestError {
        skip: false,
        message: message.into(),
    }
}

/// Polls `f` for up to ten seconds, for what the driver finishes asynchronously (event callbacks
/// run on its threads, after a wait returned); a timeout is a failure naming `what`.
///
/// # Errors
///
/// `f`'s error, or a failure when `f` is still false after ten seconds.
pub fn eventually(what: &str, mut f: impl FnMut() -> cl_mem::Result<bool>) -> TestResult {
    let start = std::time::Instant::now();
    while !f()? {
        if start.elapsed() > std::time::Duration::from_secs(10) {
            return Err(fail(format!("timed out waiting until {what}")));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Ok(())
}

/// How one test ended on one device, after applying the expectations table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It passed.
    Passed,
    /// It failed (returned an error or panicked) and no expectation covers it.
    Failed,
    /// The device lacks what it needs.
    Skipped,
    /// It failed, as an expectation says it does on this device.
    ExpectedFailure,
    /// It passed although a (non-flaky) expectation says it fails here: update the table.
    UnexpectedPass,
}

impl Outcome {
    /// The key of this outcome's count in the JSON summary (plural: `expected_failures`).
    pub fn key(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::ExpectedFailure => "expected_failures",
            Outcome::UnexpectedPass => "unexpected_passes",
        }
    }

    /// The outcome of one test, as the JSON summary writes it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::ExpectedFailure => "expected_failure",
            Outcome::UnexpectedPass => "unexpected_pass",
        }
    }

    /// Whether this outcome makes the run fail.
    pub fn is_bad(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::UnexpectedPass)
    }

    /// The outcome of a finished test: `result` is `Ok(())` on a pass, else `Err((is_skip, message))`.
    pub fn classify(
        result: &Result<(), (bool, String)>,
        expectation: Option<&Expectation>,
    ) -> Outcome {
        match (result, expectation) {
            (Err((true, _)), _) => Outcome::Skipped,
            (Ok(()), None) => Outcome::Passed,
            (Ok(()), Some(e)) if e.flaky => Outcome::Passed,
            (Ok(()), Some(_)) => Outcome::UnexpectedPass,
            (Err(_), None) => Outcome::Failed,
            (Err((_, m)), Some(e)) if e.explains(m) => Outcome::ExpectedFailure,
            // Failing for another reason than the documented bug is a real failure.
            (Err(_), Some(_)) => Outcome::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(flaky: bool) -> Expectation {
        Expectation {
            platform: "p",
            device: "",
            version: "",
            reason: "r",
            link: "l",
            failure: "x",
            flaky,
        }
    }

    #[test]
    fn io_error_converts_into_a_failure_with_its_message() {
        fn t() -> TestResult {
            Err(std::io::Error::other("boom"))?;
            Ok(())
        }
        let e = t().unwrap_err();
        assert!(!e.is_skip());
        assert_eq!(e.message(), "boom");
    }

    #[test]
    fn skip_keeps_its_reason() {
        let e = skip_unless(false, "no images").unwrap_err();
        assert!(e.is_skip());
        assert_eq!(e.to_string(), "skipped: no images");
        assert!(skip_unless(true, "x").is_ok());
    }

    #[test]
    fn classify_applies_expectations() {
        let ok = Ok(());
        let failed = Err((false, "x".to_owned()));
        let skipped = Err((true, "x".to_owned()));
        assert_eq!(Outcome::classify(&ok, None), Outcome::Passed);
        assert_eq!(Outcome::classify(&failed, None), Outcome::Failed);
        assert_eq!(
            Outcome::classify(&skipped, Some(&exp(false))),
            Outcome::Skipped
        );
        assert_eq!(
            Outcome::classify(&failed, Some(&exp(false))),
            Outcome::ExpectedFailure
        );
        assert_eq!(
            Outcome::classify(&ok, Some(&exp(false))),
            Outcome::UnexpectedPass
        );
        // Another failure in a test with an entry is not hidden by it.
        let other = Err((false, "assertion `left == right` failed: 1 != 2".to_owned()));
        assert_eq!(
            Outcome::classify(&other, Some(&exp(false))),
            Outcome::Failed
        );
        assert_eq!(Outcome::classify(&ok, Some(&exp(true))), Outcome::Passed);
        assert!(Outcome::UnexpectedPass.is_bad() && Outcome::Failed.is_bad());
        assert!(!Outcome::ExpectedFailure.is_bad() && !Outcome::Skipped.is_bad());
    }
}

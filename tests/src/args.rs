//! Command-line arguments of the device test binary: the libtest subset that `cargo test` and IDEs pass,
//! plus the matrix's own flags.

use std::path::PathBuf;

/// Parsed arguments.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    /// Positional filters: a test runs if its name (`suite::test`) or full name
    /// (`[platform/device] suite::test`) contains any of them (or equals one, with `--exact`).
    pub filters: Vec<String>,
    /// `--skip PATTERN`, repeatable: tests matching any are left out.
    pub skip: Vec<String>,
    /// `--exact`: filters must match the whole name.
    pub exact: bool,
    /// `--list`: print the test names (`suite::test: test`) and exit.
    pub list: bool,
    /// `--list-devices`: print the selected devices, one tab-separated line each, and exit.
    pub list_devices: bool,
    /// `--ignored`: run only ignored tests; device tests are never ignored, so nothing runs.
    pub ignored: bool,
    /// `-q` / `--quiet`: one character per test instead of one line.
    pub quiet: bool,
    /// `--json PATH`: write the machine-readable summary there (also `CL_TEST_JSON`).
    pub json: Option<PathBuf>,
}

/// libtest flags that take a value and that we accept and ignore.
const IGNORED_WITH_VALUE: &[&str] = &[
    "--test-threads",
    "--format",
    "--color",
    "--logfile",
    "-Z",
    "--shuffle-seed",
];
/// libtest flags without a value that we accept and ignore (tests run one at a time, output is never captured).
const IGNORED_FLAGS: &[&str] = &[
    "--nocapture",
    "--no-capture",
    "--show-output",
    "--include-ignored",
    "--bench",
    "--test",
    "--shuffle",
    "--report-time",
    "--ensure-time",
    "--force-run-in-process",
];

impl Args {
    /// Parses `args` (without the program name).
    ///
    /// # Errors
    ///
    /// A message for an unknown flag or a flag missing its value.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Args, String> {
        let mut a = Args::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or(format!("{name} needs a value"))
            };
            match flag.as_str() {
                "--exact" => a.exact = true,
                "--list" => a.list = true,
                "--list-devices" => a.list_devices = true,
                "--ignored" => a.ignored = true,
                "-q" | "--quiet" => a.quiet = true,
                "--skip" => a.skip.push(value("--skip")?),
                "--json" => a.json = Some(PathBuf::from(value("--json")?)),
                f if IGNORED_WITH_VALUE.contains(&f) => {
                    value(f)?;
                }
                f if IGNORED_FLAGS.contains(&f) => {}
                f if f.starts_with('-') => return Err(format!("unknown option `{f}`")),
                _ => a.filters.push(arg),
            }
        }
        if a.json.is_none() {
            a.json = std::env::var_os("CL_TEST_JSON")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from);
        }
        Ok(a)
    }

    /// Whether the test `name` (`suite::test`), shown as `full` on a device, is selected.
    pub fn selects(&self, name: &str, full: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f || full == f
            } else {
                name.contains(f.as_str()) || full.contains(f.as_str())
            }
        };
        !self.ignored
            && (self.filters.is_empty() || self.filters.iter().any(hit))
            && !self.skip.iter().any(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Args {
        Args::parse(v.iter().map(|s| (*s).to_owned())).unwrap()
    }

    #[test]
    fn parses_libtest_style_arguments() {
        let a = parse(&[
            "buffers::",
            "--skip",
            "slow",
            "--test-threads",
            "1",
            "--nocapture",
            "--json=o.json",
            "-q",
        ]);
        assert_eq!(a.filters, ["buffers::"]);
        assert_eq!(a.skip, ["slow"]);
        assert_eq!(a.json, Some(PathBuf::from("o.json")));
        assert!(a.quiet && !a.exact && !a.list);
    }

    #[test]
    fn unknown_option_and_missing_value_are_errors() {
        assert_eq!(
            Args::parse(["--frobnicate".to_owned()]),
            Err("unknown option `--frobnicate`".to_owned())
        );
        assert_eq!(
            Args::parse(["--skip".to_owned()]),
            Err("--skip needs a value".to_owned())
        );
    }

    #[test]
    fn filters_match_name_or_full_name_and_skip_wins() {
        let a = parse(&["read", "[Oclgrind"]);
        assert!(a.selects("core::read_roundtrips", "[PoCL/cpu] core::read_roundtrips"));
        assert!(a.selects("core::write", "[Oclgrind/Oclgrind Simulator] core::write"));
        assert!(!a.selects("core::write", "[PoCL/cpu] core::write"));
        let a = parse(&["--skip", "write"]);
        assert!(!a.selects("core::write", "[x/y] core::write"));
        assert!(a.selects("core::read", "[x/y] core::read"));
    }

    #[test]
    fn exact_needs_the_whole_name() {
        let a = parse(&["--exact", "core::read"]);
        assert!(a.selects("core::read", "[x/y] core::read"));
        assert!(!a.selects("core::read_more", "[x/y] core::read_more"));
        assert!(!parse(&["--ignored"]).selects("a", "b"));
    }
}

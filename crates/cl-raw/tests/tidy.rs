//! Tidy checks of the wrapper modules' conventions (house style, "Naming"): every public wrapper's
//! first doc line names its C function and links that function's Khronos reference page, and the
//! Rust name is the C name without `cl`, without the module's noun, in snake_case.

use std::fs;
use std::path::Path;

const MODULES: &[(&str, &[&str])] = &[
    // (module file, nouns dropped from C names in that module)
    ("platform", &["Platform"]),
    ("device", &["Device"]),
    ("context", &["Context"]),
    ("queue", &["CommandQueue"]),
    ("event", &["Event"]),
    ("program", &["Program"]),
    ("kernel", &["Kernel"]),
    ("mem", &["MemObject"]),
    ("image", &["Image"]),
    ("sampler", &["Sampler"]),
    ("pipe", &["Pipe"]),
    ("svm", &["SVM"]),
];

/// Deliberate exceptions: `(module::rust_name, C name, why)`.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "platform::get_extension_function_address",
        "clGetExtensionFunctionAddressForPlatform",
        "the only usable variant (the plain one is deprecated and cl-sys declares it without a return type), so it takes the short name",
    ),
    (
        "program::get_binaries",
        "clGetProgramInfo",
        "CL_PROGRAM_BINARIES fills caller-allocated buffers through an array of pointers, which the size-then-fill get_info cannot do",
    ),
];

/// `EnqueueReadBuffer` -> `enqueue_read_buffer`; `SVMMemcpy` -> `svm_memcpy`.
fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_digit() && i > 0 && chars[i - 1].is_ascii_lowercase() {
            // `CreateImage2D` -> `create_2d` (after dropping the noun): digits start a word.
            out.push('_');
            out.push(c);
        } else if c.is_ascii_uppercase() {
            let prev_lower = i > 0 && chars[i - 1].is_ascii_lowercase();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The Rust names a C function may have in a module with the given nouns.
fn expected_names(c_name: &str, nouns: &[&str]) -> Vec<String> {
    let bare = c_name.strip_prefix("cl").unwrap_or(c_name);
    let mut names = vec![snake(bare)];
    for noun in nouns {
        if let Some(pos) = bare.find(noun) {
            let dropped = format!("{}{}", &bare[..pos], &bare[pos + noun.len()..]);
            names.push(snake(&dropped));
        }
    }
    // `clGetDeviceIDs` -> `get_ids`: "IDs" reads as one word.
    names
        .iter()
        .map(|n| n.replace("i_ds", "ids").trim_matches('_').to_owned())
        .collect()
}

#[test]
fn every_wrapper_links_its_khronos_page_and_is_named_after_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for (module, nouns) in MODULES {
        let text = fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line
                .strip_prefix("pub unsafe fn ")
                .or_else(|| line.strip_prefix("pub fn "))
                .or_else(|| macro_wrapper(line))
            else {
                continue;
            };
            let rust_name = rest.split(['(', '<']).next().unwrap();
            // Walk up over attributes and the doc block to its first line.
            let j = doc_start(&lines, i);
            let first = lines[j].trim_start();
            let doc: String = lines[j..i]
                .iter()
                .map(|l| l.trim_start())
                .filter(|l| l.starts_with("///"))
                .map(|l| l.trim_start_matches("///"))
                .collect();
            let c_name = first
                .strip_prefix("/// [`")
                .and_then(|r| r.split('`').next())
                .unwrap_or_else(|| {
                    panic!(
                        "{module}::{rust_name}: first doc line must be [`clName`](link): {first}"
                    )
                });
            let link =
                format!("https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/{c_name}.html");
            assert!(
                doc.contains(&link),
                "{module}::{rust_name}: missing link {link}"
            );
            assert!(c_name.starts_with("cl"), "{module}::{rust_name}: {c_name}");
            let qualified = format!("{module}::{rust_name}");
            if EXCEPTIONS
                .iter()
                .any(|(q, c, _)| *q == qualified && *c == c_name)
            {
                checked += 1;
                continue;
            }
            let expected = expected_names(c_name, nouns);
            assert!(
                expected.iter().any(|e| e == rust_name),
                "{module}::{rust_name} wraps {c_name}: expected one of {expected:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} wrappers found");
}

#[test]
fn snake_case_matches_the_house_examples() {
    assert_eq!(snake("EnqueueReadBuffer"), "enqueue_read_buffer");
    assert_eq!(
        expected_names("clEnqueueReadBuffer", &["CommandQueue"])[0],
        "enqueue_read_buffer"
    );
    assert!(expected_names("clGetDeviceInfo", &["Device"]).contains(&"get_info".to_owned()));
    assert!(expected_names("clSVMAlloc", &["SVM"]).contains(&"alloc".to_owned()));
    assert!(expected_names("clGetDeviceIDs", &["Device"]).contains(&"get_ids".to_owned()));
    assert!(expected_names("clCreateImage2D", &["Image"]).contains(&"create_2d".to_owned()));
}

/// The line `rest` of a wrapper written through `enqueue_wrappers!` (indented in its invocation):
/// `    pub unsafe fn name(...)`.
fn macro_wrapper(line: &str) -> Option<&str> {
    line.strip_prefix("    pub unsafe fn ")
}

/// What `enqueue_wrappers!` runs first in every wrapper it writes: the site of the C function it
/// calls.
const MACRO_SITE: &str = "fault::check(stringify!($c))?;";

/// The first line of the doc block and attributes above line `i` (any indentation).
fn doc_start(lines: &[&str], i: usize) -> usize {
    let mut j = i;
    while j > 0 && {
        let l = lines[j - 1].trim_start();
        l.starts_with("///") || l.starts_with("#[")
    } {
        j -= 1;
    }
    j
}

/// The wrapper functions of every module: (module, Rust name, C name of the first doc line, body).
fn wrappers() -> Vec<(String, String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for (module, _) in MODULES {
        let text = fs::read_to_string(src.join(format!("{module}.rs")))
            .expect("tidy: reading the sources");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line
                .strip_prefix("pub unsafe fn ")
                .or_else(|| macro_wrapper(line))
            else {
                continue;
            };
            let rust_name = rest
                .split(['(', '<'])
                .next()
                .expect("tidy: reading the sources")
                .to_owned();
            let j = doc_start(&lines, i);
            let c_name = lines[j]
                .trim_start()
                .strip_prefix("/// [`")
                .and_then(|r| r.split('`').next())
                .unwrap_or_default()
                .to_owned();
            // A hand-written wrapper ends at its closing brace, one in a macro at the `;` after
            // its C name. `enqueue_wrappers!` checks the site named by that call, so it stands in
            // for the `fault::check` line a hand-written wrapper holds; `info_fn!` writes
            // queries, which are no sites.
            let in_macro = line.starts_with(' ');
            let site_macro = in_macro
                && lines[..i]
                    .iter()
                    .rev()
                    .find(|l| l.ends_with("! {"))
                    .is_some_and(|l| l.starts_with("enqueue_wrappers!"));
            let end = (i..lines.len())
                .find(|&k| {
                    if in_macro {
                        lines[k].ends_with(';')
                    } else {
                        lines[k] == "}"
                    }
                })
                .unwrap_or(lines.len() - 1);
            let mut body = lines[i..=end].join("\n");
            if site_macro {
                let called = body
                    .split("=> ")
                    .nth(1)
                    .and_then(|c| c.split('(').next())
                    .expect("tidy: a macro wrapper names its C call after `=>`");
                assert!(
                    text.contains(MACRO_SITE),
                    "{module}::{rust_name}: the wrapper macro no longer calls `{MACRO_SITE}`"
                );
                body = format!("{body}\nfault::check(\"{called}\")");
            }
            out.push((module.to_string(), rust_name, c_name, body));
        }
    }
    out
}

/// The fault-injection site list (`src/fault.rs`'s `SITES`), read from the source so that this
/// check needs no feature.
fn sites() -> Vec<String> {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fault.rs"))
        .expect("tidy: reading the sources");
    let start = text
        .find("pub const SITES")
        .expect("tidy: reading the sources");
    let end = start + text[start..].find("];").expect("tidy: reading the sources");
    text[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"'))
        .map(|l| l.trim_end_matches("\",").to_owned())
        .collect()
}

/// Issue 16: every wrapper that creates an object, allocates or enqueues a command is a
/// fault-injection site (it calls `fault::check` with its C name before the driver), and the site
/// list names exactly those wrappers. What counts: `create*`, `enqueue_*`, `alloc` (`clSVMAlloc`),
/// `build` (`clBuildProgram` allocates the program's binaries) and `set_callback`
/// (`clSetEventCallback` allocates the callback's record; cl-mem's keep-alives fall back when it
/// fails, a path only injection reaches).
#[test]
fn every_allocating_or_enqueuing_wrapper_is_a_fault_site() {
    let sites = sites();
    let mut seen = Vec::new();
    for (module, rust_name, c_name, body) in wrappers() {
        let allocates = rust_name.starts_with("create")
            || rust_name.starts_with("enqueue_")
            || rust_name == "alloc"
            || rust_name == "build"
            || rust_name == "set_callback";
        let call = format!("fault::check(\"{c_name}\")");
        if allocates {
            assert!(body.contains(&call), "{module}::{rust_name} lacks `{call}`");
            assert!(
                sites.contains(&c_name),
                "{module}::{rust_name}: {c_name} is missing from fault::SITES"
            );
            seen.push(c_name);
        } else {
            assert!(
                !body.contains("fault::check"),
                "{module}::{rust_name} checks a site but is not an allocation or enqueue"
            );
        }
    }
    for site in &sites {
        assert!(
            seen.contains(site),
            "fault::SITES names {site}, which no wrapper checks"
        );
    }
    assert_eq!(
        seen.len(),
        sites.len(),
        "a site is checked by two wrappers: {seen:?}"
    );
    assert!(sites.len() >= 45, "only {} sites", sites.len());
}

/// Every driver call of cl-mem goes through cl-raw (and so through its fault sites): no
/// `sys::clXxx(` call outside cl-raw.
#[test]
fn cl_mem_calls_the_driver_only_through_cl_raw() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in fs::read_dir(dir).expect("tidy: reading the sources") {
            let p = e.expect("tidy: reading the sources").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    walk(&root.join("cl-mem/src"), &mut files);
    walk(&root.join("cl-pool/src"), &mut files);
    assert!(files.len() > 10);
    for f in files {
        let text = fs::read_to_string(&f).expect("tidy: reading the sources");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(pos) = code.find("sys::cl") {
                let after = &code[pos + 7..];
                let is_call = after.starts_with(|c: char| c.is_ascii_uppercase())
                    && after
                        .split(|c: char| !c.is_ascii_alphanumeric())
                        .next()
                        .is_some_and(|name| after[name.len()..].starts_with('('));
                assert!(
                    !is_call,
                    "{}:{}: a driver call outside cl-raw: {line}",
                    f.display(),
                    n + 1
                );
            }
        }
    }
}

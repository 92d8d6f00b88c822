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
        if c.is_ascii_uppercase() {
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
            else {
                continue;
            };
            let rust_name = rest.split(['(', '<']).next().unwrap();
            // Walk up over attributes and the doc block to its first line.
            let mut j = i;
            while j > 0 && (lines[j - 1].starts_with("///") || lines[j - 1].starts_with("#[")) {
                j -= 1;
            }
            let first = lines[j];
            let doc: String = lines[j..i]
                .iter()
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
}

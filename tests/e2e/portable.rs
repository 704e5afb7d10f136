//! A fresh machine just works, a Mac included: the Makefile and the shell
//! scripts a newcomer runs (`make demo`, `make test`, `make bench`, CI)
//! call no GNU-only tool or flag and no bash feature past the 3.2 a Mac
//! ships as `/bin/bash`.

use std::path::{Path, PathBuf};

/// What a Mac lacks, and what to use instead.
const GNU_ONLY: &[(&str, &str)] = &[
    ("sha256sum", "cksum, or shasum -a 256"),
    ("md5sum", "cksum"),
    ("nproc", "getconf _NPROCESSORS_ONLN"),
    ("readlink -f", "cd \"$(dirname …)\" && pwd"),
    ("sed -i", "a temporary file (BSD sed's -i takes a suffix)"),
    ("date -d", "python3, or the Rust code"),
    ("grep -P", "grep -E"),
    ("stat -c", "wc -c < file"),
    ("base64 -w", "base64 | tr -d '\\n'"),
    ("xargs -r", "a loop"),
    ("-printf", "a loop"),
    ("timeout ", "the program's own deadline"),
    ("declare -A", "a loop (bash 3.2 has no associative arrays)"),
    ("mapfile", "a while read loop (bash 3.2)"),
    ("readarray", "a while read loop (bash 3.2)"),
    ("|&", "2>&1 | (bash 3.2)"),
    ("&>>", ">>file 2>&1 (bash 3.2)"),
];

/// The Makefile, CI's script and every shell script under `infra/`.
fn scripts() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("Makefile"), root.join(".ci/run")];
    for dir in ["infra", "infra/tools"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("infra's folders");
        files.extend(
            entries
                .map(|e| e.expect("an entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "sh")),
        );
    }
    files
}

#[test]
fn the_scripts_a_newcomer_runs_need_nothing_a_mac_lacks() {
    let files = scripts();
    assert!(files.len() >= 5, "the Makefile and the scripts: {files:?}");
    let mut found = vec![];
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a script");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            for (tool, instead) in GNU_ONLY {
                if line.contains(tool) {
                    found.push(format!(
                        "{}:{}: `{tool}` (use {instead})",
                        file.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

//! The build script of every Lambda function and of the hello world they
//! are measured against (`build = "../../infra/build/lambda-link.rs"` in
//! each manifest): on Linux it links the binary as a position-dependent
//! executable, placed at a fixed address.
//!
//! Why: a position-independent executable (Rust's default) holds one
//! relocation for each pointer in its static data (vtables, format strings,
//! panic locations: about 20,000 in the API's binary), and the dynamic
//! loader applies every one of them at each cold start, copying each page
//! it writes to. Linked at a fixed address, the binary needs none: the API
//! starts in 14% fewer instructions and its binary is half a megabyte
//! smaller (`make bench` prints both).
//!
//! The trade-off: the binary's own code and data are not placed at a random
//! address, as with Go's default build on Linux (which Lambda's Go functions
//! use). Its shared libraries, stack, heap and other mappings still are, and
//! the code is memory-safe Rust. `ADTRAIL_PIE=1` at build time (`sam build`,
//! `make build-lambdas`) links a position-independent binary instead.
//!
//! Only the package's binaries are linked so (`rustc-link-arg-bins`): its
//! library and tests keep the default, and a build for another system (a
//! Mac's `cargo test`) is left alone.

fn main() {
    println!("cargo::rerun-if-env-changed=ADTRAIL_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let pie = std::env::var("ADTRAIL_PIE").is_ok_and(|v| v == "1");
    if linux && !pie {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}

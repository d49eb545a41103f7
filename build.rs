//! Link flags for the `coordlab` binary.
//!
//! Why: a launch of thousands of nodes forks each from a zygote that keeps the binary's code in
//! anonymous memory (src/cluster/fork_code.rs), which `fork` copies entry by entry and every
//! node's exit unmaps entry by entry. Segments aligned to 2 MiB let that copy sit in huge pages
//! (one entry per 2 MiB instead of 512); glibc (2.35 and later) loads a position-independent
//! binary at an address aligned to its segments' alignment. Linux only; elsewhere nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,max-page-size=0x200000");
        println!("cargo:rustc-link-arg-bins=-Wl,-z,separate-code");
    }
}

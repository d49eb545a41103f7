//! Places the functions a node process runs side by side at the start of the binary's code,
//! in the order `bin/node-order.txt` lists them (written by `scripts/order-code.sh`, which
//! records what nodes of every algorithm call). A node then maps a few hundred KiB of code
//! instead of most of the 4 MiB: each page it touches is faulted in with its neighbours, and
//! the launcher's, checker's and renderers' code no longer sits between the node's functions.
//!
//! Only where rustc links with LLD by default (x86_64 Linux, Rust 1.90 and later), whose
//! `--symbol-ordering-file` this is; names the file does not know (another compiler version,
//! changed code) keep their usual place. `COORDLAB_NO_CODE_ORDER=1` turns it off.

use std::path::Path;
use std::process::Command;

const ORDER: &str = "bin/node-order.txt";

fn main() {
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-env-changed=COORDLAB_NO_CODE_ORDER");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&dir).join(ORDER);
    let wanted = std::env::var_os("COORDLAB_NO_CODE_ORDER").is_none_or(|v| v.is_empty() || v == "0");
    if wanted && links_with_lld() && order.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether rustc links this target with its own LLD by default.
fn links_with_lld() -> bool {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}

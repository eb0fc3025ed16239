//! Links macOS binaries without an SDK: chrono's local time zone (its `clock` feature, through
//! iana-time-zone) names the CoreFoundation framework, which a non-Mac host does not have. When
//! building for macOS anywhere but on a Mac with no `SDKROOT` given, the linker is pointed at a
//! text stub of the framework (`build/CoreFoundation.framework`), which lists the symbols used;
//! the binary then loads the real framework on the Mac, as any Mac program does.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-env-changed=SDKROOT");
    let for_mac = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos");
    let on_mac = cfg!(target_os = "macos");
    if for_mac && !on_mac && env::var_os("SDKROOT").is_none() {
        let stubs = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("build");
        println!("cargo:rustc-link-search=framework={}", stubs.display());
    }
}

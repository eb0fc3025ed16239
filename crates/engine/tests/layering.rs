//! The engine knows nothing of its faces: no MCP, no napi, no JSON-schema crate in its tree.

use std::process::Command;

#[test]
fn the_engine_does_not_depend_on_rmcp_napi_or_schemars() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "ptyjobs-engine",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.contains("vt100"),
        "cargo tree printed something unexpected:\n{tree}"
    );
    for face in ["rmcp", "napi", "schemars"] {
        let found: Vec<&str> = tree.lines().filter(|l| l.starts_with(face)).collect();
        assert!(found.is_empty(), "the engine depends on {face}: {found:?}");
    }
}

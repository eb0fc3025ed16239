//! The policy file's errors name the file, the line and the key; a good file resolves.

use std::io::Write as _;

use super::*;

/// Whether this platform refuses every policy before reading its file (all but Linux): then
/// there is nothing here to test, and the test says so.
fn not_here() -> bool {
    let skip = !crate::sys::sandbox::PLATFORM_ENFORCES;
    if skip {
        eprintln!("skipped: a policy is refused before its file is read on this platform");
    }
    skip
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let file = dir.join("policy.toml");
    let mut f = std::fs::File::create(&file).expect("create");
    f.write_all(text.as_bytes()).expect("write");
    file
}

fn read(text: &str) -> (tempfile::TempDir, std::result::Result<Policy, String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), text);
    let p = Policy::read(&file);
    (dir, p)
}

#[test]
fn an_unknown_key_names_the_file_the_line_and_the_key() {
    if not_here() {
        return;
    }
    let (_d, p) = read("[profiles.default]\nwrite = []\nwirte = [\"/tmp\"]\n");
    let e = p.expect_err("unknown key");
    assert!(e.contains("policy.toml"), "{e}");
    assert!(e.contains("line 3"), "{e}");
    assert!(e.contains("wirte"), "{e}");
}

#[test]
fn a_root_that_does_not_resolve_names_the_line_and_the_key() {
    if not_here() {
        return;
    }
    let (_d, p) = read("agent_profiles = []\n[profiles.default]\nwrite = [\"/no/such/dir\"]\n");
    let e = p.expect_err("missing root");
    assert!(
        e.contains("line 3") && e.contains("profiles.default.write"),
        "{e}"
    );
    assert!(e.contains("/no/such/dir"), "{e}");
}

#[test]
fn invalid_toml_a_bad_network_and_a_missing_default_are_start_errors() {
    if not_here() {
        return;
    }
    let (_d, p) = read("[profiles.default\n");
    assert!(p.expect_err("bad toml").contains("line 1"));
    let (_d, p) = read("[profiles.default]\nnetwork = \"sometimes\"\n");
    let e = p.expect_err("bad network");
    assert!(e.contains("line 2") && e.contains("network"), "{e}");
    let (_d, p) = read("[profiles.build]\n");
    assert!(p.expect_err("no default").contains("profiles.default"));
    let (_d, p) = read("agent_profiles = [\"nope\"]\n[profiles.default]\n");
    let e = p.expect_err("unknown agent profile");
    assert!(e.contains("agent_profiles") && e.contains("nope"), "{e}");
}

#[test]
fn the_policy_file_inside_a_write_root_is_refused() {
    if not_here() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let file = write(
        &root,
        &format!(
            "[profiles.default]\nwrite = [{:?}]\n",
            root.display().to_string()
        ),
    );
    let e = Policy::read(&file).expect_err("inside a root");
    assert!(e.contains("write root"), "{e}");
}

#[test]
fn a_good_file_resolves_home_relative_paths_ports_and_exec_names() {
    if not_here() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("proj");
    std::fs::create_dir(&root).expect("mkdir");
    let file = write(
        dir.path(),
        &format!(
            "agent_profiles = [\"build\"]\n[profiles.default]\nwrite = [{:?}]\n\
             watch = [\".git/hooks\"]\n\
             [profiles.build]\nnetwork = {{ connect = [443], bind = [5173] }}\nexec = [\"sh\"]\n\
             enforce = \"best-effort\"\n",
            root.display().to_string()
        ),
    );
    let p = Policy::read(&file).expect("good file");
    let d = &p.profiles["default"];
    assert_eq!(d.spec.write, vec![root.canonicalize().expect("canonical")]);
    assert_eq!(d.spec.read, vec![PathBuf::from("/")]);
    assert_eq!(d.spec.net, Some(NetPorts::default()));
    assert!(d.watch[0].is_absolute());
    let b = &p.profiles["build"];
    assert_eq!(
        b.spec.net,
        Some(NetPorts {
            connect: vec![443],
            bind: vec![5173]
        })
    );
    assert!(b.spec.best_effort);
    assert!(b.spec.exec.as_ref().expect("exec")[0].is_absolute());
    assert!(p.job_profile(Some("build")).is_ok());
    assert!(p.job_profile(None).is_ok());
}

#[test]
fn a_job_may_name_only_the_default_and_the_agent_profiles() {
    if not_here() {
        return;
    }
    let (_d, p) = read("[profiles.default]\n[profiles.open]\nnetwork = \"on\"\n");
    let p = p.expect("good file");
    let e = p
        .job_profile(Some("open"))
        .expect_err("not an agent profile");
    assert!(e.to_string().contains("\"default\""), "{e}");
}

#[test]
fn a_kernel_that_cannot_enforce_refuses_the_profile_unless_it_is_best_effort() {
    if not_here() {
        return;
    }
    let (_d, p) = read(
        "[profiles.default]\n[profiles.loose]\nenforce = \"best-effort\"\n\
         [profiles.sockets]\nunix_sockets = [\"/\"]\n",
    );
    let mut p = p.expect("good file");
    let old = crate::sys::sandbox::Support {
        landlock_abi: 3,
        seccomp: true,
    };
    let strict = p.profiles.get_mut("default").expect("default");
    enforce::describe(strict, old);
    let why = strict.refused.clone().expect("refused");
    assert!(
        why.contains("ABI 4") && why.contains("best-effort"),
        "{why}"
    );
    let loose = p.profiles.get_mut("loose").expect("loose");
    enforce::describe(loose, old);
    assert!(loose.refused.is_none());
    assert!(loose.report.not_enforced.iter().any(|n| n.contains("TCP")));
    // Listed sockets before Landlock ABI 9: connected on the job's behalf (seccomp), so
    // enforced where seccomp is, refused where it is not.
    let sockets = p.profiles.get_mut("sockets").expect("sockets");
    let abi7 = |seccomp| crate::sys::sandbox::Support {
        landlock_abi: 7,
        seccomp,
    };
    enforce::describe(sockets, abi7(true));
    assert!(sockets.refused.is_none(), "{:?}", sockets.refused);
    assert!(
        sockets
            .report
            .enforced
            .iter()
            .any(|e| e.contains("connect-on-behalf")),
        "{:?}",
        sockets.report
    );
    enforce::describe(sockets, abi7(false));
    assert!(
        sockets
            .refused
            .as_deref()
            .is_some_and(|w| w.contains("file-path Unix socket connects only to"))
    );
}

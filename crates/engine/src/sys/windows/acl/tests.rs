//! The access rules of the state directory, on descriptors built in memory and on disk.

use super::*;
use windows_sys::Win32::Security::{WinAnonymousSid, WinBuiltinUsersSid, WinWorldSid};

const INHERIT: u8 = (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) as u8;

fn text(sid: &Sid) -> String {
    // SAFETY: a SID built by Sid's constructors.
    unsafe { sid_text(sid.as_psid()) }
}

fn me() -> Sid {
    Sid::current_user().unwrap()
}

fn known(kind: WELL_KNOWN_SID_TYPE) -> Sid {
    Sid::well_known(kind).unwrap()
}

/// Whether this runs under Wine (ntdll exports `wine_get_version`).
fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: NUL-terminated names; ntdll is loaded in every process.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

fn check(sd: &Descriptor) -> std::io::Result<()> {
    // SAFETY: a descriptor built by Descriptor::new, alive here.
    unsafe { check_descriptor(sd.as_ptr(), &me(), Path::new("C:\\state")) }
}

fn read_back(path: &Path) -> (String, Option<Vec<Entry>>) {
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
        .unwrap();
    let sd = security_of(dir.as_raw_handle()).unwrap();
    // SAFETY: a self-relative descriptor filled by GetKernelObjectSecurity.
    unsafe { describe(sd.as_ptr().cast_mut().cast()).unwrap() }
}

use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;

#[test]
fn the_descriptor_of_a_created_directory_grants_the_user_alone_inherited_full_control() {
    let sd = Descriptor::user_only().unwrap();
    // SAFETY: a descriptor built by Descriptor::new, alive here.
    let (owner, dacl) = unsafe { describe(sd.as_ptr()).unwrap() };
    assert_eq!(owner, text(&me()));
    let want = Entry {
        kind: ALLOWED,
        flags: INHERIT,
        mask: FILE_ALL_ACCESS,
        sid: text(&me()),
    };
    assert_eq!(dacl, Some(vec![want]));
    let mut control = 0u16;
    let mut revision = 0u32;
    // SAFETY: a valid descriptor and out-pointers.
    let ok = unsafe {
        windows_sys::Win32::Security::GetSecurityDescriptorControl(
            sd.as_ptr(),
            &mut control,
            &mut revision,
        )
    };
    assert_ne!(ok, 0);
    assert_ne!(
        control & SE_DACL_PROTECTED,
        0,
        "nothing is inherited from the parent"
    );
    check(&sd).unwrap();
}

#[test]
fn only_this_user_system_and_administrators_may_be_granted_access() {
    let with = |owner: Sid, extra: Vec<(Sid, u32)>| {
        let mut grants = vec![(me(), FILE_ALL_ACCESS)];
        grants.extend(extra);
        Descriptor::new(owner, grants).unwrap()
    };
    // What %LOCALAPPDATA% itself grants is fine.
    check(&with(
        me(),
        vec![
            (known(WinLocalSystemSid), FILE_ALL_ACCESS),
            (known(WinBuiltinAdministratorsSid), FILE_ALL_ACCESS),
        ],
    ))
    .unwrap();
    // An entry granting nothing grants nothing.
    check(&with(me(), vec![(known(WinWorldSid), 0)])).unwrap();
    for (who, mask) in [
        (WinWorldSid, 0x1200a9),
        (WinBuiltinUsersSid, FILE_ALL_ACCESS),
    ] {
        let e = check(&with(me(), vec![(known(who), mask)])).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("grants {} access", text(&known(who)))),
            "{msg}"
        );
        assert!(
            msg.contains("C:\\state") && msg.contains("Delete it"),
            "{msg}"
        );
    }
    let e = check(&with(known(WinAnonymousSid), vec![])).unwrap_err();
    assert!(
        e.to_string().contains("owned by S-1-5-7, not by this user"),
        "{e}"
    );
    // No DACL at all: everyone may do anything.
    let mut sd = with(me(), vec![]);
    // SAFETY: a descriptor built by Descriptor::new; a NULL DACL is a valid one.
    unsafe { SetSecurityDescriptorDacl(sd.as_mut_ptr(), 1, std::ptr::null(), 0) };
    let e = check(&sd).unwrap_err();
    assert!(e.to_string().contains("no access control list"), "{e}");
}

#[test]
fn a_created_directory_is_the_users_and_one_opened_to_everyone_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("made");
    assert!(create_dir_private(&dir).unwrap());
    assert!(!create_dir_private(&dir).unwrap(), "it exists now");
    let (owner, dacl) = read_back(&dir);
    assert_eq!(owner, text(&me()));
    let dacl = dacl.expect("a DACL");
    let mine = Entry {
        kind: ALLOWED,
        flags: INHERIT,
        mask: FILE_ALL_ACCESS,
        sid: text(&me()),
    };
    if under_wine() {
        // Wine 8 stores no DACL: it reads one back from the Unix mode, which our DACL set
        // to the owner's bits only (0700 less the umask): SYSTEM and the user, no one else.
        // The exact DACL shows only on Windows (the release workflow's runners).
        let system = Entry {
            sid: text(&known(WinLocalSystemSid)),
            ..mine.clone()
        };
        assert_eq!(dacl, vec![system, mine], "Wine's view of mode 07x0");
    } else {
        assert_eq!(dacl, vec![mine], "exactly the user-only DACL");
    }
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS)
        .open(&dir)
        .unwrap();
    check_private(handle.as_raw_handle(), &dir).unwrap();
    drop(handle);

    // Everyone given read access afterwards (under Wine: the mode gets "other" bits).
    grant_everyone(&dir);
    let world = text(&known(WinWorldSid));
    let (_, dacl) = read_back(&dir);
    assert!(
        dacl.unwrap()
            .iter()
            .any(|e| e.sid == world && e.kind == ALLOWED)
    );
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS)
        .open(&dir)
        .unwrap();
    let e = check_private(handle.as_raw_handle(), &dir).unwrap_err();
    assert!(
        e.to_string().contains(&format!("grants {world} access")),
        "{e}"
    );
}

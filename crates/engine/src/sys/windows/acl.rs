//! The user-only access control of the state directory on Windows: what `0700` and the owner
//! check are on Unix.
//!
//! - **Created** directories (the state directory, `jobs\` and each job's directory) get an
//!   explicit security descriptor: owner = the user of this process's token, and a *protected*
//!   DACL (nothing inherited from the parent) with one entry: that user, full control,
//!   inherited by the files and directories made inside (`OI|CI`). Nothing else: not
//!   `SYSTEM`, not `Administrators`. Windows' own per-user folders (`%LOCALAPPDATA%`) do list
//!   those two, but they need no entry to reach the files anyway (backup and take-ownership
//!   privileges, as root needs no mode bit on Unix), and an elevated administrator is another
//!   person on a shared machine. The owner is set explicitly so that a directory created by an
//!   elevated process is still the user's (its default owner would be `Administrators`).
//! - An **existing** directory is checked, as on Unix, and refused rather than repaired (its
//!   history is unknown; the message says what to do): its owner must be this user, and its
//!   DACL may grant access to no one but this user, `SYSTEM` and `Administrators` (the entries
//!   `%LOCALAPPDATA%` itself has, so a directory made there by hand or by an older ptyjobs is
//!   accepted). A missing (NULL) DACL grants everyone everything and is refused; deny entries
//!   and entries granting nothing are harmless; an entry of a kind this code does not read is
//!   refused.
//!
//! Under Wine (where the test suite runs the Windows build) a directory's security is not
//! stored: Wine 8 derives it from the Unix mode bits and owner (`SYSTEM` + the user, plus
//! `Everyone` when "other" has any bit; an owner other than the Unix user reads back as
//! `ANONYMOUS LOGON`), and setting a DACL sets the mode. The checks above hold there too.

use std::path::Path;

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_ALREADY_EXISTS, ERROR_INSUFFICIENT_BUFFER, GetLastError, HANDLE, LocalFree,
};
use windows_sys::Win32::Security::Authorization::ConvertSidToStringSidW;
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, ACL_REVISION, AddAccessAllowedAceEx,
    CONTAINER_INHERIT_ACE, CopySid, CreateWellKnownSid, DACL_SECURITY_INFORMATION, EqualSid,
    GetAce, GetKernelObjectSecurity, GetLengthSid, GetSecurityDescriptorDacl,
    GetSecurityDescriptorOwner, GetTokenInformation, InitializeAcl, InitializeSecurityDescriptor,
    IsValidSid, OBJECT_INHERIT_ACE, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
    SE_DACL_PROTECTED, SECURITY_ATTRIBUTES, SECURITY_DESCRIPTOR, SECURITY_MAX_SID_SIZE,
    SetSecurityDescriptorControl, SetSecurityDescriptorDacl, SetSecurityDescriptorOwner,
    TOKEN_QUERY, TOKEN_USER, TokenUser, WELL_KNOWN_SID_TYPE, WinBuiltinAdministratorsSid,
    WinLocalSystemSid,
};
use windows_sys::Win32::Storage::FileSystem::{CreateDirectoryW, FILE_ALL_ACCESS};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// `ACCESS_ALLOWED_ACE_TYPE` and `ACCESS_DENIED_ACE_TYPE`: the two kinds of entry read here.
const ALLOWED: u8 = 0;
const DENIED: u8 = 1;
/// The revision of an absolute security descriptor (`SECURITY_DESCRIPTOR_REVISION`).
const SD_REVISION: u32 = 1;

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A security identifier, copied into memory of its own (DWORD-aligned, as a SID must be).
#[derive(Clone)]
pub(crate) struct Sid(Vec<u32>);

impl Sid {
    /// A copy of the SID at `sid`.
    ///
    /// # Safety
    /// `sid` points to a valid SID.
    unsafe fn copy(sid: PSID) -> std::io::Result<Self> {
        // SAFETY: the caller's promise.
        let len = unsafe { GetLengthSid(sid) };
        let mut buf = vec![0u32; (len as usize).div_ceil(4)];
        // SAFETY: a buffer of at least `len` bytes.
        if unsafe { CopySid(len, buf.as_mut_ptr().cast(), sid) } == 0 {
            return Err(last_error());
        }
        Ok(Self(buf))
    }

    /// The user of this process's token.
    pub(crate) fn current_user() -> std::io::Result<Self> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: the pseudo handle of this process and an out-pointer.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
            return Err(last_error());
        }
        let mut buf = vec![0u64; 64];
        let mut needed = 0u32;
        let size = u32::try_from(buf.len() * 8).unwrap_or(u32::MAX);
        // SAFETY: a buffer of `size` bytes, aligned for TOKEN_USER.
        let ok = unsafe {
            GetTokenInformation(token, TokenUser, buf.as_mut_ptr().cast(), size, &mut needed)
        };
        let err = last_error();
        // SAFETY: the token opened above, closed once.
        unsafe { CloseHandle(token) };
        if ok == 0 {
            return Err(err);
        }
        // SAFETY: the call filled a TOKEN_USER whose SID points into `buf`, alive here.
        unsafe { Self::copy((*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid) }
    }

    /// A well-known SID (`WinLocalSystemSid`, `WinWorldSid`, ...).
    pub(crate) fn well_known(kind: WELL_KNOWN_SID_TYPE) -> std::io::Result<Self> {
        let mut buf = vec![0u32; SECURITY_MAX_SID_SIZE as usize / 4];
        let mut len = SECURITY_MAX_SID_SIZE;
        // SAFETY: a buffer of `len` bytes; no domain.
        let ok = unsafe {
            CreateWellKnownSid(
                kind,
                std::ptr::null_mut(),
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if ok == 0 {
            return Err(last_error());
        }
        Ok(Self(buf))
    }

    pub(crate) fn as_psid(&self) -> PSID {
        self.0.as_ptr().cast_mut().cast()
    }

    /// Whether `sid` is this SID.
    ///
    /// # Safety
    /// `sid` points to a valid SID.
    unsafe fn is(&self, sid: PSID) -> bool {
        // SAFETY: two valid SIDs.
        unsafe { EqualSid(self.as_psid(), sid) != 0 }
    }
}

/// `S-1-5-...`: the text form of the SID at `sid`, for messages.
///
/// # Safety
/// `sid` points to a valid SID.
unsafe fn sid_text(sid: PSID) -> String {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: a valid SID and an out-pointer; the string is freed with LocalFree below.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 || text.is_null() {
        return "an unreadable SID".into();
    }
    // SAFETY: a NUL-terminated string allocated by the call.
    let s = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
    };
    // SAFETY: allocated by ConvertSidToStringSidW.
    unsafe { LocalFree(text.cast()) };
    s
}

/// A security descriptor built here: an owner and a protected DACL of "allow" entries, each
/// inherited by what is created inside. Owns the memory the descriptor points into.
pub(crate) struct Descriptor {
    sd: Box<SECURITY_DESCRIPTOR>,
    _acl: Vec<u32>,
    _sids: Vec<Sid>,
}

impl Descriptor {
    /// Owner `owner` and a protected DACL granting each of `grants` its access mask, inherited
    /// (`OI|CI`).
    pub(crate) fn new(owner: Sid, grants: Vec<(Sid, u32)>) -> std::io::Result<Self> {
        let mut size = std::mem::size_of::<ACL>();
        for (sid, _) in &grants {
            // SAFETY: a SID built by Sid's constructors.
            let len = unsafe { GetLengthSid(sid.as_psid()) } as usize;
            size += std::mem::size_of::<ACCESS_ALLOWED_ACE>() - 4 + len;
        }
        let mut acl = vec![0u32; size.div_ceil(4)];
        let acl_ptr = acl.as_mut_ptr().cast::<ACL>();
        let acl_size = u32::try_from(acl.len() * 4).unwrap_or(u32::MAX);
        // SAFETY: a zeroed, DWORD-aligned buffer of `acl_size` bytes.
        if unsafe { InitializeAcl(acl_ptr, acl_size, ACL_REVISION) } == 0 {
            return Err(last_error());
        }
        for (sid, mask) in &grants {
            let inherit = OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE;
            // SAFETY: the ACL initialised above, sized for every entry; a valid SID.
            if unsafe {
                AddAccessAllowedAceEx(acl_ptr, ACL_REVISION, inherit, *mask, sid.as_psid())
            } == 0
            {
                return Err(last_error());
            }
        }
        // SAFETY: SECURITY_DESCRIPTOR is plain data; it is initialised by the call.
        let mut sd: Box<SECURITY_DESCRIPTOR> = Box::new(unsafe { std::mem::zeroed() });
        let p: PSECURITY_DESCRIPTOR = (&mut *sd as *mut SECURITY_DESCRIPTOR).cast();
        // SAFETY: the descriptor points at `owner` and `acl`, which `Self` keeps alive and
        // which do not move (heap buffers, moved only as owners).
        let ok = unsafe {
            InitializeSecurityDescriptor(p, SD_REVISION) != 0
                && SetSecurityDescriptorOwner(p, owner.as_psid(), 0) != 0
                && SetSecurityDescriptorDacl(p, 1, acl_ptr, 0) != 0
                && SetSecurityDescriptorControl(p, SE_DACL_PROTECTED, SE_DACL_PROTECTED) != 0
        };
        if !ok {
            return Err(last_error());
        }
        let mut sids = vec![owner];
        sids.extend(grants.into_iter().map(|(sid, _)| sid));
        Ok(Self {
            sd,
            _acl: acl,
            _sids: sids,
        })
    }

    /// The user-only descriptor of a created directory: owner the user, one entry granting
    /// the user full control (see the module docs).
    pub(crate) fn user_only() -> std::io::Result<Self> {
        let user = Sid::current_user()?;
        Self::new(user.clone(), vec![(user, FILE_ALL_ACCESS)])
    }

    /// The descriptor, for calls that read it.
    pub(crate) fn as_ptr(&self) -> PSECURITY_DESCRIPTOR {
        (&*self.sd as *const SECURITY_DESCRIPTOR).cast_mut().cast()
    }

    /// The descriptor, for a test that changes it.
    #[cfg(test)]
    fn as_mut_ptr(&mut self) -> PSECURITY_DESCRIPTOR {
        (&mut *self.sd as *mut SECURITY_DESCRIPTOR).cast()
    }
}

/// Creates the directory `path` with the user-only descriptor; `Ok(false)` when it existed
/// (then nothing about it is changed: [`check_private`] decides).
pub(crate) fn create_dir_private(path: &Path) -> std::io::Result<bool> {
    let sd = Descriptor::user_only()?;
    let attrs = SECURITY_ATTRIBUTES {
        nLength: u32::try_from(std::mem::size_of::<SECURITY_ATTRIBUTES>()).unwrap_or(0),
        lpSecurityDescriptor: sd.as_ptr(),
        bInheritHandle: 0,
    };
    let name = super::wide(path.as_os_str());
    // SAFETY: a NUL-terminated path and attributes pointing at `sd`, alive for the call.
    if unsafe { CreateDirectoryW(name.as_ptr(), &attrs) } != 0 {
        return Ok(true);
    }
    // SAFETY: no call in between.
    if unsafe { GetLastError() } == ERROR_ALREADY_EXISTS {
        return Ok(false);
    }
    Err(last_error())
}

/// The owner and DACL of the file or directory open as `handle`, self-relative.
pub(crate) fn security_of(handle: HANDLE) -> std::io::Result<Vec<u64>> {
    let what = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
    let mut buf = vec![0u64; 64];
    loop {
        let size = u32::try_from(buf.len() * 8).unwrap_or(u32::MAX);
        let mut needed = 0u32;
        // SAFETY: a buffer of `size` bytes and an out-pointer.
        if unsafe {
            GetKernelObjectSecurity(handle, what, buf.as_mut_ptr().cast(), size, &mut needed)
        } != 0
        {
            return Ok(buf);
        }
        // SAFETY: no call in between.
        if unsafe { GetLastError() } != ERROR_INSUFFICIENT_BUFFER || needed <= size {
            return Err(last_error());
        }
        buf = vec![0u64; (needed as usize).div_ceil(8)];
    }
}

/// One entry of a DACL as read back: its kind, flags, access mask and SID (as text).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) mask: u32,
    pub(crate) sid: String,
}

/// What a descriptor says: the owner (text) and the DACL (`None`: no DACL, everyone may do
/// anything).
///
/// # Safety
/// `sd` points to a valid security descriptor holding the owner and DACL.
#[cfg(test)]
pub(crate) unsafe fn describe(
    sd: PSECURITY_DESCRIPTOR,
) -> std::io::Result<(String, Option<Vec<Entry>>)> {
    // SAFETY: the caller's promise; every ACE read lies inside the ACL GetAce walks.
    unsafe {
        let (owner, acl) = parts(sd)?;
        let owner = if owner.is_null() {
            "no owner".into()
        } else {
            sid_text(owner)
        };
        let Some(acl) = acl else {
            return Ok((owner, None));
        };
        let mut out = Vec::new();
        for i in 0..u32::from((*acl).AceCount) {
            let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
            if GetAce(acl, i, &mut ace) == 0 {
                return Err(last_error());
            }
            let header = *ace.cast::<ACE_HEADER>();
            let (mask, sid) = if matches!(header.AceType, ALLOWED | DENIED) {
                let a = ace.cast::<ACCESS_ALLOWED_ACE>();
                ((*a).Mask, sid_text((&raw mut (*a).SidStart).cast()))
            } else {
                (0, String::new())
            };
            out.push(Entry {
                kind: header.AceType,
                flags: header.AceFlags,
                mask,
                sid,
            });
        }
        Ok((owner, Some(out)))
    }
}

/// The owner and the DACL (`None` when absent or NULL) of `sd`.
///
/// # Safety
/// `sd` points to a valid security descriptor.
unsafe fn parts(sd: PSECURITY_DESCRIPTOR) -> std::io::Result<(PSID, Option<*const ACL>)> {
    let mut owner: PSID = std::ptr::null_mut();
    let mut defaulted = 0;
    let (mut present, mut acl) = (0, std::ptr::null_mut::<ACL>());
    // SAFETY: the caller's promise; out-pointers.
    let ok = unsafe {
        GetSecurityDescriptorOwner(sd, &mut owner, &mut defaulted) != 0
            && GetSecurityDescriptorDacl(sd, &mut present, &mut acl, &mut defaulted) != 0
    };
    if !ok {
        return Err(last_error());
    }
    Ok((
        owner,
        (present != 0 && !acl.is_null()).then_some(acl.cast_const()),
    ))
}

/// Refuses a descriptor whose owner is not `user` or whose DACL grants anyone but `user`,
/// `SYSTEM` and `Administrators` any access (see the module docs); `what` names the
/// directory in the message, which says what to do.
///
/// # Safety
/// `sd` points to a valid security descriptor holding the owner and DACL.
pub(crate) unsafe fn check_descriptor(
    sd: PSECURITY_DESCRIPTOR,
    user: &Sid,
    what: &Path,
) -> std::io::Result<()> {
    let refuse = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "refusing {}: {why}; another user could read or plant files in it. Delete it \
                 (ptyjobs recreates it for this user only) or use another directory",
                what.display()
            ),
        )
    };
    // SAFETY: the caller's promise.
    let (owner, acl) = unsafe { parts(sd)? };
    // SAFETY: SIDs read from a valid descriptor.
    unsafe {
        if owner.is_null() || IsValidSid(owner) == 0 {
            return Err(refuse("it has no owner".into()));
        }
        if !user.is(owner) {
            return Err(refuse(format!(
                "it is owned by {}, not by this user ({})",
                sid_text(owner),
                sid_text(user.as_psid())
            )));
        }
    }
    let Some(acl) = acl else {
        return Err(refuse(
            "it has no access control list (everyone may do anything in it)".into(),
        ));
    };
    let trusted = [
        Sid::well_known(WinLocalSystemSid)?,
        Sid::well_known(WinBuiltinAdministratorsSid)?,
    ];
    // SAFETY: every ACE read lies inside the ACL GetAce walks.
    unsafe {
        for i in 0..u32::from((*acl).AceCount) {
            let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
            if GetAce(acl, i, &mut ace) == 0 {
                return Err(last_error());
            }
            let header = *ace.cast::<ACE_HEADER>();
            match header.AceType {
                DENIED => continue,
                ALLOWED => {}
                other => {
                    return Err(refuse(format!(
                        "its access control list holds an entry of type {other}, which \
                         ptyjobs does not read"
                    )));
                }
            }
            let a = ace.cast::<ACCESS_ALLOWED_ACE>();
            let sid: PSID = (&raw mut (*a).SidStart).cast();
            if (*a).Mask == 0 || user.is(sid) || trusted.iter().any(|t| t.is(sid)) {
                continue;
            }
            return Err(refuse(format!(
                "its access control list grants {} access (mask {:#x})",
                sid_text(sid),
                (*a).Mask
            )));
        }
    }
    Ok(())
}

/// Refuses the directory open as `handle` unless this user owns it and no one else may use
/// it ([`check_descriptor`]); `what` names it in the message.
pub(crate) fn check_private(handle: HANDLE, what: &Path) -> std::io::Result<()> {
    let sd = security_of(handle)?;
    let user = Sid::current_user()?;
    // SAFETY: a self-relative descriptor filled by GetKernelObjectSecurity, alive here.
    unsafe { check_descriptor(sd.as_ptr().cast_mut().cast(), &user, what) }
}

/// Gives `Everyone` read access to `path` (a test's planted directory): under Wine this sets
/// the "other" mode bits.
#[cfg(test)]
pub(crate) fn grant_everyone(path: &Path) {
    use windows_sys::Win32::Security::{SetFileSecurityW, WinWorldSid};
    let me = Sid::current_user().unwrap();
    let world = Sid::well_known(WinWorldSid).unwrap();
    let open = Descriptor::new(me.clone(), vec![(me, FILE_ALL_ACCESS), (world, 0x1200a9)]).unwrap();
    let name = super::wide(path.as_os_str());
    // SAFETY: a NUL-terminated path and a valid descriptor.
    let ok = unsafe { SetFileSecurityW(name.as_ptr(), DACL_SECURITY_INFORMATION, open.as_ptr()) };
    assert_ne!(ok, 0, "{}", last_error());
}

#[cfg(test)]
mod tests;

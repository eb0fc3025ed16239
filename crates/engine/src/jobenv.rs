//! The job environment policy, one for every platform and every face: what a job's shell
//! finds in its environment besides what the server had and what the job asked for.
//!
//! - `TERM=xterm-256color` and `COLORTERM=truecolor`: the terminal model understands xterm's
//!   sequences and 24-bit colour, and programs that see no `TERM` print plainer output or
//!   refuse to run full-screen. (Windows too: the pseudo console speaks the same sequences,
//!   and ports of Unix tools read `TERM`.)
//! - `PAGER=cat` and `GIT_PAGER=cat`: a pager waits for keys nobody types.
//! - `GIT_EDITOR`, `EDITOR` and `VISUAL`: the editor a face was given (`--editor`,
//!   [`crate::EngineConfig::editor`]), otherwise a command that fails at once and says why
//!   (an editor would wait forever, like a pager).
//! - Not `COLUMNS` or `LINES` from the server: they would contradict the job's own size.
//! - [`JOB_ID_ENV`]: the job's id, which neither the server's environment nor the job's own
//!   `env` can change. It is how a process that left the job's session is still recognised
//!   as the job's (see `crate::procs`).
//!
//! A job's own `env` wins over every variable but the marker.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::job::JobId;
use crate::sys::spawn::{NO_EDITOR, same_env_name};
use crate::sys::spawn_spec::BaseEnv;

/// The environment variable every job's shell gets: the job's id. It is how a process that
/// escaped the job's session is still recognised as the job's.
pub const JOB_ID_ENV: &str = "PTYJOBS_JOB_ID";

/// Set for every job, over the server's environment.
const TERMINAL: [(&str, &str); 4] = [
    ("TERM", "xterm-256color"),
    ("COLORTERM", "truecolor"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
];

/// The variables naming the editor.
const EDITORS: [&str; 3] = ["GIT_EDITOR", "EDITOR", "VISUAL"];

/// Never passed on from the server's environment.
const DROPPED: [&str; 3] = ["COLUMNS", "LINES", JOB_ID_ENV];

/// The environment every job starts from: this process's environment as of now, with the
/// policy applied; `editor` is what `GIT_EDITOR`, `EDITOR` and `VISUAL` run (`None`: a
/// command that fails at once). Built once per manager, so later changes to this process's
/// environment do not reach jobs.
pub(crate) fn base(editor: Option<&str>) -> BaseEnv {
    base_from(std::env::vars_os(), editor)
}

/// [`base`] over the environment `server`.
fn base_from(
    server: impl IntoIterator<Item = (OsString, OsString)>,
    editor: Option<&str>,
) -> BaseEnv {
    let mut vars: BTreeMap<OsString, OsString> = server
        .into_iter()
        .filter(|(k, _)| !DROPPED.iter().any(|d| same_env_name(k, d)))
        .collect();
    let editor = editor.unwrap_or(NO_EDITOR);
    let set = TERMINAL
        .into_iter()
        .chain(EDITORS.into_iter().map(|k| (k, editor)));
    for (name, value) in set {
        // Where names ignore case (Windows), a `Pager` of the server's is replaced too.
        vars.retain(|k, _| !same_env_name(k, name));
        vars.insert(name.into(), value.into());
    }
    BaseEnv::new(vars)
}

/// The job's own variables as its spawn takes them: `env` (the job's), less any variable
/// named like the marker, plus the marker `JOB_ID_ENV=<id>`.
pub(crate) fn own(env: &BTreeMap<String, String>, id: JobId) -> BTreeMap<String, String> {
    let mut own: BTreeMap<String, String> = env
        .iter()
        .filter(|(k, _)| !same_env_name(k.as_ref(), JOB_ID_ENV))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    own.insert(JOB_ID_ENV.to_owned(), id.to_string());
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("COLUMNS", "80"),
            ("LINES", "24"),
            ("TERM", "dumb"),
            ("PAGER", "less"),
            (JOB_ID_ENV, "inherited"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn get<'a>(env: &'a BaseEnv, name: &str) -> Option<&'a str> {
        env.vars().get(std::ffi::OsStr::new(name))?.to_str()
    }

    /// Every platform gets the same policy: a capable terminal, no pager, no editor to hang
    /// in, and none of the server's size or marker.
    #[test]
    fn the_base_has_the_terminal_no_pager_no_editor_and_no_size() {
        let env = base_from(server(), None);
        assert_eq!(get(&env, "PATH"), Some("/bin"));
        assert_eq!(get(&env, "TERM"), Some("xterm-256color"));
        assert_eq!(get(&env, "COLORTERM"), Some("truecolor"));
        assert_eq!(get(&env, "PAGER"), Some("cat"));
        assert_eq!(get(&env, "GIT_PAGER"), Some("cat"));
        for editor in EDITORS {
            assert_eq!(get(&env, editor), Some(NO_EDITOR), "{editor}");
        }
        for dropped in DROPPED {
            assert_eq!(get(&env, dropped), None, "{dropped}");
        }
    }

    #[test]
    fn a_given_editor_replaces_the_guard() {
        let env = base_from(server(), Some("my-editor --wait"));
        for editor in EDITORS {
            assert_eq!(get(&env, editor), Some("my-editor --wait"), "{editor}");
        }
    }

    /// The job's own variables win over the base, but not over its marker.
    #[test]
    fn the_jobs_env_wins_but_the_marker_is_the_jobs_id() {
        let id = JobId::new();
        let mut env = BTreeMap::new();
        env.insert("PAGER".to_owned(), "more".to_owned());
        env.insert(JOB_ID_ENV.to_owned(), "forged".to_owned());
        let own = own(&env, id);
        assert_eq!(own.get(JOB_ID_ENV), Some(&id.to_string()));
        let job = base_from(server(), None).with(&own);
        assert_eq!(
            job.get(std::ffi::OsStr::new("PAGER"))
                .and_then(|v| v.to_str()),
            Some("more")
        );
        assert_eq!(
            job.get(std::ffi::OsStr::new(JOB_ID_ENV))
                .and_then(|v| v.to_str()),
            Some(id.to_string().as_str())
        );
    }
}

//! The `Procfile`: one `name: command` per line (Heroku's, foreman's, overmind's format).

use std::collections::BTreeMap;
use std::path::Path;

use super::{FileError, ServiceDef};

/// The services of a Procfile's text. `file` is named in errors; `dir` (the project directory)
/// is every service's working directory.
///
/// Blank lines and lines starting with `#` are skipped. A name holds only ASCII letters, digits,
/// `_` and `-`; the command is the rest of the line after the first `:`, trimmed. A command that
/// uses `$PORT` (or `${PORT}`) gets `auto_port`: a free port in `PORT`, as foreman gives one.
///
/// # Errors
/// The first malformed line, by number: no `:`, a bad or empty name, an empty command, or a
/// name defined twice (both lines named).
pub(super) fn parse(text: &str, file: &Path, dir: &Path) -> Result<Vec<ServiceDef>, FileError> {
    let mut defs: Vec<ServiceDef> = Vec::new();
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let at = || format!("line {number}");
        let err = |problem: String| FileError::new(file, at(), problem);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, command)) = line.split_once(':') else {
            return Err(err(format!(
                "expected `name: command`, found no `:` in {:?}",
                super::clip(line)
            )));
        };
        let (name, command) = (name.trim(), command.trim());
        if name.is_empty() {
            return Err(err("the service name before `:` is empty".into()));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(err(format!(
                "service name {:?} may hold only letters, digits, `_` and `-`",
                super::clip(name)
            )));
        }
        if command.is_empty() {
            return Err(err(format!("service {name:?} has an empty command")));
        }
        if let Some(first) = first_line.get(name) {
            return Err(err(format!(
                "service {name:?} is defined twice (first at line {first})"
            )));
        }
        first_line.insert(name.to_owned(), number);
        defs.push(ServiceDef {
            name: name.to_owned(),
            command: command.to_owned(),
            cwd: dir.to_path_buf(),
            env: BTreeMap::new(),
            port: None,
            auto_port: command.contains("$PORT") || command.contains("${PORT}"),
            source: file.to_path_buf(),
            at: at(),
        });
    }
    Ok(defs)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn parse_str(text: &str) -> Result<Vec<ServiceDef>, FileError> {
        parse(text, Path::new("/p/Procfile"), Path::new("/p"))
    }

    fn error(text: &str) -> String {
        let e = parse_str(text).expect_err("malformed");
        assert_eq!(e.file, PathBuf::from("/p/Procfile"));
        e.to_string()
    }

    #[test]
    fn services_are_read_with_comments_blank_lines_and_colons_in_commands() {
        let defs = parse_str(
            "# the web\n\nweb: python3 -m http.server $PORT\r\n  worker :  sh -c 'echo a:b'  \n",
        )
        .expect("parses");
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].name, "web");
        assert_eq!(defs[0].command, "python3 -m http.server $PORT");
        assert!(defs[0].auto_port, "a command using $PORT gets a port");
        assert_eq!(defs[0].cwd, PathBuf::from("/p"));
        assert_eq!(defs[0].at, "line 3");
        assert_eq!(defs[1].name, "worker");
        assert_eq!(defs[1].command, "sh -c 'echo a:b'");
        assert!(!defs[1].auto_port);
        assert_eq!(defs[1].port, None);
        assert!(parse_str("").expect("empty is fine").is_empty());
    }

    #[test]
    fn a_duplicate_name_names_both_lines() {
        let e = error("web: a\nworker: b\nweb: c\n");
        assert_eq!(
            e,
            "/p/Procfile: line 3: service \"web\" is defined twice (first at line 1)"
        );
    }

    #[test]
    fn a_line_without_colon_is_an_error() {
        let e = error("web: a\njust a command\n");
        assert!(
            e.starts_with("/p/Procfile: line 2: expected `name: command`"),
            "{e}"
        );
        assert!(e.contains("just a command"), "{e}");
    }

    #[test]
    fn an_empty_command_is_an_error() {
        assert_eq!(
            error("web:   \n"),
            "/p/Procfile: line 1: service \"web\" has an empty command"
        );
    }

    #[test]
    fn bad_names_are_errors() {
        assert!(error(": cmd").contains("line 1: the service name before `:` is empty"));
        let e = error("# c\nmy web: cmd");
        assert!(
            e.contains("line 2: service name \"my web\" may hold only"),
            "{e}"
        );
        assert!(error("wéb: cmd").contains("may hold only"));
        assert!(error("a\u{1b}[31m: cmd").contains("may hold only"));
    }
}

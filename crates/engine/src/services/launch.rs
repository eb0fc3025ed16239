//! `.claude/launch.json`: Claude Code's list of dev servers, a subset of VS Code's launch.json:
//! `{"version": "0.2.0", "configurations": [{"name", "runtimeExecutable", "runtimeArgs",
//! "cwd", "env", "port", "autoPort"}]}`. Other keys of a configuration (`type`, `request`, ...)
//! are ignored. Plain JSON: comments and trailing commas are refused with their line and column.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{FileError, ServiceDef};

/// Longest service name taken from launch.json, in bytes.
const NAME_MAX: usize = 256;

/// The services of a launch.json's text. `file` is named in errors; `dir` (the project
/// directory) is what a relative `cwd` is relative to, and the `cwd` of a configuration without
/// one.
///
/// The command is `runtimeExecutable` followed by `runtimeArgs`, each quoted for a POSIX shell
/// (`/bin/sh -c`) so that spaces, quotes and `$` reach the program as they were written.
///
/// # Errors
/// The JSON's own error with its line and column; else the first wrong value by its key path
/// (`configurations[2].port`): a missing `name` or `runtimeExecutable`, a value of the wrong
/// type, a port outside 1-65535, a name defined twice.
pub(super) fn parse(text: &str, file: &Path, dir: &Path) -> Result<Vec<ServiceDef>, FileError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's message ends with " at line L column C": the position goes in `at`.
        let full = e.to_string();
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(what, _)| what);
        FileError::new(
            file,
            format!("line {}, column {}", e.line(), e.column()),
            format!("not valid JSON: {what}"),
        )
    })?;
    let err = |at: &str, problem: String| FileError::new(file, at.to_owned(), problem);
    let Value::Object(root) = root else {
        return Err(err(
            "top level",
            format!(
                "expected an object with `configurations`, found {}",
                kind(&root)
            ),
        ));
    };
    if let Some(v) = root.get("version").filter(|v| !v.is_string()) {
        return Err(err(
            "version",
            format!("expected a string, found {}", kind(v)),
        ));
    }
    let configs = match root.get("configurations") {
        None => {
            return Err(err(
                "configurations",
                "missing: the list of services".into(),
            ));
        }
        Some(Value::Array(a)) => a,
        Some(v) => {
            return Err(err(
                "configurations",
                format!("expected an array, found {}", kind(v)),
            ));
        }
    };
    let mut defs: Vec<ServiceDef> = Vec::with_capacity(configs.len());
    for (i, config) in configs.iter().enumerate() {
        let path = format!("configurations[{i}]");
        let Value::Object(c) = config else {
            return Err(err(
                &path,
                format!("expected an object, found {}", kind(config)),
            ));
        };
        let def = configuration(c, &path, file, dir)?;
        if let Some(first) = defs.iter().find(|d| d.name == def.name) {
            return Err(err(
                &format!("{path}.name"),
                format!(
                    "service {:?} is defined twice (first at {})",
                    def.name, first.at
                ),
            ));
        }
        defs.push(def);
    }
    Ok(defs)
}

/// One configuration, at key path `path`.
fn configuration(
    c: &Map<String, Value>,
    path: &str,
    file: &Path,
    dir: &Path,
) -> Result<ServiceDef, FileError> {
    let err = |key: &str, problem: String| FileError::new(file, format!("{path}.{key}"), problem);
    let name = required_string(c, "name").map_err(|p| err("name", p))?;
    if name.chars().any(char::is_control) {
        return Err(err("name", "holds a control character".into()));
    }
    if name.len() > NAME_MAX {
        return Err(err(
            "name",
            format!("is {} bytes long; at most {NAME_MAX}", name.len()),
        ));
    }
    let exe = required_string(c, "runtimeExecutable").map_err(|p| err("runtimeExecutable", p))?;
    let mut words = vec![quote(exe).map_err(|p| err("runtimeExecutable", p))?];
    match c.get("runtimeArgs") {
        None | Some(Value::Null) => {}
        Some(Value::Array(args)) => {
            for (j, a) in args.iter().enumerate() {
                let key = format!("runtimeArgs[{j}]");
                let Value::String(a) = a else {
                    return Err(err(&key, format!("expected a string, found {}", kind(a))));
                };
                words.push(quote(a).map_err(|p| err(&key, p))?);
            }
        }
        Some(v) => {
            return Err(err(
                "runtimeArgs",
                format!("expected an array of strings, found {}", kind(v)),
            ));
        }
    }
    let cwd = match c.get("cwd") {
        None | Some(Value::Null) => dir.to_path_buf(),
        Some(Value::String(s)) if s.is_empty() => return Err(err("cwd", "is empty".into())),
        Some(Value::String(s)) => dir.join(s),
        Some(v) => {
            return Err(err("cwd", format!("expected a string, found {}", kind(v))));
        }
    };
    let mut env = BTreeMap::new();
    match c.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(vars)) => {
            for (k, v) in vars {
                let key = format!("env.{k}");
                if k.is_empty() || k.contains(['=', '\0']) {
                    return Err(err(&key, "is not a valid variable name".into()));
                }
                match v {
                    Value::String(s) if s.contains('\0') => {
                        return Err(err(&key, "holds a NUL byte".into()));
                    }
                    Value::String(s) => {
                        env.insert(k.clone(), s.clone());
                    }
                    v => {
                        return Err(err(&key, format!("expected a string, found {}", kind(v))));
                    }
                }
            }
        }
        Some(v) => {
            return Err(err("env", format!("expected an object, found {}", kind(v))));
        }
    }
    let port = match c.get("port") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    err(
                        "port",
                        format!("expected a port number 1-65535, found {}", shown(v)),
                    )
                })?,
        ),
    };
    let auto_port = match c.get("autoPort") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(err(
                "autoPort",
                format!("expected true or false, found {}", kind(v)),
            ));
        }
    };
    Ok(ServiceDef {
        name: name.to_owned(),
        command: words.join(" "),
        cwd,
        env,
        port,
        auto_port,
        source: file.to_path_buf(),
        at: path.to_owned(),
    })
}

/// A key that must hold a non-empty string; the problem in words otherwise.
fn required_string<'a>(c: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match c.get(key) {
        None => Err("missing".into()),
        Some(Value::String(s)) if s.trim().is_empty() => Err("is empty".into()),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(format!("expected a string, found {}", kind(v))),
    }
}

/// One word quoted for `/bin/sh` (unchanged when it needs no quotes).
fn quote(word: &str) -> Result<String, String> {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .map_err(|_| "holds a NUL byte, which no shell argument can".into())
}

/// A JSON value's kind, for "expected X, found Y".
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A scalar as written (short), else its kind.
fn shown(v: &Value) -> String {
    match v {
        Value::Number(_) | Value::Bool(_) => v.to_string(),
        Value::String(s) => format!("the string {:?}", super::clip(s)),
        v => kind(v).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const FILE: &str = "/p/.claude/launch.json";

    fn parse_str(text: &str) -> Result<Vec<ServiceDef>, FileError> {
        parse(text, Path::new(FILE), Path::new("/p"))
    }

    /// The error for `text`, which must name the file.
    fn error(text: &str) -> String {
        let e = parse_str(text).expect_err("malformed");
        assert_eq!(e.file, PathBuf::from(FILE));
        e.to_string()
    }

    /// The error for one configuration `config` (a JSON object's inside).
    fn config_error(config: &str) -> String {
        error(&format!(
            r#"{{"version": "0.2.0", "configurations": [{{"name": "ok", "runtimeExecutable": "x"}}, {{{config}}}]}}"#
        ))
    }

    #[test]
    fn configurations_become_services_with_quoted_commands() {
        let defs = parse_str(
            r#"{
              "version": "0.2.0",
              "configurations": [
                {"name": "web", "type": "node", "runtimeExecutable": "npm",
                 "runtimeArgs": ["run", "dev", "--", "--title", "it's $HOME; rm -rf /", ""],
                 "cwd": "apps/web", "env": {"NODE_ENV": "development"}, "port": 5173, "autoPort": true},
                {"name": "Rails dev", "runtimeExecutable": "/opt/my tools/bin/dev", "cwd": "/abs"}
              ]
            }"#,
        )
        .expect("parses");
        assert_eq!(defs.len(), 2);
        let web = &defs[0];
        assert_eq!(web.name, "web");
        assert!(
            web.command.starts_with("npm run dev -- --title "),
            "{}",
            web.command
        );
        assert_eq!(web.cwd, PathBuf::from("/p/apps/web"));
        assert_eq!(web.env["NODE_ENV"], "development");
        assert_eq!(web.port, Some(5173));
        assert!(web.auto_port);
        assert_eq!(web.at, "configurations[0]");
        let rails = &defs[1];
        assert_eq!(rails.command, "'/opt/my tools/bin/dev'");
        assert_eq!(rails.cwd, PathBuf::from("/abs"));
        assert_eq!((rails.port, rails.auto_port), (None, false));
        // What the shell makes of the command is what was written.
        let words = shlex::split(&web.command).expect("splits");
        assert_eq!(
            words,
            [
                "npm",
                "run",
                "dev",
                "--",
                "--title",
                "it's $HOME; rm -rf /",
                ""
            ]
        );
    }

    #[test]
    fn unparsable_json_names_line_and_column() {
        let e = error("{\n  \"configurations\": [\n    {\"name\": \"a\",}\n  ]\n}\n");
        assert!(
            e.starts_with("/p/.claude/launch.json: line 3, column "),
            "{e}"
        );
        assert!(e.contains("not valid JSON: trailing comma"), "{e}");
        let e = error("{\"configurations\": [ // a comment\n]}");
        assert!(e.contains("line 1, column"), "{e}");
        assert!(error("").contains("not valid JSON"));
    }

    #[test]
    fn the_top_level_shape_is_checked() {
        assert_eq!(
            error("[]"),
            format!("{FILE}: top level: expected an object with `configurations`, found an array")
        );
        assert_eq!(
            error("{}"),
            format!("{FILE}: configurations: missing: the list of services")
        );
        assert!(error(r#"{"configurations": {}}"#).contains("configurations: expected an array"));
        assert!(
            error(r#"{"version": 2, "configurations": []}"#)
                .contains("version: expected a string, found a number")
        );
        assert!(
            error(r#"{"configurations": [3]}"#)
                .contains("configurations[0]: expected an object, found a number")
        );
    }

    #[test]
    fn a_missing_or_bad_name_is_named_by_key_path() {
        assert_eq!(
            config_error(r#""runtimeExecutable": "x""#),
            format!("{FILE}: configurations[1].name: missing")
        );
        assert!(
            config_error(r#""name": 7, "runtimeExecutable": "x""#)
                .contains("configurations[1].name: expected a string, found a number")
        );
        assert!(
            config_error(r#""name": " ", "runtimeExecutable": "x""#).contains("name: is empty")
        );
        assert!(
            config_error(r#""name": "a\u001b[2J", "runtimeExecutable": "x""#)
                .contains("name: holds a control character")
        );
        let long = "n".repeat(10_000);
        assert!(
            config_error(&format!(r#""name": "{long}", "runtimeExecutable": "x""#))
                .contains("is 10000 bytes long")
        );
        assert!(
            config_error(r#""name": "ok", "runtimeExecutable": "y""#).contains(
                "configurations[1].name: service \"ok\" is defined twice (first at configurations[0])"
            )
        );
    }

    #[test]
    fn wrong_types_are_named_by_key_path() {
        let cases = [
            (
                r#""name": "b""#,
                "configurations[1].runtimeExecutable: missing",
            ),
            (
                r#""name": "b", "runtimeExecutable": ["npm"]"#,
                "runtimeExecutable: expected a string, found an array",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "runtimeArgs": "run dev""#,
                "runtimeArgs: expected an array of strings, found a string",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "runtimeArgs": ["a", 1]"#,
                "configurations[1].runtimeArgs[1]: expected a string, found a number",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "runtimeArgs": ["a\u0000"]"#,
                "runtimeArgs[0]: holds a NUL byte",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "cwd": 1"#,
                "cwd: expected a string, found a number",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "env": ["A=1"]"#,
                "env: expected an object, found an array",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "env": {"A": 1}"#,
                "configurations[1].env.A: expected a string, found a number",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "env": {"A=B": "1"}"#,
                "env.A=B: is not a valid variable name",
            ),
            (
                r#""name": "b", "runtimeExecutable": "x", "autoPort": "yes""#,
                "configurations[1].autoPort: expected true or false, found a string",
            ),
        ];
        for (config, expected) in cases {
            let e = config_error(config);
            assert!(e.starts_with(FILE), "{e}");
            assert!(e.contains(expected), "{config}: {e} lacks {expected}");
        }
    }

    #[test]
    fn a_bad_port_is_named_with_its_value() {
        for (port, found) in [
            ("0", "found 0"),
            ("70000", "found 70000"),
            ("-1", "found -1"),
            ("80.5", "found 80.5"),
            (r#""3000""#, "found the string \"3000\""),
            ("true", "found true"),
        ] {
            let e = config_error(&format!(
                r#""name": "b", "runtimeExecutable": "x", "port": {port}"#
            ));
            assert!(
                e.contains(&format!(
                    "configurations[1].port: expected a port number 1-65535, {found}"
                )),
                "{port}: {e}"
            );
        }
    }
}

//! Portable schemas: every tool's input and output schema has single `type`s (no `null`
//! branch, no `default: null`), results omit what they have nothing to say about instead of
//! sending `null`, and tools/list answers in a stable order. The MCP Inspector's `--strict`
//! check (tests/inspector.test.mjs) is the referee; this is the fast guard.

use serde_json::{Value, json};

use crate::util::Server;

/// JSON pointers of everything a single-`type` dialect cannot take.
fn problems(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            match map.get("type") {
                Some(Value::Array(_)) => found.push(format!("{path}/type is an array")),
                Some(Value::String(t)) if t == "null" => found.push(format!("{path}: null type")),
                _ => {}
            }
            if map.get("default") == Some(&Value::Null) {
                found.push(format!("{path}/default is null"));
            }
            if map.contains_key("nullable") {
                found.push(format!("{path}/nullable"));
            }
            for (k, v) in map {
                problems(v, &format!("{path}/{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                problems(v, &format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

/// Paths of `null` values in a result.
fn nulls(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Null => found.push(path.to_owned()),
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| nulls(v, &format!("{path}/{k}"), found)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| nulls(v, &format!("{path}/{i}"), found)),
        _ => {}
    }
}

#[tokio::test]
async fn every_schema_is_single_typed() {
    let s = Server::start(&[]).await;
    let tools = s.client().list_all_tools().await.expect("tools/list");
    assert!(tools.len() >= 11, "{} tools", tools.len());
    let mut found = Vec::new();
    for t in &tools {
        let input = Value::Object((*t.input_schema).clone());
        problems(&input, &format!("{}/inputSchema", t.name), &mut found);
        let output = t
            .output_schema
            .as_ref()
            .expect("every tool has an output schema");
        problems(
            &Value::Object((**output).clone()),
            &format!("{}/outputSchema", t.name),
            &mut found,
        );
    }
    assert!(found.is_empty(), "not portable:\n{}", found.join("\n"));
    // The guard itself sees what it guards against.
    let mut seen = Vec::new();
    problems(
        &json!({ "p": { "type": ["integer", "null"], "default": null } }),
        "",
        &mut seen,
    );
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[tokio::test]
async fn results_omit_absent_fields_instead_of_null() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("sleep 1000").await;
    for (tool, args) in [
        ("get_job_status", json!({ "job_id": id })),
        ("list_jobs", json!({})),
        ("get_job_output", json!({ "job_id": id })),
        ("tail_job_output", json!({ "job_id": id })),
        ("get_job_screen", json!({ "job_id": id })),
        ("wait_for_job", json!({ "job_id": id, "timeout_secs": 0.1 })),
    ] {
        let r = s.ok(tool, args).await;
        let mut found = Vec::new();
        nulls(&r, tool, &mut found);
        assert!(found.is_empty(), "nulls in {tool}: {found:?}\n{r}");
    }
    let status = s.status(&id).await;
    assert!(
        status.get("exit_code").is_none() && status.get("finished").is_none(),
        "{status}"
    );
}

#[tokio::test]
async fn tools_list_order_is_stable() {
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let a = Server::start(&[]).await;
    let first = names(a.client().list_all_tools().await.expect("tools/list"));
    let again = names(a.client().list_all_tools().await.expect("tools/list"));
    let b = Server::start(&[]).await;
    let other = names(b.client().list_all_tools().await.expect("tools/list"));
    assert_eq!(first, again);
    assert_eq!(first, other);
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted, "tools are listed by name");
}

//! Portable tool schemas.
//!
//! schemars describes an `Option<T>` as `"type": ["T", "null"]` (or an `anyOf` with a `null`
//! branch) plus `"default": null`. That is legal JSON Schema, but clients that map tool schemas
//! onto a single-`type` dialect (the OpenAPI subset behind Gemini function declarations, some
//! OpenAI-compatible gateways) reject the tool or drop its constraints. ptyjobs' contract is
//! simpler than "nullable": an optional parameter is one that may be left out, and a result
//! field with nothing to say is omitted (every `Option` output field is
//! `skip_serializing_if = "Option::is_none"`). So every schema is rewritten once, when the
//! router is built: the `null` branch and `default: null` go, the one remaining type stays.

use rmcp::model::JsonObject;
use serde_json::Value;

/// Rewrites `schema` (a whole tool input or output schema) into the portable form. Its
/// `$schema` goes too: MCP takes 2020-12 as the default dialect, a validator built for an
/// older draft rejects the 2020-12 URI, and a model pays for it in every tool of the list.
pub fn make_portable(schema: &mut JsonObject) {
    schema.remove("$schema");
    for value in schema.values_mut() {
        portable(value);
    }
    fix_object(schema);
}

fn portable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                portable(v);
            }
            fix_object(map);
        }
        Value::Array(items) => items.iter_mut().for_each(portable),
        _ => {}
    }
}

/// Fixes one schema object whose children are already fixed.
fn fix_object(map: &mut JsonObject) {
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let single = types.remove(0);
            map.insert("type".into(), single);
        } else if types.len() > 1 {
            // Several real types: one branch per type, each with a single `type`.
            let branches = types
                .iter()
                .map(|t| Value::Object(JsonObject::from_iter([("type".into(), t.clone())])))
                .collect();
            map.remove("type");
            map.insert("anyOf".into(), Value::Array(branches));
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get_mut(key) else {
            continue;
        };
        branches.retain(|b| b.get("type") != Some(&Value::String("null".into())));
        if branches.len() == 1 {
            // One branch left: it *is* the schema (its own keys win over none; the parent's
            // description stays).
            let Some(Value::Object(only)) = branches.pop() else {
                continue;
            };
            map.remove(key);
            for (k, v) in only {
                map.entry(k).or_insert(v);
            }
        }
    }
}

#[cfg(test)]
/// Every place in `schema` that is not portable (a `type` array, `default: null`, a `null`
/// branch), as JSON pointers; empty when the schema is portable.
pub fn problems(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found);
    found
}

#[cfg(test)]
fn walk(value: &Value, path: String, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if matches!(map.get("type"), Some(Value::Array(_))) {
                found.push(format!("{path}/type is an array"));
            }
            if map.get("type") == Some(&Value::String("null".into())) {
                found.push(format!("{path} is a null type"));
            }
            if map.get("default") == Some(&Value::Null) {
                found.push(format!("{path}/default is null"));
            }
            if map.get("nullable").is_some() {
                found.push(format!("{path}/nullable"));
            }
            for (k, v) in map {
                walk(v, format!("{path}/{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fixed(v: Value) -> Value {
        let Value::Object(mut map) = v else {
            panic!("object")
        };
        make_portable(&mut map);
        Value::Object(map)
    }

    #[test]
    fn nullable_types_become_single_types() {
        let v = fixed(json!({
            "type": "object",
            "properties": {
                "cols": { "type": ["integer", "null"], "default": null, "minimum": 1 },
                "status": { "anyOf": [{ "$ref": "#/$defs/Status" }, { "type": "null" }],
                            "description": "d" },
                "either": { "type": ["string", "integer", "null"] },
            }
        }));
        assert_eq!(
            v["properties"]["cols"],
            json!({ "type": "integer", "minimum": 1 })
        );
        assert_eq!(
            v["properties"]["status"],
            json!({ "$ref": "#/$defs/Status", "description": "d" })
        );
        assert_eq!(
            v["properties"]["either"],
            json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] })
        );
        assert!(problems(&v).is_empty(), "{:?}", problems(&v));
    }

    #[test]
    fn problems_are_found_anywhere() {
        let p = problems(&json!({ "a": [{ "type": ["x", "null"] }], "default": null }));
        assert_eq!(p.len(), 2, "{p:?}");
    }
}

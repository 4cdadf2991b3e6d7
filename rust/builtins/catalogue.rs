//! The tools' catalogue (issue 33 §2): `tools` finds tools by the words of their names and
//! descriptions, `doc` describes one. Both are pure: they read the Session's fixed catalogue
//! (`crate::catalogue`), call no tool, record nothing, and charge fuel for what they scan.

use super::{alloc_output, type_error, Builtin};
use crate::catalogue::{doc_line, words, Catalogue, Query, DEFAULT_MATCHES};
use crate::error::{Error, ErrorKind};
use crate::eval::{EvalResult, Host, Interp};
use crate::value::Value;

/// Bytes one record of the result takes: its slot, the record (four values) and its header.
const RECORD_BYTES: usize = 128;

/// How many near names an unknown tool's error lists.
const NEAREST: usize = 3;

/// The host's catalogue, or one made of its tool names when it describes none.
fn catalogue_of<'h>(host: &'h dyn Host, owned: &'h mut Option<Catalogue>) -> &'h Catalogue {
    match host.catalogue() {
        Some(c) => c,
        None => owned.insert(Catalogue::names_only(host.tool_names())),
    }
}

fn tools(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let host = it.host();
    let mut owned = None;
    let cat = catalogue_of(host, &mut owned);
    let Some(q) = a.first() else {
        // every tool, in the host's order
        alloc_output(it, cat.len(), RECORD_BYTES)?;
        return Ok(Value::vector(
            (0..cat.len()).map(|i| cat.record(i)).collect(),
        ));
    };
    let Value::Str(text) = q else {
        return Err(type_error("tools", "a string of words to search for", q)
            .with_hint("(tools \"refund order\"): the words of the tools' names and docs")
            .into());
    };
    let limit = match a.get(1) {
        None => DEFAULT_MATCHES,
        Some(Value::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        Some(other) => {
            return Err(
                type_error("tools", "a count of matches (an integer, 0 or more)", other)
                    .with_hint("(tools \"refund order\" 5)")
                    .into(),
            )
        }
    };
    // reading the query, then the whole scan, are charged before they happen
    it.charge(text.len())?;
    let query = Query::new(text);
    it.charge(cat.search_cost(&query))?;
    let hits = cat.search(&query, limit);
    alloc_output(it, hits.len(), RECORD_BYTES)?;
    Ok(Value::vector(
        hits.into_iter().map(|i| cat.record(i)).collect(),
    ))
}

fn doc(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let name: &str = match &a[0] {
        Value::Tool(t) => t,
        Value::Str(s) => s.strip_prefix("tool/").unwrap_or(s),
        Value::Builtin(b) => {
            let kind = if b.constant.is_some() {
                "a constant".to_string()
            } else {
                format!("{} argument(s)", b.arity_text())
            };
            return Ok(Value::string(format!(
                "{} ; {kind} - \"{}\"",
                b.name, b.doc
            )));
        }
        other => {
            return Err(
                type_error("doc", "tool/name (or a tool's name as a string)", other)
                    .with_hint("(doc tool/name) gives a tool's signature and description")
                    .into(),
            )
        }
    };
    let host = it.host();
    let mut owned = None;
    let cat = catalogue_of(host, &mut owned);
    it.charge(1)?;
    if let Some(t) = cat.get(name) {
        return Ok(Value::string(doc_line(t)));
    }
    // the near names are looked for among all the tools
    let query = Query::new(name);
    it.charge(cat.search_cost(&query))?;
    let near = cat.nearest(name, NEAREST);
    let mut message = format!("doc: no tool named tool/{name}");
    if cat.is_empty() {
        message.push_str("; this run has no tools");
    } else if !near.is_empty() {
        let near: Vec<String> = near.iter().map(|n| format!("tool/{n}")).collect();
        message.push_str(&format!("; nearest: {}", near.join(", ")));
    }
    let mut e = Error::new(ErrorKind::UnknownTool, message);
    let written = words(name);
    if !cat.is_empty() && !written.is_empty() {
        e = e.with_hint(format!(
            "find tools by the words of their names and docs: (tools \"{}\")",
            written.join(" ")
        ));
    }
    Err(e.into())
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "tools",
        0,
        2,
        tools,
        "(tools \"words\") or (tools \"words\" n): the tools best matching the words of their names and docs (10 unless n), as {:name :doc :signature :effect}; (tools) lists every tool.",
    ),
    Builtin::new(
        "doc",
        1,
        1,
        doc,
        "(doc tool/name): the tool's line (tool/name params) ; signature - \"description\", with its whole description.",
    ),
];

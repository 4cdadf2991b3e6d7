//! The module's functions: printing, type labels, one-shot runs, token counts, the builtins table,
//! and test hooks.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::control::{bounded, guarded};
use super::core_session::Core;
use super::result::{LazyValue, RunOutcome};
use super::{convert, core_session, errors, host, printable};
use crate::error::{Error, ErrorKind};
use crate::eval::UserNs;
use crate::format::{print, PrintOpts};
use crate::guard::{Budget, NeverInterrupted};
use crate::limits::Limits;
use crate::value::Value;

/// `to_clojure(value, limit=None, printable_limit=None, hide_private=False, max_tokens=None,
/// encoding="o200k_base", root=None) -> (text, truncated)`, printing Python objects in place
/// (O(output), the list is never walked past what is shown). With `max_tokens` the text counts
/// at most that many tokens in `encoding`: the limits' print when it fits, else the largest
/// breadth-first view that does, with markers naming `root` (`crate::budget`).
#[pyfunction]
#[pyo3(signature = (value, limit=None, printable_limit=None, hide_private=false, max_tokens=None, encoding="o200k_base", root=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn to_clojure(
    value: &Bound<'_, PyAny>,
    limit: Option<usize>,
    printable_limit: Option<usize>,
    hide_private: bool,
    max_tokens: Option<usize>,
    encoding: &str,
    root: Option<&str>,
) -> PyResult<(String, bool)> {
    let py = value.py();
    // within the default limits: a value built from shared parts ends in a LimitError
    bounded(py, Limits::default(), || {
        let kw = convert::keyword_type(py)?.clone();
        let node = printable::PyNode::new(value.clone(), kw);
        let opts = PrintOpts {
            limit,
            printable_limit,
            hide_private,
        };
        within(&node, opts, max_tokens, encoding, root)
    })
}

/// `v` printed as `opts` says, within `max_tokens` of `encoding` when given (`crate::budget`).
pub(super) fn within<P: crate::format::Printable>(
    v: &P,
    opts: PrintOpts,
    max_tokens: Option<usize>,
    encoding: &str,
    root: Option<&str>,
) -> PyResult<(String, bool)> {
    let Some(max_tokens) = max_tokens else {
        return Ok(print(v, opts));
    };
    if root.is_some_and(|r| r.trim().is_empty()) {
        // a marker would read `(drop 10 )`: no expression, so no way to the rest
        return Err(PyValueError::new_err(
            "root is the expression that reads the value (\"*1\", \"data/orders\", a name the \
             program defined); got blank text (leave it out for markers without one)",
        ));
    }
    let budget = crate::budget::Budget {
        max_tokens,
        encoding,
        hide_private: opts.hide_private,
        root,
    };
    crate::budget::print_within(v, opts, &budget).ok_or_else(|| unknown_encoding(encoding))
}

pub(super) fn unknown_encoding(encoding: &str) -> PyErr {
    PyValueError::new_err(format!(
        "unknown encoding {encoding:?}; exact counts exist for {}",
        crate::tokens::ENCODINGS.join(", ")
    ))
}

#[pyfunction]
pub(super) fn type_label(value: &Bound<'_, PyAny>) -> PyResult<String> {
    guarded(value.py(), || {
        let kw = convert::keyword_type(value.py())?.clone();
        Ok(printable::PyNode::new(value.clone(), kw).type_label())
    })
}

/// Evaluates a program with no session state.
#[pyfunction]
#[pyo3(signature = (source, data=None, tools=None, limits=None))]
pub(super) fn run_once<'py>(
    py: Python<'py>,
    source: &str,
    data: Option<&Bound<'py, PyAny>>,
    tools: Option<&Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, RunOutcome>> {
    let s = Core::new(
        py, data, tools, limits, None, None, None, None, None, None, None,
    )?;
    s.run(py, source, None, None, false, None, None, None)
}

/// Registered with `atexit` by the Python package: no tool call starts after it.
#[pyfunction]
pub(super) fn _at_exit() {
    host::at_exit()
}

/// The lineage of the tool running on this thread (for `_core._LINEAGE`), or `None`.
#[pyfunction]
pub(super) fn _tool_lineage() -> Option<host::Lineage> {
    host::current_lineage()
}

/// For the tool running on this thread: seconds until its run must stop (0 once it has
/// stopped); `None` outside a tool call.
#[pyfunction]
pub(super) fn _tool_time_left() -> Option<f64> {
    host::tool_time_left()
}

/// The id in its run of the tool call running on this thread; `None` outside a tool call.
#[pyfunction]
pub(super) fn _tool_call_id() -> Option<String> {
    host::tool_call_id()
}

/// `threading.main_thread().ident`: only that thread can notice Ctrl-C during a run.
pub(super) fn record_main_thread(py: Python<'_>) -> PyResult<()> {
    let ident: u64 = py
        .import("threading")?
        .call_method0("main_thread")?
        .getattr("ident")?
        .extract()?;
    let _ = host::MAIN_THREAD.set(ident);
    Ok(())
}

/// Exact token count of `text` in an OpenAI encoding ("cl100k_base", "o200k_base").
#[pyfunction]
pub(super) fn count_tokens(py: Python<'_>, text: &str, encoding: &str) -> PyResult<usize> {
    if !crate::tokens::ENCODINGS.contains(&encoding) {
        return Err(unknown_encoding(encoding));
    }
    let text = text.to_string();
    let enc = encoding.to_string();
    guarded(py, || {
        Ok(py.detach(move || crate::tokens::count_tokens(&text, &enc).unwrap_or(0)))
    })
}

/// The `unknown_tool` error's message and hint (`crate::hints::unknown_tool`), for `check`,
/// which reports the error the run would.
#[pyfunction]
pub(super) fn _unknown_tool(name: &str, names: Vec<String>) -> (String, Option<String>) {
    crate::hints::unknown_tool(name, &names)
}

/// How many characters of `text` are whole top-level forms that more text cannot change
/// (`crate::reader::complete_prefix`): what a program still streaming in can run already.
#[pyfunction]
pub(super) fn complete_prefix(py: Python<'_>, text: &str) -> PyResult<usize> {
    guarded(py, || {
        let cut = crate::reader::complete_prefix(text);
        Ok(text[..cut].chars().count())
    })
}

/// Names of every builtin function and constant, in table order.
#[pyfunction]
pub(super) fn builtin_names() -> Vec<&'static str> {
    crate::builtins::names().collect()
}

/// The builtins the system prompt lists, in its order (a subset of the table).
#[pyfunction]
pub(super) fn prompt_functions() -> Vec<&'static str> {
    crate::builtins::PROMPT_ESSENTIALS.to_vec()
}

/// The builtins table: (name, min arity, max arity or None when variadic, doc, is a constant).
#[pyfunction]
pub(super) fn builtins() -> Vec<(&'static str, usize, Option<usize>, &'static str, bool)> {
    crate::builtins::all()
        .map(|b| {
            let max = (b.max != usize::MAX).then_some(b.max);
            (b.name, b.min, max, b.doc, b.constant.is_some())
        })
        .collect()
}

/// Every error kind with its Python class: (type, class name, base class name, docstring).
#[pyfunction]
pub(super) fn error_kinds() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    ErrorKind::ALL
        .iter()
        .map(|k| {
            let (class, base, doc) = k.python_class();
            (k.as_str(), class, base, doc)
        })
        .collect()
}

/// Names of the special forms.
#[pyfunction]
pub(super) fn special_forms() -> Vec<&'static str> {
    crate::analyzer::SPECIAL_FORMS.to_vec()
}

/// An argument as Python sees it: the value, `unknown` where the source does not show it.
/// Called within `control::bounded` (one budget for all of a program's arguments).
fn arg_to_py<'py>(
    py: Python<'py>,
    a: &crate::sites::Arg,
    unknown: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    use crate::sites::Arg;
    Ok(match a {
        // a literal Python cannot hold (`#{1 1.0}`) is refused when the call is made: its
        // value is never seen by a tool
        Arg::Known(v) => match super::result::try_to_python(py, v)? {
            Ok(o) => o,
            Err(_) => unknown.clone(),
        },
        Arg::Unknown => unknown.clone(),
        Arg::Vector(items) => {
            let items = items
                .iter()
                .map(|i| arg_to_py(py, i, unknown))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Arg::Map(pairs) => {
            let d = PyDict::new(py);
            for (k, v) in pairs {
                let Ok(key) = super::result::try_to_python(py, k)? else {
                    return Ok(unknown.clone());
                };
                d.set_item(key, arg_to_py(py, v, unknown)?)?;
            }
            if d.len() < pairs.len() {
                return Ok(unknown.clone()); // keys Python takes for one (`:a` and "a")
            }
            d.into_any()
        }
    })
}

/// `_tool_sites(source, unknown, limits=None, tools=None, data=None, keys=False)`: reads and
/// analyzes a program without running it and returns `(errors, calls, tool_values, data, keys,
/// plan)`: the parse error, or the analysis error of each top-level form that has one (core
/// error tuples; the other forms are still read); each written tool call
/// as `(tool, args, line, column, conditional, repeats)` with `unknown` for arguments computed at
/// run time; tools used as values; `data/` names read; literal keywords read from values, with
/// their positions (only when `keys`: they are judged against input records); and the plan
/// (see `sites_tuple`) against the tool names `tools` and the inputs' lengths `data`.
#[pyfunction]
#[pyo3(signature = (source, unknown, limits=None, tools=None, data=None, keys=false))]
pub(super) fn _tool_sites<'py>(
    py: Python<'py>,
    source: &str,
    unknown: &Bound<'py, PyAny>,
    limits: Option<&Bound<'py, PyDict>>,
    tools: Option<Vec<String>>,
    data: Option<std::collections::HashMap<String, Option<u64>>>,
    keys: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    guarded(py, || {
        let limits = core_session::limits_from(Limits::default(), limits)?;
        let inputs = PlanInputs {
            tools: tools.unwrap_or_default().into_iter().collect(),
            data,
            user: None,
            history: Vec::new(),
        };
        sites_tuple(py, source, unknown, limits, keys, inputs)
    })
}

/// What the plan of a program is computed against, owned so that the plan can wait until a
/// host asks for it (`Check.plan`): most checks never do.
pub(super) struct PlanInputs {
    pub tools: ahash::AHashSet<String>,
    /// Each input's element count (None for a scalar); None when the input is not known.
    pub data: Option<std::collections::HashMap<String, Option<u64>>>,
    pub user: Option<UserNs>,
    pub history: Vec<Value>,
}

/// A program read by `check`, waiting to be planned (`plan(unknown)` -> `(sites, any_tool)`,
/// each site `(tool, args, line, column, conditional, bound, via)`: `args` a tuple, or None for
/// a tool used as a value; `bound` None when unknown; `via` the earlier turn's definition whose
/// body holds the site).
#[pyclass(frozen, module = "ptc._core")]
pub struct Planner {
    program: crate::ir::Program,
    inputs: PlanInputs,
    limits: Limits,
}

#[pymethods]
impl Planner {
    fn plan<'py>(
        &self,
        py: Python<'py>,
        unknown: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guarded(py, || {
            let i = &self.inputs;
            let is_tool = |name: &str| i.tools.contains(name);
            let known = crate::plan::Known {
                is_tool: &is_tool,
                data: i.data.as_ref(),
                user: i.user.as_deref(),
                history: &i.history,
            };
            let planned = py.detach(|| crate::plan::plan(&self.program, &known));
            super::control::bounded(py, self.limits, || {
                let sites = PyList::empty(py);
                for s in &planned.sites {
                    let args = match &s.args {
                        Some(args) => {
                            let args = args
                                .iter()
                                .map(|a| arg_to_py(py, a, unknown))
                                .collect::<PyResult<Vec<_>>>()?;
                            PyTuple::new(py, args)?.into_any()
                        }
                        None => py.None().into_bound(py),
                    };
                    sites.append((
                        &*s.tool,
                        args,
                        s.pos.line,
                        s.pos.col,
                        s.conditional,
                        s.bound,
                        s.via.as_deref(),
                    ))?;
                }
                PyTuple::new(
                    py,
                    [
                        sites.into_any(),
                        planned.any_tool.into_pyobject(py)?.to_owned().into_any(),
                    ],
                )
            })
        })
    }
}

/// What `_tool_sites` and `CoreSession.tool_sites` return: see `_tool_sites`; the plan is a
/// `Planner`, or None when the program has errors (a plan of part of a program would leave
/// out what the failed forms call).
pub(super) fn sites_tuple<'py>(
    py: Python<'py>,
    source: &str,
    unknown: &Bound<'py, PyAny>,
    limits: Limits,
    keys: bool,
    inputs: PlanInputs,
) -> PyResult<Bound<'py, PyTuple>> {
    let budget = Budget::new(limits, Arc::new(NeverInterrupted), None);
    let prepared = py.detach(|| {
        crate::session::prepare_each(source, &budget).map(|(program, errors)| {
            let found = crate::sites::sites(&program);
            (program, errors, found)
        })
    });
    let (program, errors, found) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let empty = PyList::empty(py);
            return PyTuple::new(
                py,
                [
                    PyList::new(py, [errors::error_tuple(py, &e)?])?.into_any(),
                    empty.clone().into_any(),
                    empty.clone().into_any(),
                    empty.clone().into_any(),
                    empty.into_any(),
                    py.None().into_bound(py),
                ],
            );
        }
    };
    let written =
        super::control::bounded(py, limits, || sites_py(py, &found, &errors, keys, unknown))?;
    let planner = if errors.is_empty() {
        Bound::new(
            py,
            Planner {
                program,
                inputs,
                limits,
            },
        )?
        .into_any()
    } else {
        py.None().into_bound(py)
    };
    let mut items: Vec<Bound<'py, PyAny>> = written.iter().collect();
    items.push(planner);
    PyTuple::new(py, items)
}

/// The first five parts of `sites_tuple`'s answer as Python values.
fn sites_py<'py>(
    py: Python<'py>,
    found: &crate::sites::Sites,
    errors: &[Error],
    with_keys: bool,
    unknown: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let calls = PyList::empty(py);
    for s in &found.calls {
        let args = s
            .args
            .iter()
            .map(|a| arg_to_py(py, a, unknown))
            .collect::<PyResult<Vec<_>>>()?;
        calls.append((
            &s.tool,
            PyTuple::new(py, args)?,
            s.pos.line,
            s.pos.col,
            s.conditional,
            s.repeats,
        ))?;
    }
    let keys = PyList::empty(py);
    if with_keys {
        for (name, pos) in &found.keys {
            keys.append((name, pos.line, pos.col))?;
        }
    }
    let errors = errors
        .iter()
        .map(|e| errors::error_tuple(py, e))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(
        py,
        [
            PyList::new(py, errors)?.into_any(),
            calls.into_any(),
            PyList::new(py, &found.tool_values)?.into_any(),
            PyList::new(py, &found.data)?.into_any(),
            keys.into_any(),
        ],
    )
}

/// `_refused(type, message, hint, line, column)`: the Result of a program that was not run
/// because checking it found this error (`Session.run(check=True)`).
#[pyfunction]
#[pyo3(signature = (kind, message, hint=None, line=None, column=None))]
pub(super) fn _refused(
    py: Python<'_>,
    kind: &str,
    message: &str,
    hint: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
) -> PyResult<RunOutcome> {
    let kind = ErrorKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind)
        .ok_or_else(|| PyValueError::new_err(format!("no error type {kind:?}")))?;
    let mut e = Error::new(kind, message);
    e.hint = hint;
    if let (Some(line), Some(col)) = (line, column) {
        e = e.at(crate::error::Pos { line, col });
    }
    let value = Py::new(
        py,
        LazyValue::converted(py, Value::Nil, Limits::default(), py.None()),
    )?;
    Ok(RunOutcome::new(
        crate::session::Outcome::Error,
        value,
        Some(e),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        0.0,
        0,
    ))
}

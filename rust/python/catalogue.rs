//! A Session's tools' catalogue (`crate::catalogue`, issue 33 §2), made from Python's
//! description of the tools.
//!
//! Describing a tool costs tens of microseconds of Python (its signature worked out from type
//! hints), so the Session gives a callable instead of the entries, and it is called once,
//! before the first run that may read the catalogue (`CoreSession::run_inner` decides), not
//! when the Session is made. From then on the catalogue is plain data: no Python runs while a
//! program searches it.

use std::sync::OnceLock;

use pyo3::prelude::*;

use crate::catalogue::{Catalogue, Effect, ToolDoc};

/// One tool as the source describes it: name, parameter names, signature, description, effect.
type Entry = (
    String,
    Vec<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

#[derive(Default)]
pub struct CatalogueSource {
    /// Returns one `Entry` per tool, in the tools' order.
    source: Option<Py<PyAny>>,
    made: OnceLock<Catalogue>,
}

impl CatalogueSource {
    pub fn new(source: Py<PyAny>) -> Self {
        CatalogueSource {
            source: Some(source),
            made: OnceLock::new(),
        }
    }

    /// The catalogue, once made; a Session without a source never has one (`tools` and `doc`
    /// then know the tools' names only).
    pub fn get(&self) -> Option<&Catalogue> {
        self.made.get()
    }

    /// Makes the catalogue from its source, once (with the GIL: the source is Python).
    pub fn load(&self, py: Python<'_>) -> PyResult<()> {
        let Some(source) = &self.source else {
            return Ok(());
        };
        if self.made.get().is_some() {
            return Ok(());
        }
        let entries = source.call0(py)?;
        let mut tools = Vec::new();
        for item in entries.bind(py).try_iter()? {
            let (name, params, signature, doc, effect): Entry = item?.extract()?;
            let effect = match effect.as_deref() {
                None => None,
                Some(e) => Some(Effect::parse(e).ok_or_else(|| {
                    pyo3::exceptions::PyValueError::new_err(format!(
                        "tool {name:?}: effect {e:?} is not 'read' or 'write'"
                    ))
                })?),
            };
            tools.push(ToolDoc {
                name,
                params,
                signature,
                doc,
                effect,
            });
        }
        // two runs may make it at once: from the same entries, and the first one made is kept
        let _ = self.made.set(Catalogue::new(tools));
        Ok(())
    }
}

//! Forms of Clojure outside the subset, and shapes of other languages, with what to write instead.

use super::*;

/// Clojure forms outside the subset, with the supported alternative.
pub(super) fn unsupported_form(name: &str) -> Option<&'static str> {
    Some(match name {
        "for" => "`for` is not supported; use map/filter (or doseq for effects)",
        "case" | "condp" => "use cond: (cond (= x :a) ... (= x :b) ... :else ...)",
        "letfn" => "`letfn` is not supported; define helpers with defn, or bind fns in let",
        "quote" => "quote is not supported; use a vector [...] for literal data",
        "try" | "catch" | "finally" | "throw" => {
            "there are no exceptions; check values with if/cond and end with (fail reason)"
        }
        "defmacro" => "macros are not supported; use defn",
        "ns" | "require" | "import" | "in-ns" | "use" => {
            "namespaces are fixed: tools are tool/name, input is data/name, your definitions are bare names"
        }
        "binding" => "dynamic vars are not supported; use let",
        "call" => "tools are called by name: write (tool/name ...)",
        "as->" | "some->" | "some->>" | "cond->" | "cond->>" => {
            "only -> and ->> exist; use let to name intermediate values"
        }
        "if-some" | "when-some" | "when-first" => "use if-let / when-let",
        "lazy-seq" | "iterate" | "repeatedly" | "cycle" => {
            "there are no lazy or infinite sequences; use range with an end, or loop/recur"
        }
        "atom" | "swap!" | "reset!" | "deref" | "ref" | "dosync" | "volatile!" => {
            "there is no mutable state; thread values through loop/recur or reduce, or use def"
        }
        "eval" | "read-string" => "eval is not supported",
        "defrecord" | "deftype" | "defprotocol" | "defmulti" | "defmethod" => {
            "records, types, protocols and multimethods are not supported; use maps and defn"
        }
        _ => return None,
    })
}

/// `[x for x in xs]`: Python's list comprehension written as a vector.
pub(super) fn is_comprehension(items: &[Form]) -> bool {
    let at = |name: &str| items.iter().position(|f| f.symbol_name() == Some(name));
    matches!((at("for"), at("in")), (Some(f), Some(i)) if f > 0 && f < i)
}

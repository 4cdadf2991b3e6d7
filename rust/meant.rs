//! What an LLM probably meant, and what is not in the subset: the one home of that knowledge.
//! LLMs write PTC-Lisp with Python, Clojure core and Java/JavaScript in their fingers; every
//! error path asks here first, so a foreign name, method, operator, Clojure form outside the
//! subset or namespace is answered with the PTC-Lisp that does the job rather than with a
//! similar-looking name. (`crate::hints` only ranks names by spelling.)
//!
//! Every idiom only names builtins and special forms (a test reads each `(name` in these tables
//! against the builtins table); single letters and `...` stand for the program's own parts.

/// Names from Python, Clojure core (outside the subset), Java and JavaScript, with what to write
/// instead. Looked up by exact name; misspellings of these names are matched too (`lenght`).
pub const NAMES: &[(&str, &str)] = &[
    // ---- Python builtins, keywords and values
    ("len", "use (count coll)"),
    ("length", "use (count coll)"),
    ("size", "use (count coll)"),
    ("None", "nil is written nil"),
    ("null", "nil is written nil"),
    ("undefined", "nil is written nil"),
    ("nullptr", "nil is written nil"),
    ("True", "booleans are written true and false"),
    ("False", "booleans are written true and false"),
    ("lambda", "write (fn [x] ...) or #(... % ...)"),
    ("append", "use (conj v x)"),
    ("push", "use (conj v x)"),
    ("extend", "use (into v coll) or (concat a b)"),
    ("enumerate", "use (map-indexed (fn [i x] ...) coll)"),
    ("sorted", "use (sort coll), or (sort-by f coll)"),
    ("reversed", "use (reverse coll)"),
    ("sum", "use (reduce + coll), or (sum-by :k coll) over records"),
    ("avg", "use (avg-by :k coll), or (/ (reduce + xs) (count xs))"),
    ("mean", "use (avg-by :k coll), or (/ (reduce + xs) (count xs))"),
    ("average", "use (avg-by :k coll), or (/ (reduce + xs) (count xs))"),
    ("any", "use (some pred coll)"),
    ("all", "use (every? pred coll)"),
    ("dict", "use a map literal {...} or (into {} pairs)"),
    ("tuple", "use a vector [...]"),
    ("isinstance", "use a type predicate: number?, string?, map?, vector?, nil? ..."),
    ("type", "use a type predicate: number?, string?, map?, vector?, nil? ..."),
    ("items", "use (entries m): each entry is a [k v] pair"),
    ("values", "use (vals m)"),
    ("lower", "use (lower-case s)"),
    ("upper", "use (upper-case s)"),
    ("strip", "use (trim s)"),
    ("startswith", "use (starts-with? s prefix)"),
    ("endswith", "use (ends-with? s suffix)"),
    ("while", "use loop/recur: (loop [i 0] (if (< i n) (recur (inc i)) i))"),
    ("elif", "use cond: (cond a x b y :else z)"),
    ("else", "in cond the last test is :else (a keyword); if takes its else branch third: (if c a b)"),
    ("pass", "every form has a value; use nil"),
    ("in", "use (contains? m k) for map keys and sets, (some #(= % x) coll) for values, (includes? s sub) for text"),
    ("is", "use (= a b), or (nil? x)"),
    ("str_join", "use (join sep coll)"),
    // ---- JavaScript / Java
    ("console", "use (println x)"),
    ("toString", "use (str x)"),
    ("tostring", "use (str x)"),
    ("to-string", "use (str x)"),
    ("substring", "use (subs s start end)"),
    ("substr", "use (subs s start end)"),
    ("slice", "use (subs s start end) for text, (take n (drop start v)) for vectors"),
    ("indexOf", "use includes? or re-find"),
    ("index-of", "use includes? or re-find"),
    ("parseInt", "use (parse-long s)"),
    ("parseLong", "use (parse-long s)"),
    ("parseFloat", "use (parse-double s)"),
    ("parseDouble", "use (parse-double s)"),
    ("valueOf", "use parse-long or parse-double"),
    ("toUpperCase", "use (upper-case s)"),
    ("toLowerCase", "use (lower-case s)"),
    // ---- operators from other languages
    ("!=", "use (not= a b)"),
    ("<>", "use (not= a b)"),
    ("==", "use (= a b)"),
    ("===", "use (= a b)"),
    ("&&", "use (and a b)"),
    ("||", "use (or a b)"),
    ("!", "use (not x)"),
    ("**", "use (pow a b)"),
    ("^", "use (pow a b)"),
    ("//", "use (int (/ a b)), or (floor (/ a b)) to round down"),
    ("%", "use (mod a b)"),
    ("+=", "there is no assignment; compute the new value, e.g. (+ x 1), and bind it with let"),
    ("++", "use (inc x)"),
    ("--", "use (dec x)"),
    // ---- Clojure core outside the subset
    ("comp", "there is no comp; write the composition: #(f (g %))"),
    ("partial", "there is no partial; write #(f a %)"),
    ("complement", "there is no complement; write #(not (f %))"),
    ("constantly", "there is no constantly; write (fn [& _] x)"),
    ("every-pred", "use (all-of p1 p2 ...)"),
    ("some-fn", "use (any-of p1 p2 ...)"),
    ("keep", "use (remove nil? (map f coll))"),
    ("mapcat", "use (apply concat (map f coll))"),
    ("filterv", "use (filter pred coll): it already returns a vector"),
    ("quot", "use (int (/ a b))"),
    ("rand", "there is no randomness: programs are deterministic"),
    ("rand-int", "there is no randomness: programs are deterministic"),
    ("rand-nth", "there is no randomness: programs are deterministic"),
    ("shuffle", "there is no randomness: programs are deterministic"),
    ("name", "for a keyword's text use (subs (str k) 1)"),
    ("keyword", "write keywords literally (:k); data keys are already keywords"),
    ("symbol", "there are no symbols as values; use strings or keywords"),
    ("list", "use a vector [...]"),
    ("list?", "vectors are the only sequences: use vector?"),
    ("seq?", "vectors are the only sequences: use vector?"),
    ("fn?", "there is no fn?; keep functions and data apart"),
    ("integer?", "use (and (number? x) (= x (int x)))"),
    ("butlast", "use (take (dec (count v)) v)"),
    ("drop-last", "use (take (dec (count v)) v)"),
    ("peek", "use last"),
    ("pop", "use (take (dec (count v)) v)"),
    ("subvec", "use (take n (drop start v))"),
    ("zipmap", "use (into {} (zip ks vs))"),
    ("merge-with", "use reduce over the entries with update"),
    ("reduce-kv", "use (reduce (fn [acc [k v]] ...) init m)"),
    ("partition-by", "use group-by, or loop/recur"),
    ("partition-all", "use loop/recur with take and drop (partition drops an incomplete last chunk)"),
    ("split-at", "use [(take n v) (drop n v)]"),
    ("split-with", "use [(take-while p v) (drop-while p v)]"),
    ("dedupe", "use distinct, which removes every repeat"),
    ("update-keys", "use (into {} (map (fn [[k v]] [(f k) v]) m))"),
    ("capitalize", "use (str (upper-case (subs s 0 1)) (subs s 1))"),
    ("blank?", "use (empty? (trim s))"),
    ("triml", "use trim"),
    ("trimr", "use trim"),
    ("repeat", "there are no lazy sequences: use (map (fn [_] x) (range n))"),
    ("hash-map", "use a map literal {...} or (into {} pairs)"),
    ("hash-set", "use a set literal #{...} or (set v)"),
    ("format", "build text with str, e.g. (str \"total: \" x); round with (/ (round (* x 100)) 100.0)"),
    ("sorted-map", "maps keep insertion order; sort entries with (sort-by key (entries m)) or (sort-by first m)"),
    ("sorted-set", "sets keep insertion order; use (sort s) for a sorted vector"),
    ("print", "use println"),
    ("prn", "use println"),
    ("pr-str", "use str"),
    ("println-str", "use str"),
    ("str-join", "use (join sep coll)"),
    ("slurp", "there is no file or network access; use the tools you are given"),
    ("spit", "there is no file or network access; use the tools you are given"),
    ("dotimes", "use (doseq [i (range n)] ...)"),
    ("defn-", "use defn; every definition is visible to later programs"),
    ("defonce", "use def"),
    ("assert", "check with if and stop with fail: (if ok x (fail \"reason\"))"),
    ("doto", "there are no mutable objects; thread a value with -> instead"),
    ("nthrest", "use (drop n coll)"),
    ("now", "the current time is (System/currentTimeMillis); a date comes from (java.time.LocalDate/parse s)"),
    ("last-index-of", "use re-seq or loop/recur"),
    ("vector-of", "use a vector [...]"),
    ("not-empty?", "use (not-empty coll) or (seq coll)"),
    ("contains", "use (contains? m k) for map keys and sets, (includes? s sub) for text"),
];

/// Methods (`.toUpperCase`, `(. s length)`) with the builtin that does the job: there are no
/// methods on values, only functions.
pub const METHODS: &[(&str, &str)] = &[
    ("toUpperCase", "(upper-case s)"),
    ("upper", "(upper-case s)"),
    ("toLowerCase", "(lower-case s)"),
    ("lower", "(lower-case s)"),
    ("length", "(count s)"),
    ("size", "(count coll)"),
    ("count", "(count coll)"),
    ("len", "(count coll)"),
    (
        "contains",
        "(includes? s sub) for text, (contains? m k) for map keys and sets",
    ),
    ("includes", "(includes? s sub)"),
    ("containsKey", "(contains? m k)"),
    ("has", "(contains? m k)"),
    (
        "split",
        "(split s sep), or (re-split (re-pattern \"...\") s)",
    ),
    ("trim", "(trim s)"),
    ("strip", "(trim s)"),
    ("get", "(get m k) or (:k m)"),
    ("getOrDefault", "(get m k default)"),
    ("startsWith", "(starts-with? s prefix)"),
    ("startswith", "(starts-with? s prefix)"),
    ("endsWith", "(ends-with? s suffix)"),
    ("endswith", "(ends-with? s suffix)"),
    ("join", "(join sep coll)"),
    ("toString", "(str x)"),
    ("substring", "(subs s start end)"),
    ("substr", "(subs s start end)"),
    ("slice", "(subs s start end)"),
    ("charAt", "(nth s i)"),
    ("replace", "(replace s match replacement)"),
    ("replaceAll", "(replace s match replacement)"),
    ("indexOf", "includes? or re-find"),
    ("equals", "(= a b)"),
    ("isEmpty", "(empty? coll)"),
    ("keys", "(keys m)"),
    ("keySet", "(keys m)"),
    ("values", "(vals m)"),
    ("items", "(entries m)"),
    ("entrySet", "(entries m)"),
    ("push", "(conj v x)"),
    ("append", "(conj v x)"),
    ("add", "(conj coll x)"),
    ("put", "(assoc m k v)"),
    ("map", "(map f coll)"),
    ("filter", "(filter pred coll)"),
    ("reduce", "(reduce f init coll)"),
    ("matches", "(re-matches (re-pattern \"...\") s)"),
    ("format", "(str ...)"),
];

/// The idiom for a foreign name, if it is one.
pub fn idiom(name: &str) -> Option<&'static str> {
    let base = name
        .rsplit('/')
        .next()
        .filter(|b| !b.is_empty())
        .unwrap_or(name);
    NAMES.iter().find(|(n, _)| *n == base).map(|(_, i)| *i)
}

/// The builtin that does what a method does.
pub fn method(name: &str) -> Option<&'static str> {
    METHODS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The hint for a method call (`(.toUpperCase s)`, `(. s length)`): the function to call.
/// The supported interop is listed too (LANGUAGE.md §7.16).
pub fn method_hint(name: &str) -> String {
    const INTEROP: &str = "the only interop is (.getTime d), (java.util.Date. ...), (System/currentTimeMillis), (java.time.LocalDate/parse s)";
    match method(name) {
        Some(f) => format!("values have no methods; call the function: {f}. {INTEROP}"),
        None => format!("values have no methods; call a function on the value. {INTEROP}"),
    }
}

/// Builtins that call a function once per element, with that element.
const PER_ELEMENT: &[&str] = &[
    "map",
    "mapv",
    "filter",
    "remove",
    "some",
    "every?",
    "not-any?",
    "sort-by",
    "group-by",
    "distinct-by",
    "take-while",
    "drop-while",
    "sum-by",
    "avg-by",
    "min-by",
    "max-by",
    "max-key",
    "min-key",
    "update-vals",
    "pmap",
    "find",
    "none-of",
    "any-of",
    "all-of",
];

/// The hint for an arity error raised when a builtin called the function it was given with the
/// wrong number of arguments: how that builtin calls it.
pub fn callback_arity_hint(builtin: &str) -> Option<String> {
    Some(match builtin {
        "map-indexed" => {
            "map-indexed calls its function with two arguments, the index and the element: (fn [i x] ...)".to_string()
        }
        "reduce" => "reduce calls its function with two arguments, the accumulator and the element: (fn [acc x] ...); over a map each element is a [k v] entry: (fn [acc [k v]] ...)".to_string(),
        "sort" => "a comparator takes two arguments: (fn [a b] ...)".to_string(),
        b if PER_ELEMENT.contains(&b) => format!(
            "{b} calls its function with one argument, the element; a map's elements are [k v] entries: (fn [[k v]] ...)"
        ),
        _ => return None,
    })
}

/// The hint for a builtin called with the wrong number of arguments, where the count itself
/// shows the mistake (keys given one by one instead of in a vector).
pub fn builtin_arity_hint(builtin: &str, given: usize) -> Option<&'static str> {
    match builtin {
        "select-keys" if given > 2 => Some("the keys go in one vector: (select-keys m [:a :b])"),
        "get-in" | "assoc-in" | "update-in" if given > 3 => {
            Some("the path goes in one vector: (get-in m [:a :b])")
        }
        _ => None,
    }
}

/// How the value is written in a shape hint: a function, a collection, a string or other.
enum Shape {
    Fn,
    Coll,
    Str,
    Keyword,
    Map,
    Other,
}

fn shape(v: &crate::value::Value) -> Shape {
    use crate::value::Value;
    match v {
        Value::Builtin(_) | Value::Closure(_) | Value::Native(_) | Value::Tool(_) => Shape::Fn,
        Value::Keyword(_) => Shape::Keyword,
        Value::Map(_) => Shape::Map,
        Value::Vector(_) | Value::Set(_) => Shape::Coll,
        Value::Str(_) => Shape::Str,
        _ => Shape::Other,
    }
}

/// The hint for a type error whose arguments have the shape of a common mistake: arguments
/// swapped, `->` where `->>` was meant, `+` on text.
/// Builtins may have moved their arguments out before failing, so the message's "got ..." is
/// read too.
pub fn type_shape_hint(
    builtin: &str,
    args: &[crate::value::Value],
    message: &str,
) -> Option<String> {
    let first = args.first().map(shape);
    let last = args.last().map(shape);
    match builtin {
        b if PER_ELEMENT.contains(&b) || b == "reduce" || b == "map-indexed" => {
            let coll_as_fn = ["vector", "map", "set"]
                .iter()
                .any(|t| message.contains(&format!("expected a function, got {t} ")));
            if coll_as_fn
                || matches!(first, Some(Shape::Coll | Shape::Map))
                    && matches!(last, Some(Shape::Fn | Shape::Keyword))
            {
                return Some(format!(
                    "the function comes first and the collection last: ({b} f coll); in a pipeline use ->>, which threads the value last, not ->"
                ));
            }
            None
        }
        "get" | "get-in" | "contains?" | "select-keys" | "dissoc" | "assoc" | "update"
            if (matches!(first, Some(Shape::Keyword))
                && matches!(args.get(1).map(shape), Some(Shape::Map)))
                || message.contains(" or nil, got keyword ") =>
        {
            Some(format!(
                "the map comes first: ({builtin} m :k ...); (:k m) also reads a key; in a pipeline use ->, which threads the value first"
            ))
        }
        "join" if matches!(first, Some(Shape::Coll)) && matches!(last, Some(Shape::Str)) => {
            Some("the separator comes first: (join \", \" coll)".to_string())
        }
        "split" | "includes?" | "starts-with?" | "ends-with?"
            if matches!(first, Some(Shape::Coll)) =>
        {
            Some(format!("the string comes first: ({builtin} s x)"))
        }
        "+" | "-" | "*" | "/" if args.iter().any(|a| matches!(shape(a), Shape::Str)) => {
            Some("arithmetic takes numbers; to join text use (str a b); to read a number use (parse-long s) or (parse-double s)".to_string())
        }
        "concat" if args.iter().all(|a| matches!(shape(a), Shape::Str)) => {
            Some("to join text use (str a b)".to_string())
        }
        "<" | ">" | "<=" | ">=" if message.contains("got date") => Some(
            "dates compare with (compare a b), or as numbers: (< (.getTime a) (.getTime b))"
                .to_string(),
        ),
        _ => None,
    }
}

// ---- forms and namespaces outside the subset ----

/// Reader syntax of Clojure outside the subset, by how the form starts (`#"`, `#_`, `##`, `#`
/// for a tagged literal, `'`, `` ` ``, `~`, `@`, and `^` / `^ ` for metadata or a power): the
/// parse error's message and its hint.
pub const SYNTAX: &[(&str, &str, Option<&str>)] = &[
    (
        "#\"",
        "regex literals #\"...\" are not supported",
        Some("build the regex with (re-pattern \"...\"), or use split, split-lines or re-split"),
    ),
    (
        "#_",
        "the discard form #_ is not supported",
        Some("comment code out with ; instead"),
    ),
    (
        "##",
        "##Inf, ##-Inf and ##NaN cannot be written in programs",
        Some("write Double/POSITIVE_INFINITY, Double/NEGATIVE_INFINITY or Double/NaN"),
    ),
    ("#", "tagged literals (#tag ...) are not supported", None),
    (
        "'",
        "quote (') is not supported",
        Some("use a vector [...] instead of a quoted list; symbols need no quoting"),
    ),
    (
        "`",
        "syntax-quote (`) is not supported: there are no macros",
        None,
    ),
    (
        "~",
        "unquote (~) is not supported: there are no macros",
        None,
    ),
    (
        "@",
        "deref (@) is not supported",
        Some("there are no atoms or refs; use let bindings, loop/recur or def"),
    ),
    // `(^ 2 10)` is an exponent, `^:private` metadata
    (
        "^ ",
        "metadata (^) is not supported",
        Some("for a power use (pow a b)"),
    ),
    (
        "^",
        "metadata (^) is not supported",
        Some("drop the metadata: definitions need none"),
    ),
];

/// The message and hint for reader syntax outside the subset that starts as `lead`.
pub fn unsupported_syntax(lead: &str) -> Option<(&'static str, Option<&'static str>)> {
    SYNTAX
        .iter()
        .find(|(start, _, _)| *start == lead)
        .map(|(_, message, hint)| (*message, *hint))
}

/// Clojure forms outside the subset, with the supported alternative.
pub fn unsupported_form(name: &str) -> Option<&'static str> {
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

/// `[x for x in xs]`: Python's list comprehension written as a vector, given the symbol each
/// item is (`None` for an item that is no symbol).
pub fn is_comprehension<'a>(items: impl Iterator<Item = Option<&'a str>> + Clone) -> bool {
    let at = |name: &str| items.clone().position(|s| s == Some(name));
    matches!((at("for"), at("in")), (Some(f), Some(i)) if f > 0 && f < i)
}

/// The hint for `str/escape`-style names that are not builtins.
pub fn family_hint(ns: &str) -> String {
    let members: &[&str] = match ns {
        "clojure.string" | "str" | "string" => &[
            "str",
            "subs",
            "join",
            "split",
            "split-lines",
            "trim",
            "replace",
            "upper-case",
            "lower-case",
            "starts-with?",
            "ends-with?",
            "includes?",
        ],
        "clojure.set" | "set" => &["union", "intersection", "difference"],
        "Math" => &["abs", "max", "min", "floor", "ceil", "round", "sqrt", "pow"],
        _ => &[],
    };
    let family = match ns {
        "clojure.string" | "str" | "string" => "String functions",
        "clojure.set" | "set" => "Set functions",
        "Math" => "Math functions",
        _ => "",
    };
    if members.is_empty() {
        "see the function list in the system prompt".to_string()
    } else {
        format!("{family}: {}", members.join(", "))
    }
}

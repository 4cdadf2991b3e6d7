"""The mistakes LLMs trained on Python, Clojure and Java make in PTC-Lisp, each with the exact
error an LLM gets back: type, message and hint (issue 15: every error names the fix).

One case per line. ``U(program, name, idiom)`` is an undefined name from another language:
message "<name> is not defined", hint "<name> is not part of PTC-Lisp; <idiom>". ``M(program,
type, message, hint)`` is any other error, exact. Every program runs with the same data
(``data/orders``, ``data/customer``, ``data/lines``) and tool (``tool/search``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import ptc
import pytest
from ptc import _core


class Mistake(NamedTuple):
    program: str
    type: str
    message: str
    hint: str | None


def M(program: str, type_: str, message: str, hint: str | None) -> Mistake:
    return Mistake(program, type_, message, hint)


def U(program: str, name: str, idiom: str) -> Mistake:
    return Mistake(
        program,
        "undefined_variable",
        f"{name} is not defined",
        f"{name} is not part of PTC-Lisp; {idiom}",
    )


UV = "undefined_variable"
AE = "analysis_error"
TE = "type_error"
AR = "arity_error"
PE = "parse_error"
INTEROP = (
    "the only interop is (.getTime d), (java.util.Date. ...), (System/currentTimeMillis), "
    "(java.time.LocalDate/parse s)"
)
COUNT = "use (count coll)"
NIL = "nil is written nil"
BOOL = "booleans are written true and false"
AVG = "use (avg-by :k coll), or (/ (reduce + xs) (count xs))"
PRED = "use a type predicate: number?, string?, map?, vector?, nil? ..."
RANDOM = "there is no randomness: programs are deterministic"
NO_IO = "there is no file or network access; use the tools you are given"
PER_ELEMENT = (
    "{} calls its function with one argument, the element; a map's elements are [k v] entries: "
    "(fn [[k v]] ...)"
)
FN_FIRST = (
    "the function comes first and the collection last: ({} f coll); in a pipeline use ->>, "
    "which threads the value last, not ->"
)
ARITH = (
    "arithmetic takes numbers; to join text use (str a b); to read a number use (parse-long s) "
    "or (parse-double s)"
)

# fmt: off
MISTAKES: list[Mistake] = [
    # --- 1. Python builtins, keywords and values
    U("(len data/orders)", "len", COUNT),
    U('(length "abc")', "length", COUNT),
    U("(size [1 2])", "size", COUNT),
    U("(if (= 1 None) 1 2)", "None", NIL),
    U("(= 1 null)", "null", NIL),
    U("(= 1 undefined)", "undefined", NIL),
    U("(if True 1 2)", "True", BOOL),
    U("(if False 1 2)", "False", BOOL),
    U("(map (lambda [x] x) [1])", "lambda", "write (fn [x] ...) or #(... % ...)"),
    U("(append [1] 2)", "append", "use (conj v x)"),
    U("(push [1] 2)", "push", "use (conj v x)"),
    U("(extend [1] [2])", "extend", "use (into v coll) or (concat a b)"),
    U("(enumerate [:a :b])", "enumerate", "use (map-indexed (fn [i x] ...) coll)"),
    U("(sorted [3 1 2])", "sorted", "use (sort coll), or (sort-by f coll)"),
    U("(reversed [1 2])", "reversed", "use (reverse coll)"),
    U("(sum [1 2 3])", "sum", "use (reduce + coll), or (sum-by :k coll) over records"),
    U("(avg [1 2])", "avg", AVG),
    U("(mean [1 2])", "mean", AVG),
    U("(average [1 2])", "average", AVG),
    U("(any odd? [1 2])", "any", "use (some pred coll)"),
    U("(all odd? [1 2])", "all", "use (every? pred coll)"),
    U("(dict)", "dict", "use a map literal {...} or (into {} pairs)"),
    U("(tuple 1 2)", "tuple", "use a vector [...]"),
    U("(isinstance 1 2)", "isinstance", PRED),
    U("(type 1)", "type", PRED),
    U("(items data/customer)", "items", "use (entries m): each entry is a [k v] pair"),
    U("(values data/customer)", "values", "use (vals m)"),
    U('(lower "A")', "lower", "use (lower-case s)"),
    U('(upper "a")', "upper", "use (upper-case s)"),
    U('(strip " a ")', "strip", "use (trim s)"),
    U('(startswith "ab" "a")', "startswith", "use (starts-with? s prefix)"),
    U('(endswith "ab" "b")', "endswith", "use (ends-with? s suffix)"),
    U("(while true 1)", "while", "use loop/recur: (loop [i 0] (if (< i n) (recur (inc i)) i))"),
    U("(elif true 1)", "elif", "use cond: (cond a x b y :else z)"),
    U("(cond false 1 else 2)", "else", "in cond the last test is :else (a keyword); if takes its else branch third: (if c a b)"),
    U("(pass)", "pass", "every form has a value; use nil"),
    U("(in 1 [1 2])", "in", "use (contains? m k) for map keys and sets, (some #(= % x) coll) for values, (includes? s sub) for text"),
    U("(is 1 1)", "is", "use (= a b), or (nil? x)"),
    M("(import json)", AE, "import is not supported", "namespaces are fixed: tools are tool/name, input is data/name, your definitions are bare names"),
    # --- 1. JavaScript / Java names
    U('(console "x")', "console", "use (println x)"),
    U("(toString 1)", "toString", "use (str x)"),
    U("(to-string 1)", "to-string", "use (str x)"),
    U('(substring "abc" 0 1)', "substring", "use (subs s start end)"),
    U('(substr "abc" 0 1)', "substr", "use (subs s start end)"),
    U("(slice [1 2 3] 0 1)", "slice", "use (subs s start end) for text, (take n (drop start v)) for vectors"),
    U('(indexOf "abc" "b")', "indexOf", "use includes? or re-find"),
    U('(parseInt "12")', "parseInt", "use (parse-long s)"),
    U('(parseFloat "1.5")', "parseFloat", "use (parse-double s)"),
    M('(Integer/parseInt "12")', AE, "unknown namespace Integer/", "parseInt is not part of PTC-Lisp; use (parse-long s)"),
    M('(Double/parseDouble "1.5")', AE, "parseDouble is not available. see the function list in the system prompt", "parseDouble is not part of PTC-Lisp; use (parse-double s)"),
    # --- 1. operators from other languages
    U("(!= 1 2)", "!=", "use (not= a b)"),
    U("(<> 1 2)", "<>", "use (not= a b)"),
    U("(== 1 1)", "==", "use (= a b)"),
    U("(=== 1 1)", "===", "use (= a b)"),
    U("(&& true false)", "&&", "use (and a b)"),
    M("(|| true false)", PE, "unexpected character '|' in ||", "|| is not part of PTC-Lisp; use (or a b)"),
    U("(! true)", "!", "use (not x)"),
    U("(** 2 10)", "**", "use (pow a b)"),
    M("(^ 2 10)", PE, "metadata (^) is not supported", "for a power use (pow a b)"),
    M("(defn ^:private f [x] x)", PE, "metadata (^) is not supported", "drop the metadata: definitions need none"),
    U("(// 7 2)", "//", "use (int (/ a b)), or (floor (/ a b)) to round down"),
    U("(++ 1)", "++", "use (inc x)"),
    U("(-- 1)", "--", "use (dec x)"),
    U("(+= 1 2)", "+=", "there is no assignment; compute the new value, e.g. (+ x 1), and bind it with let"),
    # --- 1. Clojure core outside the subset
    U("(dotimes [i 3] (println i))", "dotimes", "use (doseq [i (range n)] ...)"),
    U("(defn- helper [x] x)", "defn-", "use defn; every definition is visible to later programs"),
    U("(defonce total 1)", "defonce", "use def"),
    U("(assert (= 1 1))", "assert", 'check with if and stop with fail: (if ok x (fail "reason"))'),
    U("(doto {} (assoc :a 1))", "doto", "there are no mutable objects; thread a value with -> instead"),
    U("((comp inc inc) 1)", "comp", "there is no comp; write the composition: #(f (g %))"),
    U("((partial + 1) 2)", "partial", "there is no partial; write #(f a %)"),
    U("(keep identity [1 nil])", "keep", "use (remove nil? (map f coll))"),
    U("(mapcat identity [[1] [2]])", "mapcat", "use (apply concat (map f coll))"),
    U("(filterv odd? [1 2])", "filterv", "use (filter pred coll): it already returns a vector"),
    U("(rand-int 10)", "rand-int", RANDOM),
    U("(shuffle [1 2])", "shuffle", RANDOM),
    U('(format "%d" 1)', "format", 'build text with str, e.g. (str "total: " x); round with (/ (round (* x 100)) 100.0)'),
    U("(zipmap [:a] [1])", "zipmap", "use (into {} (zip ks vs))"),
    U("(nthrest [1 2 3] 1)", "nthrest", "use (drop n coll)"),
    U("(dedupe [1 1 2])", "dedupe", "use distinct, which removes every repeat"),
    U('(slurp "f.txt")', "slurp", NO_IO),
    U("(println-str 1)", "println-str", "use str"),
    U('(str-join ", " ["a"])', "str-join", "use (join sep coll)"),
    U('(str_join ", " ["a"])', "str_join", "use (join sep coll)"),
    U('(contains "abc" "a")', "contains", "use (contains? m k) for map keys and sets, (includes? s sub) for text"),
    # --- 1. typos far from any name of the program: the foreign name they misspell
    M("(lenght [1])", UV, "lenght is not defined", "lenght looks like length, which is not part of PTC-Lisp; use (count coll)"),
    M("(lenth [1])", UV, "lenth is not defined", "lenth looks like length, which is not part of PTC-Lisp; use (count coll)"),
    M("(apend [1] 2)", UV, "apend is not defined", "apend looks like append, which is not part of PTC-Lisp; use (conj v x)"),
    # --- 1. shapes from other languages
    M('(f"total {1}")', PE, "f-strings are not supported", 'build text with str: (str "total: " x)'),
    M("[x for x in data/orders]", AE, "list comprehensions are not supported", "use (map (fn [x] ...) coll), and (filter pred coll) for an if clause"),
    M('(get data/customer name="x")', UV, "name= is not defined", "there are no keyword arguments; pass a map such as {:name value}"),
    M("(search query=1)", UV, "query=1 is not defined", "there are no keyword arguments; pass a map such as {:query value}"),
    M("(let [order_total 1] order_total)", None, "", None),
    M("(+ order_total 1)", UV, "order_total is not defined", "names use hyphens: did you mean order-total?"),
    # --- 1. Clojure forms outside the subset: the supported alternative
    M("(for [x [1 2]] (inc x))", AE, "for is not supported", "`for` is not supported; use map/filter (or doseq for effects)"),
    M("(case 1 1 :a :b)", AE, "case is not supported", "use cond: (cond (= x :a) ... (= x :b) ... :else ...)"),
    M("(condp = 1 1 :a)", AE, "condp is not supported", "use cond: (cond (= x :a) ... (= x :b) ... :else ...)"),
    M("(try (inc 1) (catch Exception e 0))", AE, "try is not supported", "there are no exceptions; check values with if/cond and end with (fail reason)"),
    M('(throw "x")', AE, "throw is not supported", "there are no exceptions; check values with if/cond and end with (fail reason)"),
    M("(letfn [(f [x] x)] (f 1))", AE, "letfn is not supported", "`letfn` is not supported; define helpers with defn, or bind fns in let"),
    M("(defmacro m [x] x)", AE, "defmacro is not supported", "macros are not supported; use defn"),
    M("(binding [x 1] x)", AE, "binding is not supported", "dynamic vars are not supported; use let"),
    M("(quote (1 2))", AE, "quote is not supported", "quote is not supported; use a vector [...] for literal data"),
    M("(atom 0)", AE, "atom is not supported", "there is no mutable state; thread values through loop/recur or reduce, or use def"),
    M("(swap! a inc)", AE, "swap! is not supported", "there is no mutable state; thread values through loop/recur or reduce, or use def"),
    M("(require clojure.string)", AE, "require is not supported", "namespaces are fixed: tools are tool/name, input is data/name, your definitions are bare names"),
    M("(some-> {:a 1} :a inc)", AE, "some-> is not supported", "only -> and ->> exist; use let to name intermediate values"),
    M("(iterate inc 0)", AE, "iterate is not supported", "there are no lazy or infinite sequences; use range with an end, or loop/recur"),
    M("(repeatedly 3 (fn [] 1))", AE, "repeatedly is not supported", "there are no lazy or infinite sequences; use range with an end, or loop/recur"),
    M("(defrecord P [x])", AE, "defrecord is not supported", "records, types, protocols and multimethods are not supported; use maps and defn"),
    M('(eval (read-string "1"))', AE, "eval is not supported", "eval is not supported"),
    M('(call "search" {:q 1})', AE, "call is not supported", "tools are called by name: write (tool/name ...)"),
    # --- 1. snake_case names of builtins
    M("(group_by :a [])", UV, "group_by is not defined", "names use hyphens: did you mean group-by?"),
    M("(sort_by :a [])", UV, "sort_by is not defined", "names use hyphens: did you mean sort-by?"),
    M("(starts_with? \"ab\" \"a\")", UV, "starts_with? is not defined", "names use hyphens: did you mean starts-with??"),
    M("(parse_long \"1\")", UV, "parse_long is not defined", "names use hyphens: did you mean parse-long?"),
    # --- 1. typos of builtins
    M("(fitler odd? [1])", UV, "fitler is not defined", "Did you mean: filter"),
    M("(reduec + [1])", UV, "reduec is not defined", "Did you mean: reduce"),
    M("(gropu-by :a [])", UV, "gropu-by is not defined", "Did you mean: group-by"),
    M("(frequences [1])", UV, "frequences is not defined", "Did you mean: frequencies"),
    M("(uppercase \"a\")", UV, "uppercase is not defined", "Did you mean: upper-case, upcase"),
    # --- 2. curated equivalents rank before edit distance and prefixes
    # a short prefix is no suggestion: strip-str is not str; with nothing near, the name may be
    # the program's own, not yet defined (issue 30)
    M("(strip-str 1)", UV, "strip-str is not defined", "if strip-str is your own name, define it before use: (def strip-str ...) or (defn strip-str [...] ...)"),
    M('(str-trim " a ")', UV, "str-trim is not defined", "if str-trim is your own name, define it before use: (def str-trim ...) or (defn str-trim [...] ...)"),
    # a short name is not taken for a misspelt foreign one: top is not pop (issue 30)
    M("(top [1 2])", UV, "top is not defined", "if top is your own name, define it before use: (def top ...) or (defn top [...] ...)"),
    M("(defn f [xs] (top xs)) (f [1])", UV, "top is not defined", "if top is your own name, define it before use: (def top ...) or (defn top [...] ...)"),
    M("(println-line 1)", UV, "println-line is not defined", "Did you mean: println"),
    M("(filtr odd? [1])", UV, "filtr is not defined", "Did you mean: filter"),
    M("(sort-bye :a [])", UV, "sort-bye is not defined", "Did you mean: sort-by, sort"),
    M("(count ordres)", UV, "ordres is not defined", "Did you mean: data/orders"),
    M("(let [total 1] (inc totl))", UV, "totl is not defined", "Did you mean: total"),
    # --- 3. Java and Python method calls: the builtin that does the job
    M('(.toUpperCase "a")', UV, "unknown method .toUpperCase", f"values have no methods; call the function: (upper-case s). {INTEROP}"),
    M('(.toLowerCase "A")', UV, "unknown method .toLowerCase", f"values have no methods; call the function: (lower-case s). {INTEROP}"),
    M('(.length "abc")', UV, "unknown method .length", f"values have no methods; call the function: (count s). {INTEROP}"),
    M("(.size [1])", UV, "unknown method .size", f"values have no methods; call the function: (count coll). {INTEROP}"),
    M('(.contains "abc" "a")', UV, "unknown method .contains", f"values have no methods; call the function: (includes? s sub) for text, (contains? m k) for map keys and sets. {INTEROP}"),
    M('(.split "a,b" ",")', UV, "unknown method .split", f'values have no methods; call the function: (split s sep), or (re-split (re-pattern "...") s). {INTEROP}'),
    M('(.trim " a ")', UV, "unknown method .trim", f"values have no methods; call the function: (trim s). {INTEROP}"),
    M("(.get data/customer :name)", UV, "unknown method .get", f"values have no methods; call the function: (get m k) or (:k m). {INTEROP}"),
    M('(.startsWith "ab" "a")', UV, "unknown method .startsWith", f"values have no methods; call the function: (starts-with? s prefix). {INTEROP}"),
    M('(.endsWith "ab" "b")', UV, "unknown method .endsWith", f"values have no methods; call the function: (ends-with? s suffix). {INTEROP}"),
    M('(.join ", " ["a"])', UV, "unknown method .join", f"values have no methods; call the function: (join sep coll). {INTEROP}"),
    M("(.toString 1)", UV, "unknown method .toString", f"values have no methods; call the function: (str x). {INTEROP}"),
    M('(.substring "abc" 1)', UV, "unknown method .substring", f"values have no methods; call the function: (subs s start end). {INTEROP}"),
    M('(.replace "ab" "a" "c")', UV, "unknown method .replace", f"values have no methods; call the function: (replace s match replacement). {INTEROP}"),
    M("(.isEmpty [])", UV, "unknown method .isEmpty", f"values have no methods; call the function: (empty? coll). {INTEROP}"),
    M("(.keys data/customer)", UV, "unknown method .keys", f"values have no methods; call the function: (keys m). {INTEROP}"),
    M("(.push [1] 2)", UV, "unknown method .push", f"values have no methods; call the function: (conj v x). {INTEROP}"),
    M("(.frobnicate 1)", UV, "unknown method .frobnicate", f"values have no methods; call a function on the value. {INTEROP}"),
    M('(. "abc" length)', AE, "method calls (. obj m) are not supported", f"values have no methods; call the function: (count s). {INTEROP}"),
    M('(. "abc" toUpperCase)', AE, "method calls (. obj m) are not supported", f"values have no methods; call the function: (upper-case s). {INTEROP}"),
    # --- 4. nil reaching arithmetic or a string function: where the nil came from
    M("(map (fn [o] (* (:qty o) (:unit_price o))) data/lines)", TE, "* expected a number, got nil", "(:unit_price ...) is nil: the map has no key :unit_price; did you mean :unit-price? Its keys: :qty, :unit-price"),
    M("(map #(* (:qty %) (:unit_price %)) data/lines)", TE, "* expected a number, got nil", "(:unit_price ...) is nil: the map has no key :unit_price; did you mean :unit-price? Its keys: :qty, :unit-price"),
    M("(reduce + (map #(* (:qty %) (:cost %)) data/lines))", TE, "* expected a number, got nil", "(:cost ...) is nil: the map has no key :cost; its keys: :qty, :unit-price"),
    M("(+ 1 data/order)", TE, "+ expected a number, got nil", "data/order is nil: there is no such input; did you mean data/orders?"),
    M("(inc data/totl)", TE, "inc expected a number, got nil", "data/totl is nil: there is no such input; inputs: data/orders, data/customer, data/lines"),
    M("(upper-case (:nam data/customer))", TE, "upper-case expected a string, got nil", "(:nam ...) is nil: the map has no key :nam; did you mean :name? Its keys: :name, :id"),
    M("(upper-case (:name data/custmer))", TE, "upper-case expected a string, got nil", "data/custmer is nil: there is no such input; did you mean data/customer?"),
    M("(let [c data/customer] (upper-case (get c :nme)) c)", TE, "upper-case expected a string, got nil", "(get ... :nme) is nil: the map has no key :nme; did you mean :name? Its keys: :name, :id"),
    M("(let [m {:a nil}] (+ 1 (:a m)))", TE, "+ expected a number, got nil", "(:a ...) is nil: the key is there and holds nil; give a default with (get m k default) or (or x default)"),
    M("(let [m nil] (+ 1 (:a m)))", TE, "+ expected a number, got nil", "(:a ...) is nil: the map it reads is itself nil"),
    M("(< (:qty (first data/lines)) (:qtyy (first data/lines)))", TE, "< expected numbers, got nil", "(:qtyy ...) is nil: the map has no key :qtyy; did you mean :qty? Its keys: :qty, :unit-price"),
    M("(< (:qty (last (:lines data/customer))) 1)", TE, "< expected numbers, got nil", "(:lines ...) is nil: the map has no key :lines; its keys: :name, :id"),
    M("(+ 1 (:missing {:a 1}))", TE, "+ expected a number, got nil", "(:missing ...) is nil: the map has no key :missing; its keys: :a"),
    M("(inc (:a {}))", TE, "inc expected a number, got nil", "(:a ...) is nil: the map is empty"),
    M("(+ 1 (:qty (first (map identity [{}]))))", TE, "+ expected a number, got nil", None),
    # an empty sequence, a short one
    M("(+ 1 (first []))", TE, "+ expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(inc (last []))", TE, "inc expected a number, got nil", "(last ...) is nil: the sequence was empty"),
    M("(inc (second [1]))", TE, "inc expected a number, got nil", "(second ...) is nil: the sequence has only 1 item"),
    M("(inc (fnext [1]))", TE, "inc expected a number, got nil", "(fnext ...) is nil: the sequence has only 1 item"),
    M("(inc (nth [1 2] 5))", TE, "inc expected a number, got nil", "(nth ... 5) is nil: the sequence has only 2 items"),
    M("(inc (nth [1 2] -1))", TE, "inc expected a number, got nil", "(nth ... -1) is nil: the index is negative"),
    M('(upper-case (first ""))', TE, "upper-case expected a string, got nil", "(first ...) is nil: the string was empty"),
    M('(upper-case (second "a"))', TE, "upper-case expected a string, got nil", "(second ...) is nil: the string has only 1 character"),
    M("(+ (:price (first [])) 1)", TE, "+ expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(+ (first (:lines data/customer)) 1)", TE, "+ expected a number, got nil", "(:lines ...) is nil: the map has no key :lines; its keys: :name, :id"),
    M("(< (first []) 1)", TE, "< expected numbers, got nil", "(first ...) is nil: the sequence was empty"),
    M("(> 1 (last []))", TE, "> expected numbers, got nil", "(last ...) is nil: the sequence was empty"),
    M("(subs (first []) 1)", TE, "subs expected a string, got nil", "(first ...) is nil: the sequence was empty"),
    M("((first []) 1)", "not_callable", "nil is not a function and cannot be called", "(first ...) is nil: the sequence was empty"),
    # compare names the nil too
    M("(compare (first []) 1)", TE, "cannot compare nil with integer 1: only numbers, strings, keywords, booleans and vectors are ordered", "(first ...) is nil: the sequence was empty"),
    M('(compare "a" (:nam data/customer))', TE, 'cannot compare string "a" with nil: only numbers, strings, keywords, booleans and vectors are ordered', "(:nam ...) is nil: the map has no key :nam; did you mean :name? Its keys: :name, :id"),
    # a path get-in did not find: the first step that finds nothing
    M("(+ (get-in {:a {:b 1}} [:a :c]) 1)", TE, "+ expected a number, got nil", "(get-in ... [:a :c]) is nil: the map at [:a] has no key :c; its keys: :b"),
    M("(upper-case (get-in data/customer [:nam]))", TE, "upper-case expected a string, got nil", "(get-in ... [:nam]) is nil: the map has no key :nam; did you mean :name? Its keys: :name, :id"),
    M("(* 2 (get-in data/lines [0 :qtty]))", TE, "* expected a number, got nil", "(get-in ... [0 :qtty]) is nil: the map at [0] has no key :qtty; did you mean :qty? Its keys: :qty, :unit-price"),
    M("(* 2 (get-in data/lines [3 :qty]))", TE, "* expected a number, got nil", "(get-in ... [3 :qty]) is nil: the vector has no index 3; it has 1 item"),
    M("(+ (get-in {:a nil} [:a :c]) 1)", TE, "+ expected a number, got nil", "(get-in ... [:a :c]) is nil: the value at [:a] is nil"),
    M("(+ (get-in {:a {:b nil}} [:a :b]) 1)", TE, "+ expected a number, got nil", "(get-in ... [:a :b]) is nil: the key is there and holds nil; give a default with (get-in m ks default) or (or x default)"),
    M("(+ (get-in {:a 5} [:a :b]) 1)", TE, "+ expected a number, got nil", "(get-in ... [:a :b]) is nil: the value at [:a] is integer 5, not a map"),
    # find: over nothing, or (when the nil can only be its result) nothing satisfied the predicate
    M("(+ (find neg? data/orders) 1)", TE, "+ expected a number, got nil", "(find ...) is nil: no item satisfied the predicate"),
    M("(+ (find pos? []) 1)", TE, "+ expected a number, got nil", "(find ...) is nil: the sequence was empty"),
    M("(+ 1 (:qty (find #(> (:qty %) 5) data/lines)))", TE, "+ expected a number, got nil", "(find ...) is nil: no item satisfied the predicate"),
    M("(let [l (find #(> (:qty %) 5) data/lines)] (* 2 (:qty l)))", TE, "* expected a number, got nil", "(find ...) is nil: no item satisfied the predicate"),
    M("(let [n (find #(> % 5) data/orders)] (inc n))", TE, "inc expected a number, got nil", "(find ...) is nil: no item satisfied the predicate"),
    M("(+ 1 (:qty (find #(= (:qty %) 5) [{:qty 1} {}])))", TE, "+ expected a number, got nil", None),
    M("(+ (find pos? [nil -1]) 1)", TE, "+ expected a number, got nil", None),
    M("(+ (find #(+ % nil) [1]) 1)", TE, "+ expected a number, got nil", None),
    # a nil bound to a local: where the local's value came from
    M("(let [s (:shipping {:price 1 :shipment 2})] (+ s 1))", TE, "+ expected a number, got nil", "(:shipping ...) is nil: the map has no key :shipping; did you mean :shipment? Its keys: :price, :shipment"),
    M("(let [c data/customer n (:nam c)] (upper-case n))", TE, "upper-case expected a string, got nil", "(:nam ...) is nil: the map has no key :nam; did you mean :name? Its keys: :name, :id"),
    M("(let [x (first [])] (inc x))", TE, "inc expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(let [x (first []) y x] (inc y))", TE, "inc expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(let [xs [] x (first xs)] (inc x))", TE, "inc expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(let [x (first [])] (let [y 2] (+ x y)))", TE, "+ expected a number, got nil", "(first ...) is nil: the sequence was empty"),
    M("(let [c (:client data/customer)] (upper-case (:name c)))", TE, "upper-case expected a string, got nil", "(:client ...) is nil: the map has no key :client; its keys: :name, :id"),
    M("(let [v (get-in data/customer [:address :city])] (upper-case v))", TE, "upper-case expected a string, got nil", "(get-in ... [:address :city]) is nil: the map has no key :address; its keys: :name, :id"),
    M("(map (fn [l] (let [p (:price l)] (* p 2))) data/lines)", TE, "* expected a number, got nil", "(:price ...) is nil: the map has no key :price; its keys: :qty, :unit-price"),
    # a nil the program wrote, or a function returned, gets no guess
    M("(+ 1 nil)", TE, "+ expected a number, got nil", None),
    M("(let [x nil] (inc x))", TE, "inc expected a number, got nil", None),
    M("(let [f (fn [] nil) x (f)] (inc x))", TE, "inc expected a number, got nil", None),
    M("(defn g [] nil) (inc (g))", TE, "inc expected a number, got nil", None),
    M("(defn h [x] (inc x)) (let [s (first [])] (h s))", TE, "inc expected a number, got nil", None),
    M("(inc (first [nil 2]))", TE, "inc expected a number, got nil", None),
    M("(let [x (first [])] (let [x 1] (+ x nil)))", TE, "+ expected a number, got nil", None),
    M("(let [f (fn [] {:nme 1}) n (:nme (f))] (+ n nil))", TE, "+ expected a number, got nil", None),
    M("(sort-by :qty [{:qty 1} {}])", TE, "cannot compare nil with integer 1: only numbers, strings, keywords, booleans and vectors are ordered", None),
    # the nil is not the one an argument read: another argument's own error
    M("(+ (:missing {:a 1}) (inc nil))", TE, "inc expected a number, got nil", None),
    # a map whose value was moved out by a later argument is not "itself nil"
    M("(let [o {:a 1}] (+ (:b o) (count o)))", TE, "+ expected a number, got nil", None),
    # --- 5. argument order and threading
    M("(-> data/orders (filter :paid))", TE, "filter expected a function, got vector [1 2 3]", FN_FIRST.format("filter")),
    M("(-> data/orders (map inc))", TE, "map expected a function, got vector [1 2 3]", FN_FIRST.format("map")),
    M("(-> data/orders (remove odd?))", TE, "remove expected a function, got vector [1 2 3]", FN_FIRST.format("remove")),
    M("(get :name data/customer)", TE, "get expected a map, vector, set or nil, got keyword :name", "the map comes first: (get m :k ...); (:k m) also reads a key; in a pipeline use ->, which threads the value first"),
    M("(->> data/customer (get :name))", TE, "get expected a map, vector, set or nil, got keyword :name", "the map comes first: (get m :k ...); (:k m) also reads a key; in a pipeline use ->, which threads the value first"),
    M("(->> data/customer (assoc :vip true))", TE, "assoc expected a map, vector or nil, got keyword :vip", "the map comes first: (assoc m :k ...); (:k m) also reads a key; in a pipeline use ->, which threads the value first"),
    M('(join ["a" "b"] ", ")', TE, 'join expected a string, got vector ["a" "b"]', 'the separator comes first: (join ", " coll)'),
    M('(+ "a" "b")', TE, '+ expected a number, got string "a"', ARITH),
    M('(+ 1 "2")', TE, '+ expected a number, got string "2"', "convert text first with (parse-long s) or (parse-double s)"),
    M('(concat "a" "b")', TE, 'concat expected vectors, sets or maps, got string "a"', "to join text use (str a b)"),
    # --- 6. analysis and parse hints
    M("(defn f (x) x)", AE, "defn f: parameters go in a vector, not a list", "(defn f [x] body)"),
    M("(defn add (a b) (+ a b))", AE, "defn add: parameters go in a vector, not a list", "(defn add [a b] body)"),
    M("(fn (x) x)", AE, "fn parameters go in a vector, not a list", "(fn [x] body)"),
    M("(% 5 2)", AE, "% is only meaningful inside #( ... )", "for a remainder use (mod a b); to name parameters use (fn [x] ...)"),
    M("(doseq [k v data/customer] (println k))", AE, "doseq bindings need an even number of forms (name value pairs), got 3", "destructure each entry into two names: (doseq [[k v] coll] body)"),
    M("(let [k v data/customer] k)", AE, "let bindings need an even number of forms (name value pairs), got 3", "destructure each entry into two names: (let [[k v] coll] body)"),
    M("(def [a b] [1 2])", AE, "def names one value; it cannot destructure", "def the whole value, or destructure with let: (let [[a b] v] body)"),
    M('(re-find (re-pattern "\\d+") "a1")', PE, "unsupported escape \\d in string", 'in a string a regex backslash is doubled: "\\\\d"'),
    M('(re-find (re-pattern "\\w") "a")', PE, "unsupported escape \\w in string", 'in a string a regex backslash is doubled: "\\\\w"'),
    # --- 7. arity errors that hide the cause
    M("(map (fn [k v] k) data/customer)", AR, "fn expects 2 argument(s), got 1", PER_ELEMENT.format("map")),
    M("(filter (fn [k v] v) data/customer)", AR, "fn expects 2 argument(s), got 1", PER_ELEMENT.format("filter")),
    M("(map-indexed (fn [x] x) [1])", AR, "fn expects 1 argument(s), got 2", "map-indexed calls its function with two arguments, the index and the element: (fn [i x] ...)"),
    M("(reduce (fn [x] x) 0 [1])", AR, "fn expects 1 argument(s), got 2", "reduce calls its function with two arguments, the accumulator and the element: (fn [acc x] ...); over a map each element is a [k v] entry: (fn [acc [k v]] ...)"),
    M("(sort (fn [a] a) [2 1])", AR, "fn expects 1 argument(s), got 2", "a comparator takes two arguments: (fn [a b] ...)"),
    M("(select-keys data/customer :name :id)", AR, "select-keys expects 2 argument(s), got 3", "the keys go in one vector: (select-keys m [:a :b])"),
    M("(get-in data/customer :a :b :c)", AR, "get-in expects 2 or 3 argument(s), got 4", "the path goes in one vector: (get-in m [:a :b])"),
    # an arity mistake inside the function is that function's own error, not map's
    M("(map (fn [x] (inc x 1)) [1])", AR, "inc expects 1 argument(s), got 2", None),
    # --- 8. data/ and tool/ confusion
    M('(data/search "x")', "not_callable", "nil is not a function and cannot be called", "data/search is input data, and there is none by that name; search is a tool: (tool/search ...)"),
    M("(data/nothing 1)", "not_callable", "nil is not a function and cannot be called", "data/nothing is nil: there is no such input; inputs: data/orders, data/customer, data/lines"),
    M("((:f {:g 1}) 2)", "not_callable", "nil is not a function and cannot be called", "(:f ...) is nil: the map has no key :f; its keys: :g"),
    # --- 9. a tool called with arguments it does not take: what it takes
    M('(tool/lookup {:id 1 :knd "a"})', "tool_error", "Tool 'lookup' failed: lookup has no parameter :knd", "lookup needs :id, :kind; did you mean :kind?"),
    M('(tool/lookup {:ID 1 :kind "a" :limit 3})', "tool_error", "Tool 'lookup' failed: lookup has no parameter :ID, :limit", "lookup needs :id, :kind"),
    M("(tool/lookup {:id 1})", "tool_error", "Tool 'lookup' failed: lookup is missing :kind", "lookup needs :id, :kind"),
    M('(tool/page {:query "x" :limt 3})', "tool_error", "Tool 'page' failed: page has no parameter :limt", "page needs :query and may take :limit; did you mean :limit?"),
    M('(tool/page "a" 1 2)', "tool_error", "Tool 'page' failed: page got 3 argument(s)", "page needs :query and may take :limit; call it with a map: (tool/page {:query ...})"),
    M("(tool/ping 1)", "tool_error", "Tool 'ping' failed: ping got 1 argument(s)", "ping takes no arguments: (tool/ping)"),
    # a one-parameter tool whose parameter is not among the keys gets the whole map (§8.2)
    M('(tool/search {:q "x"})', None, "", None),
    # --- 9. destructuring, dates, where, clocks
    M("(let [{:keys [a]} [1 2]] a)", "destructure_error", "cannot destructure vector [1 2] with a map pattern; it needs a map or nil", "a vector destructures by position with [a b]; to take each map of a vector use map or doseq"),
    M("(let [[a b] {:a 1}] a)", "destructure_error", "cannot destructure map {:a 1} with a vector pattern; it needs a vector or nil", "a map destructures with {:keys [a b]}; a [k v] pattern takes one entry, as in (doseq [[k v] m] ...)"),
    M("(let [[a b] 5] a)", "destructure_error", "cannot destructure integer 5 with a vector pattern; it needs a vector or nil", "only vectors destructure with [a b]; bind the value to a plain name"),
    M("(let [{:keys [a]} 5] a)", "destructure_error", "cannot destructure integer 5 with a map pattern; it needs a map or nil", "only maps destructure with {:keys [...]}; bind the value to a plain name"),
    M("(< (java.util.Date. 0) (java.util.Date. 1))", TE, '< expected numbers, got date-time "1970-01-01T00:00:00Z"', "dates compare with (compare a b), or as numbers: (< (.getTime a) (.getTime b))"),
    M("(filter (where :a > 1 :b < 2) [])", AE, "where takes one condition: a field, an operator and a value", "combine conditions with all-of or any-of: (all-of (where :a > 1) (where :b < 2))"),
    M("(filter (where :a > 1 and :b < 2) [])", AE, "where takes one condition: a field, an operator and a value", "combine conditions with all-of or any-of: (all-of (where :a > 1) (where :b < 2))"),
    M("(LocalDate/now)", AE, "now is not available. see the function list in the system prompt", "now is not part of PTC-Lisp; the current time is (System/currentTimeMillis); a date comes from (java.time.LocalDate/parse s)"),
    M("(count data)", UV, "data is not defined", "input data is reached by key, as data/key: data/orders, data/customer, data/lines"),
    M('(get data "orders")', UV, "data is not defined", "input data is reached by key, as data/key: data/orders, data/customer, data/lines"),
    M("(count data.orders)", UV, "data.orders is not defined", "write data/orders: data/ is a namespace, not an object"),
    M("(tool.search 1)", UV, "tool.search is not defined", "tools are called as (tool/search args)"),
    M("(tool 1)", UV, "tool is not defined", "tools are called as (tool/name args): tool/search, tool/ping, tool/lookup, tool/page"),
]
# fmt: on

DATA = {
    "orders": [1, 2, 3],
    "customer": {"name": "Ada", "id": 7},
    "lines": [{"qty": 2, "unit-price": 3.5}],
}


def _search(query: object = None) -> list[object]:
    return []


def _ping() -> int:
    return 1


def _lookup(id: object, kind: object) -> None:
    return None


def _page(query: object, limit: int = 10) -> list[object]:
    return []


TOOLS = {"search": _search, "ping": _ping, "lookup": _lookup, "page": _page}


def test_nil_input_without_any_data() -> None:
    e = ptc.run("(+ data/missing 1)").error
    assert (e.type, e.message) == (TE, "+ expected a number, got nil")
    assert e.hint == "data/missing is nil: this run has no input data"


@pytest.mark.parametrize("case", MISTAKES, ids=[m.program for m in MISTAKES])
def test_mistake(case: Mistake) -> None:
    r = ptc.run(case.program, data=DATA, tools=TOOLS)
    if case.type is None:
        assert r.ok, r.error
        return
    assert not r.ok, f"ran: {r.value!r}"
    e = r.error
    assert (e.type, e.message) == (case.type, case.message)
    assert e.hint == case.hint


def _called_names(text: str) -> list[str]:
    """Names a hint shows in call position; single letters and ``...`` are placeholders."""
    names = re.findall(r"\(([^\s()\[\]{}\"#:]+)", text)
    return [n for n in names if len(n) > 1 and n != "..." and not n[0].isdigit()]


def test_hints_only_name_what_the_language_has() -> None:
    known = set(_core.builtin_names()) | set(_core.special_forms())
    bad = []
    for case in MISTAKES:
        for name in _called_names(case.hint or ""):
            if name not in known and not name.startswith("tool/"):
                bad.append((case.program, name))
    assert not bad


def test_name_check_sees_foreign_names() -> None:
    assert _called_names("use (conj v x) or (append v x); #(f %)") == ["conj", "append"]


def test_the_table_is_large_and_unique() -> None:
    programs = [m.program for m in MISTAKES]
    assert len(programs) == len(set(programs))
    assert len(programs) >= 200


def test_every_hint_in_the_source_names_what_the_language_has() -> None:
    """Hints written anywhere in the core, not only those the table triggers."""
    root = Path(__file__).resolve().parents[2] / "rust"
    literal = re.compile(r'with_hint\(\s*(?:format!\(\s*)?"((?:[^"\\]|\\.)*)"')
    known = set(_core.builtin_names()) | set(_core.special_forms())
    bad = []
    seen = 0
    for path in sorted(root.rglob("*.rs")):
        if "tests" in path.parts:
            continue
        for text in literal.findall(path.read_text()):
            seen += 1
            hint = re.sub(r"\{[^{}]*\}", "x", text.replace('\\"', '"'))
            for name in _called_names(hint):
                if name not in known and not name.startswith("tool/"):
                    bad.append((path.name, name, text))
    assert seen > 50, "the scan found too few hints to be checking anything"
    assert not bad, bad

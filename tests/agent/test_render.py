"""SingleUserCoalesced and FullHistory over hand-made turns: exact rendered text."""

from __future__ import annotations

from agent_helpers import DATA, MISSION, SYSTEM, TOOLS, call, func, opts, turn, value
from ptc.compression import DataEntry, FullHistory, SingleUserCoalesced, ToolSpec
from ptc.compression._format import FINAL_TURN

S = SingleUserCoalesced()

TOOL_SECTION = (
    ";; === tool/ ===\n"
    '(tool/search-reviews category)  ; (category :string) -> :string - "Search product reviews by'
    ' category"\n'
    '(tool/get-inventory)            ; () -> :string - "Warehouse inventory report"'
)
DATA_SECTION = (
    ";; === data/ ===\n"
    'data/products                   ; list[7], sample: {:name "Laptop", :price 1200, :category'
    ' "Electronics"}'
)
HEAD = f"{MISSION}\n\n{TOOL_SECTION}\n\n{DATA_SECTION}"

REVIEWS_OUT = (
    "Reviews: Customer Review Summary for Electronics:\n"
    "- Laptop: Average rating 4.5/5. - Mouse: Average rating 3.2/5..."
)
INVENTORY_OUT = (
    "Inventory: Warehouse Inventory Report:\nLaptop - 23 units in stock. Mouse - OUT OF STOCK..."
)
ELECTRONICS = value(
    "electronics", "list[4]", '{:name "Laptop", :price 1200, :category "Electronics"}'
)
REVIEWS = value("reviews", "string", '"Customer Review Summary for Elec..."')
INVENTORY = value("inventory", "string", '"Warehouse Inventory Report (as..."')
SEED_PROGRAM = """(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))
(def reviews (tool/search-reviews "Electronics"))
(def inventory (tool/get-inventory))
(println "Reviews:" reviews)
(println "Inventory:" inventory)"""


def seed_turn1():
    return turn(
        1,
        SEED_PROGRAM,
        prints=[REVIEWS_OUT, INVENTORY_OUT],
        calls=[call("search-reviews", '"Electronics"'), call("get-inventory")],
        memory=[ELECTRONICS, REVIEWS, INVENTORY],
        defined=["electronics", "reviews", "inventory"],
    )


def render(turns, **extra):
    memory = turns[-1].memory if turns else ()
    return S.to_messages(turns, memory, opts(**extra))


def user(turns, **extra):
    messages, _ = render(turns, **extra)
    return messages[1]["content"]


# --- the seed's example ------------------------------------------------------------------


def test_first_turn_message():
    """NS-010, NS-008, MSG-002, MSG-003: turn 1 has mission, tool/ and data/, no user/ section."""
    messages, stats = render([])
    assert messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{HEAD}\n\nTurns left: 5"},
    ]
    assert stats.turns_compressed == 0


def test_seed_example_after_compression():
    """MSG-001, CMP-001, SAM-002, FMT-011, FMT-012, FMT-014, FMT-015, TRN-009: turn 1 with
    println becomes the single USER message: no samples, output shown as printed."""
    messages, stats = render([seed_turn1()])
    assert len(messages) == 2 and [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == (
        f"{HEAD}\n\n"
        ";; === user/ (your prelude) ===\n"
        "electronics                     ; = list[4]\n"
        "reviews                         ; = string\n"
        "inventory                       ; = string\n\n"
        ";; Tool calls made:\n"
        ';   search-reviews("Electronics")\n'
        ";   get-inventory()\n\n"
        ";; Output:\n"
        f"{REVIEWS_OUT}\n{INVENTORY_OUT}\n\n"
        "Turns left: 4"
    )
    assert stats.turns_compressed == 1
    assert (stats.tool_calls_shown, stats.printlns_shown) == (2, 2)


def test_exploration_turn_shows_samples():
    """SAM-001, SAM-003, FMT-009, TC-005: no println -> values with Clojure-syntax samples; the
    tool results reach the LLM as the samples of the values they were stored in."""
    t1 = turn(
        1,
        '(def reviews (tool/search-reviews "Electronics"))\n(def inventory (tool/get-inventory))',
        calls=[call("search-reviews", '"Electronics"', "Customer..."), call("get-inventory")],
        memory=[REVIEWS, INVENTORY],
        defined=["reviews", "inventory"],
    )
    text = user([t1])
    assert (
        ";; === user/ (your prelude) ===\n"
        "reviews                         ; = string, "
        'sample: "Customer Review Summary for Elec..."\n'
        'inventory                       ; = string, sample: "Warehouse Inventory Report (as..."\n'
    ) in text
    assert ";; Output:" not in text


def test_tool_results_not_listed():
    """TC-004, TC-003: tool call lines show name and (pre-truncated) args, never results."""
    t1 = turn(1, calls=[call("search-reviews", '"Electronics"', result="SECRET RESULT")])
    text = user([t1])
    assert ';   search-reviews("Electronics")' in text
    assert "SECRET RESULT" not in text


def test_side_effect_tools_returning_nil():
    """FMT-012, TC-001: nil-returning calls are listed, parens always shown (AMB-007)."""
    calls = [
        call("make-call", '{:to "Alice", :message "Meeting at 3pm"}'),
        call("make-call", '{:to "Bob", :message "Bring documents"}'),
    ]
    t1 = turn(1, calls=calls)
    t2 = turn(2, calls=[call("send-email", '{:to "team@example.com", :subject "Update"}')])
    t3 = turn(3, calls=[call("list-ports")])
    text = user([t1, t2, t3])
    assert (
        ";; Tool calls made:\n"
        ';   make-call({:to "Alice", :message "Meeting at 3pm"})\n'
        ';   make-call({:to "Bob", :message "Bring documents"})\n'
        ';   send-email({:to "team@example.com", :subject "Update"})\n'
        ";   list-ports()\n"
    ) in text


def test_no_tool_calls_line():
    """FMT-013: after a turn without any tool call the section says so; not on turn 1."""
    t1 = turn(1, "(def x 1)", memory=[value("x", "integer", "1")], defined=["x"])
    assert ";; No tool calls made" in user([t1])
    assert ";; No tool calls made" not in user([])


def test_no_tool_calls_line_omitted_without_tools():
    """FMT-013 only when tools exist: an agent without tools never gets "No tool calls made"."""
    t1 = turn(1, "(def x 1)", memory=[value("x", "integer", "1")], defined=["x"])
    messages, _ = S.to_messages([t1], t1.memory, opts(tools=()))
    text = messages[1]["content"]
    assert ";; No tool calls made" not in text
    assert text == (
        f"{MISSION}\n\n{DATA_SECTION}\n\n"
        ";; === user/ (your prelude) ===\n"
        "x                               ; = integer, sample: 1\n\n"
        "Turns left: 4"
    )


def test_section_order_and_headers():
    """FMT-001, FMT-002, FMT-003, FMT-016: tool/ -> data/ -> user/ -> Tool calls -> Output."""
    text = user([seed_turn1()])
    markers = [
        ";; === tool/ ===",
        ";; === data/ ===",
        ";; === user/ (your prelude) ===",
        ";; Tool calls made:",
        ";; Output:",
        "Turns left: 4",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)


def test_empty_sections_omitted():
    """FMT-016: no tools, no data, no definitions -> only mission and turns left."""
    msgs, _ = S.to_messages([], (), {"mission": "M", "system_prompt": "S", "max_turns": 3})
    assert msgs[1]["content"] == "M\n\nTurns left: 3"


def test_tool_entry_format():
    """FMT-004: ``(tool/name params)  ; signature`` (plus the description when known)."""
    tools = (ToolSpec("fetch", ("id", "opts"), "(id :int, opts :map?) -> :map"),)
    msgs, _ = S.to_messages([], (), {"mission": "M", "tools": tools})
    assert "(tool/fetch id opts)            ; (id :int, opts :map?) -> :map" in msgs[1]["content"]


def test_data_entry_format():
    """FMT-005: ``data/name  ; type, sample: s``; without a sample only the type."""
    data = (DataEntry("limit", "integer", "10"), DataEntry("_secret", "map[2]"))
    msgs, _ = S.to_messages([], (), {"mission": "M", "data": data})
    assert msgs[1]["content"] == (
        "M\n\n;; === data/ ===\n"
        "data/limit                      ; integer, sample: 10\n"
        "data/_secret                    ; map[2]\n\n"
        "Turns left: 5"
    )


def test_user_prelude_function_formats():
    """FMT-006, FMT-007, FMT-008: functions with docstring + return type, docstring, minimal."""
    memory = [
        func("score", ["p"], "Rating times stock", "float"),
        func("in-stock?", ["p"], "True when units > 0"),
        func("helper", ["x", "&", "more"]),
        func("called", ["a", "b"], None, "integer"),
    ]
    t1 = turn(1, memory=memory, defined=["score", "in-stock?", "helper", "called"])
    assert (
        ";; === user/ (your prelude) ===\n"
        '(score [p])                     ; "Rating times stock" -> float\n'
        '(in-stock? [p])                 ; "True when units > 0"\n'
        "(helper [x & more])\n"
        "(called [a b])                  ; -> integer\n"
    ) in user([t1])


def test_value_without_sample():
    """FMT-010, DEF-003, DEF-004: nil and empty collections have no sample."""
    memory = [value("x", "nil"), value("items", "list[0]"), value("m", "map[0]")]
    t1 = turn(1, memory=memory, defined=["x", "items", "m"])
    assert (
        "x                               ; = nil\n"
        "items                           ; = list[0]\n"
        "m                               ; = map[0]\n"
    ) in user([t1])


def test_docstring_sanitized():
    """DEF-007, DEF-005: docstrings of def and defn are shown with ';' removed entirely."""
    memory = [
        value("users", "list[5]", '{:name "Alice"}', doc="Active users; from API"),
        func("f", ["x"], "Doubles x; returns int"),
    ]
    text = user([turn(1, memory=memory, defined=["users", "f"])])
    assert 'users                           ; "Active users from API" = list[5], sample: ' in text
    assert '(f [x])                         ; "Doubles x returns int"' in text


def test_redefinition_latest_wins():
    """DEF-001, DEF-002, DEF-008, DEF-009: the memory snapshot (definition order, latest value)
    is what is shown; definitions accumulate across turns."""
    t1 = turn(
        1, memory=[value("x", "integer", "1"), value("y", "integer", "5")], defined=["x", "y"]
    )
    t2 = turn(
        2,
        memory=[value("x", "string", '"two"'), value("y", "integer", "5"), value("z", "nil")],
        defined=["x", "z"],
    )
    text = user([t1, t2])
    assert (
        ";; === user/ (your prelude) ===\n"
        'x                               ; = string, sample: "two"\n'
        "y                               ; = integer, sample: 5\n"
        "z                               ; = nil\n"
    ) in text
    assert "sample: 1" not in text


def test_samples_follow_the_defining_turn():
    """SAM-001/002, FMT-017: y was defined in a printing turn (no sample), x in an exploring one;
    both are consolidated into one user/ section and one Output section."""
    t1 = turn(1, memory=[value("x", "integer", "1")], defined=["x"])
    t2 = turn(
        2,
        prints=["y is 2"],
        memory=[value("x", "integer", "1"), value("y", "integer", "2")],
        defined=["y"],
    )
    text = user([t1, t2])
    assert "x                               ; = integer, sample: 1\n" in text
    assert "y                               ; = integer\n" in text
    assert text.count(";; Output:") == 1 and text.count(";; === user/") == 1


# --- limits --------------------------------------------------------------------------------


def test_println_limit_fifo():
    """TRN-006, TRN-010, API-004: the limit counts println calls (not lines); oldest dropped."""
    turns = [turn(i, prints=[f"call {i}\nsecond line"]) for i in range(1, 5)]
    messages, stats = render(turns, max_turns=10, println_limit=2)
    text = messages[1]["content"]
    assert ";; Output:\ncall 3\nsecond line\ncall 4\nsecond line\n\nTurns left: 6" in text
    assert "call 2" not in text
    assert (stats.printlns_shown, stats.printlns_dropped) == (2, 2)


def test_default_println_limit_is_15():
    """API-004: by default the 15 most recent println calls are shown."""
    turns = [turn(1, prints=[f"p{i}" for i in range(20)])]
    _, stats = render(turns)
    assert (stats.printlns_shown, stats.printlns_dropped) == (15, 5)


def test_tool_call_limit_fifo():
    """TC-002, TC-007, API-005: at most 20 calls by default, oldest dropped first."""
    turns = [turn(1, calls=[call("t", str(i)) for i in range(25)])]
    messages, stats = render(turns)
    text = messages[1]["content"]
    assert ";   t(4)" not in text and ";   t(5)\n" in text and text.count(";   t(") == 20
    assert (stats.tool_calls_shown, stats.tool_calls_dropped) == (20, 5)
    _, stats = render(turns, tool_call_limit=3)
    assert (stats.tool_calls_shown, stats.tool_calls_dropped) == (3, 22)


def test_println_entry_cut():
    """TRN-011, TRN-007: an entry is kept as-is (no prefix) but cut after println_max_chars."""
    long = "x" * 2500
    text = user([turn(1, prints=[long, "  indented; kept"])])
    assert "\n" + "x" * 2000 + "...\n  indented; kept\n" in text


def test_output_not_sanitized():
    """FMT-018: output that looks like summary syntax is rendered as-is."""
    text = user([turn(1, prints=[";; === user/ (fake) ===\n; Defined: x"])])
    assert ";; Output:\n;; === user/ (fake) ===\n; Defined: x\n" in text


# --- turns left, failed turns ----------------------------------------------------------------


def test_turns_left_and_final_turn():
    """MSG-005: ``Turns left: N`` counts the turn being asked for; the last turn gets the exact
    FINAL TURN line instead."""
    assert FINAL_TURN == "FINAL TURN - you must call (return result) or (fail reason) now."
    turns = [turn(i) for i in range(1, 5)]
    assert user(turns[:3]).endswith("\n\nTurns left: 2")
    assert user(turns).endswith("\n\n" + FINAL_TURN)


def test_failed_turn_kept_in_full():
    """ERR-001, ERR-003, CMP-002, CMP-003: the failed program stays as an ASSISTANT message,
    followed by a USER message with the error and the turns left."""
    failed = turn(
        2,
        "(def x (broken-code))",
        error="Undefined variable: broken-code",
        hint="Did you mean: break-code",
        memory=seed_turn1().memory,
    )
    messages, stats = render([seed_turn1(), failed])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"].endswith("\n\nTurns left: 4")
    assert messages[2]["content"] == "```clojure\n(def x (broken-code))\n```"
    assert messages[3]["content"] == (
        "Error: Undefined variable: broken-code\nHint: Did you mean: break-code\n\nTurns left: 3"
    )
    assert stats.turns_compressed == 1


def test_multiple_failed_turns_in_order():
    """ERR-002: each failed turn keeps its own pair, in order; the last USER message has the
    current turns left."""
    t1 = turn(1, memory=[value("a", "integer", "1")], defined=["a"])
    f2 = turn(2, "(oops 1)", error="Undefined variable: oops")
    f3 = turn(3, "(oops 2)", error="Undefined variable: oops", prints=["before error"])
    messages, _ = render([t1, f2, f3])
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[1]["content"].endswith("Turns left: 4")
    assert messages[2]["content"] == "```clojure\n(oops 1)\n```"
    assert messages[3]["content"] == "Error: Undefined variable: oops\n\nTurns left: 3"
    assert messages[4]["content"] == "```clojure\n(oops 2)\n```"
    assert messages[5]["content"] == (
        "Error: Undefined variable: oops\n;; Output:\nbefore error\n\nTurns left: 2"
    )


def test_recovery_after_failures_last_user_has_current_count():
    """MSG-005, ERR-001: after failed turns then a success, the success is coalesced and the
    last USER message still ends with the current turns-left line."""
    t1 = turn(1)
    f2 = turn(2, "(oops)", error="Undefined variable: oops")
    t3 = turn(3, "(def y 2)", memory=[value("y", "integer", "2")], defined=["y"])
    messages, stats = render([t1, f2, t3])
    assert "y                               ; = integer, sample: 2" in messages[1]["content"]
    assert messages[1]["content"].endswith("Turns left: 4")
    assert messages[-1]["content"].endswith("Turns left: 2")
    assert stats.turns_compressed == 2


def test_failed_turn_tool_calls_still_listed():
    """TC-001: tool calls of a failed turn happened (side effects) and are listed too."""
    t1 = turn(1, calls=[call("a")])
    f2 = turn(2, calls=[call("send-email", '"bob"')], error="boom", error_type="tool_error")
    text = user([t1, f2])
    assert ';; Tool calls made:\n;   a()\n;   send-email("bob")' in text


def test_no_program_reply_is_replayed_raw():
    """ERR-003: a reply without a program is shown back as written, followed by the error."""
    bad = turn(1, "", error="No PTC-Lisp program found", error_type="no_program")
    bad = type(bad)(**{**bad.__dict__, "program": None, "response": "I think the answer is 4."})
    messages, _ = render([bad])
    assert messages[2] == {"role": "assistant", "content": "I think the answer is 4."}
    assert messages[3]["content"].startswith("Error: No PTC-Lisp program found")


def test_mission_first_and_never_removed():
    """MSG-003, MSG-004, MSG-007: the mission opens the USER message on every turn, followed by
    a blank line, however many turns and failures there are."""
    turns = [turn(1), turn(2, error="e"), turn(3), turn(4, error="e")]
    for n in range(len(turns) + 1):
        messages, _ = render(turns[:n])
        assert messages[1]["content"].startswith(MISSION + "\n\n")


def test_system_prompt_unchanged():
    """MSG-006: the SYSTEM message is the same on every turn."""
    turns = [seed_turn1(), turn(2, error="e"), turn(3)]
    systems = {render(turns[:n])[0][0]["content"] for n in range(4)}
    assert systems == {SYSTEM}


def test_tool_and_data_sections_byte_identical():
    """NS-012: the tool/ and data/ part of the prompt is a stable, cacheable prefix."""
    turns = [seed_turn1(), turn(2, error="e"), turn(3, calls=[call("x")])]
    prefixes = set()
    for n in range(4):
        content = user(turns[:n])
        prefixes.add(content[: content.index(DATA_SECTION) + len(DATA_SECTION)])
    assert prefixes == {HEAD}


def test_pure_render_same_input_same_output():
    """ARC-004: rendering twice gives identical messages and stats; inputs are not modified."""
    turns = (seed_turn1(), turn(2, error="e"), turn(3))
    o = opts()
    before = repr(turns), repr(o)
    first = S.to_messages(turns, turns[-1].memory, o)
    second = SingleUserCoalesced().to_messages(turns, turns[-1].memory, o)
    assert first == second
    assert (repr(turns), repr(o)) == before


def test_full_history_uncompressed():
    """API-003: without compression every program and its feedback are sent in order."""
    failed = turn(2, "(oops)", error="Undefined variable: oops")
    messages, stats = FullHistory().to_messages([seed_turn1(), failed], (), opts())
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[1]["content"] == f"{HEAD}\n\nTurns left: 5"
    assert messages[2]["content"] == f"```clojure\n{SEED_PROGRAM}\n```"
    assert messages[3]["content"] == (
        f";; Output:\n{REVIEWS_OUT}\n{INVENTORY_OUT}\n;; Result: 3\n\nTurns left: 4"
    )
    assert messages[5]["content"] == "Error: Undefined variable: oops\n\nTurns left: 3"
    assert stats.strategy == "full_history" and stats.turns_compressed == 0


def test_tools_and_data_constants_are_used():
    assert TOOLS[0].name == "search-reviews" and DATA[0].name == "products"

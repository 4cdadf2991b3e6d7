"""End-to-end scenarios: a scripted LLM drives SubAgent over the real PTC-Lisp core."""

from __future__ import annotations

import dataclasses
import json

import ptc
import pytest
from agent_helpers import PRODUCTS, fence
from ptc.agent import SubAgent
from ptc.compression import CompressionStats, SingleUserCoalesced
from ptc.compression._format import FINAL_TURN
from ptc.llm import AsyncScriptedLLM, RetryPolicy, ScriptedLLM, TransientLLMError
from ptc.step import Step

MISSION = "Find well-reviewed products in stock"
REVIEWS = (
    "Customer Review Summary for Electronics:\n- Laptop: Average rating 4.5/5. "
    "- Mouse: Average rating 3.2/5. - Monitor: 4.7/5. - Keyboard: 4.1/5."
)
INVENTORY = (
    "Warehouse Inventory Report (as of today):\nLaptop - 23 units in stock. Mouse - OUT OF "
    "STOCK. Monitor - 5 units. Keyboard - 12 units."
)
ELECTRONICS = '(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))'
SEED_PROGRAM = (
    ELECTRONICS
    + """
(def reviews (tool/search-reviews "Electronics"))
(def inventory (tool/get-inventory))
(println "Reviews:" reviews)
(println "Inventory:" inventory)"""
)
EXPLORE_PROGRAM = (
    ELECTRONICS
    + """\n(def reviews (tool/search-reviews "Electronics"))
(def inventory (tool/get-inventory))"""
)
FINISH_PROGRAM = """(def well-reviewed ["Laptop" "Monitor" "Keyboard"])
(return (filter (fn [p] (or (= (:name p) "Laptop") (= (:name p) "Monitor"))) electronics))"""

HEAD = (
    f"{MISSION}\n\n"
    ";; === tool/ ===\n"
    '(tool/search-reviews category)  ; (category :string) -> :string - "Search product reviews by'
    ' category."\n'
    '(tool/get-inventory)            ; () -> :string - "Current warehouse inventory report."\n\n'
    ";; === data/ ===\n"
    'data/products                   ; list[7], sample: {:name "Laptop", :price 1200, ...}'
)


def search_reviews(category: str) -> str:
    """Search product reviews by category."""
    return REVIEWS


def get_inventory() -> str:
    """Current warehouse inventory report."""
    return INVENTORY


def seed_agent(llm, **kw):
    kw.setdefault("compression", True)
    return SubAgent(
        MISSION,
        llm=llm,
        tools=[search_reviews, get_inventory],
        data={"products": PRODUCTS},
        **kw,
    )


# --- the seed example ----------------------------------------------------------------------


def test_seed_example_compressed():
    """MSG-002, CMP-001, SAM-002, FMT-004, FMT-005, FMT-011, FMT-014, NS-008, NS-011: the
    reviews/inventory example; turn 2 sees one USER message with the summary of turn 1."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence(FINISH_PROGRAM)])
    step = seed_agent(llm).run()
    assert step.ok, step.error
    assert [p["name"] for p in step.value] == ["Laptop", "Monitor"]
    assert llm.calls[0][1]["content"] == f"{HEAD}\n\nTurns left: 5"
    assert [m["role"] for m in llm.calls[1]] == ["system", "user"]
    assert llm.calls[1][1]["content"] == (
        f"{HEAD}\n\n"
        ";; === user/ (your prelude) ===\n"
        "electronics                     ; = list[4]\n"
        "reviews                         ; = string\n"
        "inventory                       ; = string\n\n"
        ";; Tool calls made:\n"
        ';   search-reviews("Electronics")\n'
        ";   get-inventory()\n\n"
        ";; Output:\n"
        f"Reviews: {REVIEWS}\n"
        f"Inventory: {INVENTORY}\n\n"
        "Turns left: 4"
    )
    assert list(step.messages) == llm.calls


def test_seed_example_uncompressed():
    """API-003: ``compression=False`` sends every program and its feedback."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence(FINISH_PROGRAM)])
    step = seed_agent(llm, compression=False).run()
    assert step.ok
    second = llm.calls[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[1]["content"] == f"{HEAD}\n\nTurns left: 5"
    assert second[2]["content"] == f"```clojure\n{SEED_PROGRAM}\n```"
    assert second[3]["content"] == (
        f";; Output:\nReviews: {REVIEWS}\nInventory: {INVENTORY}\n;; Result: nil\n\nTurns left: 4"
    )


def test_exploration_turn_shows_samples():
    """SAM-001, TRN-002, TRN-005, TC-005: without println, values carry samples cut at 80
    characters with ``...``; list samples show the first element."""
    llm = ScriptedLLM([fence(EXPLORE_PROGRAM), fence(FINISH_PROGRAM)])
    step = seed_agent(llm).run()
    assert step.ok
    text = llm.calls[1][1]["content"]
    reviews_sample = ptc.to_clojure(REVIEWS, 3, 80)[0]
    inventory_sample = ptc.to_clojure(INVENTORY, 3, 80)[0]
    assert reviews_sample == '"' + REVIEWS[:80].replace("\n", "\\n") + '..."'
    assert (
        ";; === user/ (your prelude) ===\n"
        'electronics                     ; = list[4], sample: {:name "Laptop", :price 1200, ...}\n'
        f"reviews                         ; = string, sample: {reviews_sample}\n"
        f"inventory                       ; = string, sample: {inventory_sample}\n"
    ) in text
    assert ";; Output:" not in text


# --- definitions, types, truncation ----------------------------------------------------------


def test_type_vocabulary_to():
    """TYP-001, TYP-002, TYP-003, TYP-004, TYP-005, TYP-006, TYP-007, TYP-008, TYP-009, TYP-010,
    TYP-011, TYP-012, DEF-003, DEF-004: type labels and samples of every kind of value."""
    program = """(def a [])
(def b [1 2 3])
(def c {})
(def d {:a 1})
(def e "hello")
(def f 42)
(def g 3.14)
(def h true)
(def i :active)
(def j nil)
(defn k [x] x)
(def l #{1 2 3})"""
    llm = ScriptedLLM([fence(program), fence("(return 1)")])
    step = SubAgent("types", llm=llm, compression=True).run()
    assert step.ok, step.error
    assert (
        ";; === user/ (your prelude) ===\n"
        "a                               ; = list[0]\n"
        "b                               ; = list[3], sample: 1\n"
        "c                               ; = map[0]\n"
        "d                               ; = map[1], sample: {:a 1}\n"
        'e                               ; = string, sample: "hello"\n'
        "f                               ; = integer, sample: 42\n"
        "g                               ; = float, sample: 3.14\n"
        "h                               ; = boolean, sample: true\n"
        "i                               ; = keyword, sample: :active\n"
        "j                               ; = nil\n"
        "(k [x])\n"
        "l                               ; = set[3], sample: 1\n"
    ) in llm.calls[1][1]["content"]
    k = next(m for m in step.turns[0].memory if m.name == "k")
    assert k.kind == "function" and k.type == "#fn[x]"


def test_redefinitions_and_docstrings():
    """DEF-001, DEF-002, DEF-005, DEF-006, DEF-007, DEF-008, DEF-009, FMT-006, FMT-007, NS-003:
    latest value wins, order of first definition, docstrings captured when run, ';' removed,
    return type shown once the function was called."""
    t1 = (
        '(def x 1)\n(def x 2)\n(def y "Totals; by region" {:n 3})\n'
        '(defn twice "Doubles; n" [n] (* 2 n))'
    )
    t2 = '(def x "two")\n(twice 4)'
    llm = ScriptedLLM([fence(t1), fence(t2), fence("(return x)")])
    step = SubAgent("defs", llm=llm, compression=True).run()
    assert step.ok and step.value == "two"
    after1 = llm.calls[1][1]["content"]
    assert "x                               ; = integer, sample: 2\n" in after1
    assert '(twice [n])                     ; "Doubles n"\n' in after1
    after2 = llm.calls[2][1]["content"]
    assert (
        ";; === user/ (your prelude) ===\n"
        'x                               ; = string, sample: "two"\n'
        'y                               ; "Totals by region" = map[1], sample: {:n 3}\n'
        '(twice [n])                     ; "Doubles n" -> integer\n'
    ) in after2
    assert step.turns[0].defined[-1] == "twice"


def test_truncation_of_samples_and_args():
    """TRN-001, TRN-003, TRN-004: samples and tool-call args go through the core's to_clojure
    (args at 3/60); truncated collections say how many items there are."""
    long_arg = "q" * 100

    def echo(text: str) -> str:
        return text

    program = f'(def r (tool/echo "{long_arg}"))\n(def m {{:items [1 2 3 4 5]}})'
    llm = ScriptedLLM([fence(program), fence("(return 1)")])
    step = SubAgent("trunc", llm=llm, tools=[echo], compression=True).run()
    assert step.ok
    text = llm.calls[1][1]["content"]
    assert f';   echo("{"q" * 60}...")' in text
    assert "sample: {:items [1 2 3 ...] (5 items, showing first 3)}" in text
    assert step.turns[0].tool_calls[0].args_text == ptc.to_clojure(long_arg, 3, 60)[0]


def test_println_captured_per_call():
    """TRN-008, TRN-009: each println call is one entry of the turn, newlines included."""
    llm = ScriptedLLM([fence('(println "a\\nb")\n(println "c" 1 :k)'), fence("(return 0)")])
    step = SubAgent("p", llm=llm, compression=True).run()
    assert step.turns[0].prints == ("a\nb", "c 1 :k")
    assert ";; Output:\na\nb\nc 1 :k\n\nTurns left: 4" in llm.calls[1][1]["content"]


# --- tool calls --------------------------------------------------------------------------------


def test_side_effect_tools_returning_nil():
    """TC-001, TC-003, TC-006: nil-returning calls of every turn are listed with their args;
    the Turn keeps name, args and result."""
    sent = []

    def make_call(to: str, message: str) -> None:
        """Place a phone call."""
        sent.append(to)

    t1 = (
        '(tool/make-call {:to "Alice" :message "Meeting at 3pm"})\n'
        '(tool/make-call {:to "Bob" :message "Bring documents"})'
    )
    t2 = '(tool/make-call {:to "Carol" :message "Hi"})'
    llm = ScriptedLLM([fence(t1), fence(t2), fence("(return :done)")])
    step = SubAgent("calls", llm=llm, tools=[make_call], compression=True).run()
    assert step.ok and sent == ["Alice", "Bob", "Carol"]
    assert (
        ";; Tool calls made:\n"
        ';   make-call({:to "Alice", :message "Meeting at 3pm"})\n'
        ';   make-call({:to "Bob", :message "Bring documents"})\n'
        ';   make-call({:to "Carol", :message "Hi"})\n'
    ) in llm.calls[2][1]["content"]
    first = step.turns[0].tool_calls[0]
    assert first.name == "make-call" and first.result is None
    assert first.args[0]["to"] == "Alice"


def test_limits_hit():
    """TC-002, TC-007, TRN-010: tool-call and println limits keep the most recent ones."""

    def ping(n: int) -> int:
        return n

    t1 = '(tool/ping 1)\n(tool/ping 2)\n(println "one")\n(println "two")'
    t2 = '(tool/ping 3)\n(println "three")'
    llm = ScriptedLLM([fence(t1), fence(t2), fence("(return 0)")])
    agent = SubAgent(
        "limits",
        llm=llm,
        tools=[ping],
        compression=(SingleUserCoalesced, {"println_limit": 2, "tool_call_limit": 2}),
    )
    step = agent.run()
    text = llm.calls[2][1]["content"]
    assert ";; Tool calls made:\n;   ping(2)\n;   ping(3)\n\n;; Output:\ntwo\nthree\n\n" in text
    assert step.usage.compression == CompressionStats("single_user_coalesced", 2, 2, 1, 2, 1)


# --- failures, final turn, single shot ---------------------------------------------------------


def test_failed_turns_then_recovery():
    """ERR-001, ERR-002, ERR-003, CMP-002, CMP-003: two failures in a row keep their programs
    and errors in order; the recovery turn then succeeds."""
    replies = [
        fence("(def base 10)"),
        fence("(undefined-thing 1)"),
        fence('(+ base "x")'),
        fence("(return (+ base 1))"),
    ]
    llm = ScriptedLLM(replies)
    step = SubAgent("recover", llm=llm, compression=True).run()
    assert step.ok and step.value == 11
    last = llm.calls[3]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"].endswith("Turns left: 4")
    assert last[2]["content"] == "```clojure\n(undefined-thing 1)\n```"
    assert last[3]["content"].startswith("Error: " + step.turns[1].error.message)
    assert last[3]["content"].endswith("\n\nTurns left: 3")
    assert last[4]["content"] == '```clojure\n(+ base "x")\n```'
    assert last[5]["content"].startswith("Error: ")
    assert last[5]["content"].endswith("\n\nTurns left: 2")
    assert [t.success for t in step.turns] == [True, False, False, True]
    assert step.turns[1].error.type == "undefined_variable"


def test_final_turn_and_max_turns():
    """MSG-005: the last turn's USER message ends with the exact FINAL TURN line; running out
    of turns ends the run with a max-turns error."""
    llm = ScriptedLLM([fence("(def a 1)"), fence("(def b 2)")])
    step = SubAgent("m", llm=llm, max_turns=2, compression=True).run()
    assert llm.calls[0][-1]["content"].endswith("Turns left: 2")
    assert llm.calls[1][-1]["content"].endswith("\n\n" + FINAL_TURN)
    assert not step.ok and step.error.type == "max_turns_exceeded"
    assert "max_turns (2)" in step.error.message


def test_no_program_reply_fails_the_turn():
    """ERR-003: a reply without a program fails the turn with feedback on how to answer."""
    llm = ScriptedLLM(["The answer is 4.", "```clojure\n(return 4)\n```"])
    step = SubAgent("q", llm=llm, compression=True).run()
    assert step.ok and step.value == 4
    assert llm.calls[1][2] == {"role": "assistant", "content": "The answer is 4."}
    assert "```clojure" in llm.calls[1][3]["content"]
    assert step.turns[0].error.type == "no_program"


def test_fail_ends_the_run():
    llm = ScriptedLLM([fence('(fail "no data")')])
    step = SubAgent("f", llm=llm).run()
    assert not step.ok and step.error.type == "fail" and step.error.value == "no data"


def test_single_shot():
    """SS-001, SS-002: max_turns=1 answers with the last value and never compresses;
    max_turns defaults to 5."""

    class Exploding:
        name = "exploding"

        def to_messages(self, turns, memory, opts):
            raise AssertionError("single-shot must not compress")

    llm = ScriptedLLM([fence("(+ 1 2)")])
    step = SubAgent("add", llm=llm, max_turns=1, compression=Exploding()).run()
    assert step.ok and step.value == 3
    assert [m["role"] for m in llm.calls[0]] == ["system", "user"]
    assert llm.calls[0][1]["content"] == "add\n\n" + FINAL_TURN
    assert step.usage.compression.turns_compressed == 0
    assert SubAgent("x", llm=llm).max_turns == 5


def test_signature_validation_fails_the_turn():
    llm = ScriptedLLM([fence('(return {:total "x"})'), fence("(return {:total 2.5})")])
    step = SubAgent("s", llm=llm, signature="{total :float}").run()
    assert step.ok and step.value["total"] == 2.5
    assert step.turns[0].error.type == "validation_error"
    assert "total: expected :float, got str" in step.turns[0].error.message


# --- messages, purity, records -------------------------------------------------------------------


def test_compression_at_turn_start():
    """CMP-004, DBG-004, ARC-004: call k's messages are rendered from turns[:k] when turn k
    starts; re-rendering from the stored turns gives the same bytes."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence("(oops)"), fence(FINISH_PROGRAM)])
    step = seed_agent(llm).run()
    for k, sent in enumerate(llm.calls):
        again, _ = step.context.messages_for(step.turns[:k])
        assert again == sent
        assert json.dumps(again) == json.dumps(sent)


def test_turn_records():
    """ARC-001, ARC-002, ARC-006, ARC-007, DBG-001, DBG-002, DBG-005: frozen turns with number,
    program, result, prints, tool calls, memory and success; the count is len(turns)."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence("(oops)"), fence(FINISH_PROGRAM)])
    step = seed_agent(llm).run()
    assert [t.number for t in step.turns] == [1, 2, 3]
    t1 = step.turns[0]
    assert t1.program == SEED_PROGRAM and t1.success and len(t1.prints) == 2
    assert [c.name for c in t1.tool_calls] == ["search-reviews", "get-inventory"]
    assert [m.name for m in t1.memory] == ["electronics", "reviews", "inventory"]
    assert t1.response.startswith("Here is my program")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t1.number = 9  # type: ignore[misc]
    assert isinstance(step.turns, tuple) and not hasattr(step, "trace")
    assert len(step.turns) == 3 and len(step.messages[-1]) != len(step.turns)
    full = step.render("full")
    assert SEED_PROGRAM in full and "(oops)" in full


def test_render_views():
    """DBG-004, DBG-005: ``render('compressed')`` shows the LLM's view, ``'full'`` the turns."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence(FINISH_PROGRAM)])
    step = seed_agent(llm, compression=False).run()
    compressed = step.render("compressed")
    assert "[USER]\n" + HEAD in compressed and SEED_PROGRAM not in compressed
    assert SEED_PROGRAM in step.render("full")


def test_usage_summed_and_stats():
    llm = ScriptedLLM(
        [fence("(def a 1)"), fence("(return a)")], usage={"input_tokens": 7, "output_tokens": 3}
    )
    step = SubAgent("u", llm=llm, compression=True).run()
    assert (step.usage.input_tokens, step.usage.output_tokens, step.usage.llm_calls) == (14, 6, 2)
    assert step.usage.compression.turns_compressed == 1


def test_transient_llm_errors_are_retried():
    llm = ScriptedLLM([TransientLLMError("busy"), fence("(return 1)")])
    step = SubAgent("r", llm=llm, retry=RetryPolicy(3, 0.0)).run()
    assert step.ok and step.usage.llm_retries == 1
    llm = ScriptedLLM([ValueError("bad key")])
    step = SubAgent("r", llm=llm, retry=RetryPolicy(3, 0.0)).run()
    assert step.error.type == "llm_error" and "bad key" in step.error.message


# --- namespaces ----------------------------------------------------------------------------------


def test_namespaces():
    """NS-001, NS-002, NS-004, NS-005, NS-006, NS-007, NS-009: tool/ and data/ prefixes, bare
    fallbacks, local precedence, ambiguity and explicit access through the agent."""

    def products() -> str:
        return "from tool"

    program = """(def via-tool (tool/search-reviews "x"))
(def via-bare-tool (search-reviews "x"))
(def via-bare-data (count limit))
(def limit 99)
(def shadowed limit)
(def explicit data/limit)"""
    llm = ScriptedLLM([fence(program), fence("(products)"), fence("(return explicit)")])
    step = SubAgent(
        "ns",
        llm=llm,
        tools=[search_reviews, products],
        data={"limit": [1, 2], "products": PRODUCTS},
        compression=True,
    ).run()
    assert step.ok and step.value == [1, 2]
    memory = {m.name: m for m in step.turns[0].memory}
    assert memory["via-bare-tool"].type == "string"
    assert memory["via-bare-data"].sample == "2"
    assert memory["shadowed"].sample == "99"
    assert step.turns[1].error.type == "ambiguous_reference"


# --- sub-agents, async, serialization -----------------------------------------------------------


def test_sub_agent_as_tool_inherits():
    """API-007: a child agent offered as a tool inherits llm and compression from its parent."""
    child = SubAgent("Count the letters of {{word}}", signature="(word :string) -> :int")
    llm = ScriptedLLM(
        [
            fence('(def n (tool/letters {:word "hello"}))'),  # parent turn 1
            fence("(return (count data/word))"),  # child turn 1 (inherited llm)
            fence("(return n)"),  # parent turn 2
        ]
    )
    parent = SubAgent(
        "Use the helper",
        llm=llm,
        tools={"letters": child.as_tool("letters", "Counts letters")},
        compression=(SingleUserCoalesced, {"println_limit": 4}),
    )
    step = parent.run()
    assert step.ok and step.value == 5
    assert llm.calls[1][1]["content"].startswith("Count the letters of hello\n\n")
    assert ";; === data/ ===\ndata/word" in llm.calls[1][1]["content"]
    assert (
        '(tool/letters word)             ; (word :string) -> :int - "Counts letters"'
        in llm.calls[0][1]["content"]
    )
    assert ';   letters({:word "hello"})' in llm.calls[2][1]["content"]


async def test_arun_with_async_llm():
    """Async LLM callables are awaited; programs run in a worker thread."""
    llm = AsyncScriptedLLM([fence(SEED_PROGRAM), fence(FINISH_PROGRAM)])
    step = await seed_agent(llm).arun()
    assert step.ok and len(step.turns) == 2 and len(llm.calls) == 2


async def test_arun_with_sync_llm_and_async_child():
    child = SubAgent("child", llm=AsyncScriptedLLM([fence("(return 7)")]))
    llm = ScriptedLLM([fence("(return (tool/child))")])
    step = await SubAgent("p", llm=llm, tools={"child": child.as_tool("child")}).arun()
    assert step.ok and step.value == 7


def test_sync_run_with_async_llm():
    step = SubAgent("a", llm=AsyncScriptedLLM([fence("(return 1)")])).run()
    assert step.ok and step.value == 1


def test_serialization_roundtrip():
    """DBG-003: JSON stores turns, not summaries; messages are re-derived identically."""
    llm = ScriptedLLM([fence(SEED_PROGRAM), fence("(oops)"), fence(FINISH_PROGRAM)])
    step = seed_agent(llm).run()
    text = step.to_json()
    assert "Tool calls made" not in text and '"messages"' not in text
    again = Step.from_json(text)
    assert again.turns == step.turns
    assert again.messages == step.messages
    assert again.value == step.value and again.usage == step.usage
    assert again.render("compressed") == step.render("compressed")


def test_resume_continues_with_same_session_state():
    """ARC-002: resume replays stored programs (recorded tool results, no new calls) and
    appends new turns after the stored ones."""
    calls = []

    def lookup(key: str) -> dict:
        calls.append(key)
        return {"key": key, "score": 3}

    def make(llm):
        return SubAgent("resume me", llm=llm, tools=[lookup], compression=True)

    first = make(ScriptedLLM([fence('(def hit (tool/lookup "a"))'), ValueError("network down")]))
    step = first.run()
    assert step.error.type == "llm_error" and len(step.turns) == 1 and calls == ["a"]
    stored = Step.from_json(step.to_json())
    llm = ScriptedLLM([fence("(return (:score hit))")])
    resumed = make(llm).resume(stored)
    assert resumed.ok and resumed.value == 3
    assert calls == ["a"]  # replay used the recorded result
    assert resumed.turns[:1] == stored.turns and resumed.turns[1].number == 2
    assert (
        'hit                             ; = map[2], sample: {:key "a", :score 3}'
        in (llm.calls[0][1]["content"])
    )


# --- review fixes ---------------------------------------------------------------------------------


def test_sub_agent_tool_params_from_placeholders():
    """FMT-004: a sub-agent tool advertises the parameters its prompt's {{placeholders}} need,
    after those of an explicit signature; placeholders its own data fills are not asked for."""
    from ptc.compression._format import tool_line

    child = SubAgent("Summarize {{topic}}", signature=":string")
    assert tool_line(child.as_tool("research", "Research a topic").spec()) == (
        '(tool/research topic)           ; (topic :string) -> :string - "Research a topic"'
    )
    plain = SubAgent("Summarize {{ topic }} for {{audience}} in {{lang}}", data={"lang": "en"})
    assert str(plain.tool_signature()) == "(topic :string, audience :string) -> :any"
    typed = SubAgent("Rate {{name}} in {{my-unit}}", signature="(name :string, n :int) -> :float")
    assert str(typed.tool_signature()) == "(name :string, n :int, my-unit :string) -> :float"
    assert SubAgent("No placeholders").tool_signature().params == ()

    # End to end: the parent sees the parameter, and a positional call fills the placeholder.
    llm = ScriptedLLM(
        [
            fence('(return (tool/research "batteries"))'),  # parent turn 1
            fence('(return "summary")'),  # child turn 1
        ]
    )
    parent = SubAgent("Brief", llm=llm, tools={"research": child.as_tool("research")})
    step = parent.run()
    assert step.ok and step.value == "summary"
    assert (
        "(tool/research topic)           ; (topic :string) -> :string"
        in (llm.calls[0][1]["content"])
    )
    assert llm.calls[1][1]["content"].startswith("Summarize batteries\n\n")


def test_empty_mission_rejected():
    """MSG-003, MSG-007: there is always a mission to put first in the USER message."""
    for prompt in ["", "   ", "\n\t\n"]:
        with pytest.raises(ValueError, match="non-empty mission"):
            SubAgent(prompt, llm=ScriptedLLM([]))
    with pytest.raises(ValueError, match="mission"):
        SubAgent(None, llm=ScriptedLLM([]))  # type: ignore[arg-type]
    agent = SubAgent("{{task}}", llm=ScriptedLLM([fence("(return 1)")]))
    with pytest.raises(ValueError, match="mission is empty"):
        agent.run({"task": "  "})
    step = SubAgent("\n  Add numbers \n", llm=ScriptedLLM([fence("(return 1)")])).run()
    assert step.messages[0][1]["content"].startswith("Add numbers\n\n")


def test_llm_outage_counts_the_failed_call_and_resume_stays_consistent():
    """usage.llm_calls counts requests (= len(step.messages)), llm_retries the extra attempts;
    an LLM outage counts its request, and resume keeps both in step."""
    llm = ScriptedLLM(
        [fence("(def a 1)"), TransientLLMError("busy"), TransientLLMError("still busy")]
    )
    agent = SubAgent("outage", llm=llm, compression=True, retry=RetryPolicy(2, 0.0))
    step = agent.run()
    assert step.error.type == "llm_error"
    assert len(step.messages) == step.usage.llm_calls == 2
    assert step.usage.llm_retries == 1 and step.usage.llm_attempts == len(llm.calls) == 3
    stored = Step.from_json(step.to_json())
    assert len(stored.messages) == stored.usage.llm_calls == 2
    llm2 = ScriptedLLM([TransientLLMError("blip"), fence("(return a)")])
    resumed = SubAgent("outage", llm=llm2, compression=True, retry=RetryPolicy(2, 0.0)).resume(
        stored
    )
    assert resumed.ok and resumed.value == 1
    assert len(resumed.messages) == resumed.usage.llm_calls == 3
    assert resumed.usage.llm_retries == 2 and resumed.usage.llm_attempts == 5
    # a non-retryable failure counts one request and no retry
    step = SubAgent("x", llm=ScriptedLLM([ValueError("bad key")])).run()
    assert (len(step.messages), step.usage.llm_calls, step.usage.llm_retries) == (1, 1, 0)


def test_ok_error_ok_ordering_and_turns_left():
    """ok, error, ok: both successes are coalesced into the first USER message, the failed pair
    follows it, and the LAST USER message ends with the current turns-left line."""
    llm = ScriptedLLM(
        [fence("(def a 1)"), fence("(oops)"), fence("(def b 2)"), fence("(return (+ a b))")]
    )
    step = SubAgent("Add a and b", llm=llm, compression=True).run()
    assert step.ok and step.value == 3
    fourth = llm.calls[3]
    assert [m["role"] for m in fourth] == ["system", "user", "assistant", "user"]
    assert fourth[1]["content"] == (
        "Add a and b\n\n"
        ";; === user/ (your prelude) ===\n"
        "a                               ; = integer, sample: 1\n"
        "b                               ; = integer, sample: 2\n\n"
        "Turns left: 4"
    )
    assert fourth[2]["content"] == "```clojure\n(oops)\n```"
    assert fourth[3]["content"].startswith("Error: ")
    assert fourth[3]["content"].endswith("\n\nTurns left: 2")

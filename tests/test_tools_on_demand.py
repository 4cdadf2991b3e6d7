"""Tools found on demand (issue 33 §2): ``(tools "query")`` ranks a Session's tools by the words
of their names and descriptions, ``(doc tool/name)`` gives one tool's line; both are pure.

The expectations are worked out by hand from the ranking in rust/catalogue.rs: per query word,
a tool scores its best match (name word 8, description word 4, a name word the query word
begins 2, a description word it begins 1) times sqrt((tools + 1) / (tools matching + 1)); a
query that is a whole name puts that tool first; ties go by name.
"""

from __future__ import annotations

from typing import Any

import ptc
import pytest
from ptc.compression._format import tool_line, tool_section
from ptc.tools.declare import tool_entries


def crm_get_contact(contact_id: int) -> dict[str, Any]:
    """Fetch one contact by its id, with phone and email."""
    return {"id": contact_id}


def crm_list_contacts(owner: str) -> list[Any]:
    """List the contacts an owner manages."""
    return []


@ptc.tool(effect="write")
def billing_refund_invoice(invoice_id: str, amount: float) -> dict[str, Any]:
    """Refund part or all of a paid invoice."""
    return {}


def billing_list_invoices(customer_id: str) -> list[Any]:
    """List a customer's invoices, newest first."""
    return []


@ptc.tool(effect="write")
def shipping_create_label(order_id: str) -> dict[str, Any]:
    """Print a shipping label for an order."""
    return {}


def shipping_track(tracking_number: str) -> dict[str, Any]:
    """Where a parcel is now, from the number on its label."""
    return {}


def support_open_ticket(subject: str) -> dict[str, Any]:
    """Open a support ticket about a bill or a shipping problem."""
    return {}


TOOLS = [
    crm_get_contact,
    crm_list_contacts,
    billing_refund_invoice,
    billing_list_invoices,
    shipping_create_label,
    shipping_track,
    support_open_ticket,
]


@pytest.fixture(scope="module")
def session() -> ptc.Session:
    return ptc.Session(tools=TOOLS)


def names(session: ptc.Session, source: str) -> list[str]:
    r = session.run(f"(mapv :name {source})")
    assert r.error is None, r.error
    return list(r.value)


# --------------------------------------------------------------------------- ranking


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # two name words, equal scores: by name
        ("invoice", ["tool/billing-list-invoices", "tool/billing-refund-invoice"]),
        ("contact", ["tool/crm-get-contact", "tool/crm-list-contacts"]),
        ("list", ["tool/billing-list-invoices", "tool/crm-list-contacts"]),
        # a description word (4) before name words it only begins (2 each)
        (
            "bill",
            [
                "tool/support-open-ticket",
                "tool/billing-list-invoices",
                "tool/billing-refund-invoice",
            ],
        ),
        # a name word (8) before a description word (4)
        ("label", ["tool/shipping-create-label", "tool/shipping-track"]),
        # name prefixes (2) before a description prefix (1), ties by name
        ("ship", ["tool/shipping-create-label", "tool/shipping-track", "tool/support-open-ticket"]),
        # 8*sqrt(8/3) + 4*sqrt(8/2) = 21.1 against 8*sqrt(8/3) = 13.1
        ("contacts owner", ["tool/crm-list-contacts", "tool/crm-get-contact"]),
        # the whole name first, then shipping (name 8) before shipping (description 4)
        (
            "tool/shipping-track",
            ["tool/shipping-track", "tool/shipping-create-label", "tool/support-open-ticket"],
        ),
        # only descriptions: parcel, newest; upper case and punctuation do not matter
        ("PARCEL!", ["tool/shipping-track"]),
        ("newest", ["tool/billing-list-invoices"]),
        # no word matches; no words at all
        ("zebra", []),
        ("", []),
        (" -/ ", []),
    ],
)
def test_ranking(session: ptc.Session, query: str, expected: list[str]) -> None:
    assert names(session, f'(tools "{query}")') == expected


def test_a_count_of_matches(session: ptc.Session) -> None:
    assert names(session, '(tools "ship" 1)') == ["tool/shipping-create-label"]
    assert names(session, '(tools "ship" 0)') == []
    assert len(names(session, '(tools "ship" 99)')) == 3


def test_no_query_lists_every_tool_in_order(session: ptc.Session) -> None:
    assert names(session, "(tools)") == [f"tool/{n}" for n, _ in tool_entries(TOOLS)]


def test_a_record(session: ptc.Session) -> None:
    r = session.run('(first (tools "refund"))')
    assert ptc.to_clojure(r.value)[0] == (
        '{:name "tool/billing-refund-invoice", :doc "Refund part or all of a paid invoice.", '
        ':signature "(invoice-id :string, amount :float) -> :map", :effect :write}'
    )
    r = session.run('(:effect (first (tools "parcel")))')
    assert r.value == "read"


def test_searches_are_the_same_in_every_run(session: ptc.Session) -> None:
    first = session.run('(tools "ship invoice contact" 10)').value
    assert all(session.run('(tools "ship invoice contact" 10)').value == first for _ in range(5))


# --------------------------------------------------------------------------- doc


def test_doc_is_the_prompt_line(session: ptc.Session) -> None:
    r = session.run("(doc tool/crm-get-contact)")
    assert r.value == (
        "(tool/crm-get-contact contact-id)  ; (contact-id :int) -> :map"
        ' - "Fetch one contact by its id, with phone and email."'
    )
    spec = dict(tool_entries(TOOLS))["crm-get-contact"].spec("crm-get-contact")
    assert r.value == tool_line(spec)
    # the name as a string, with or without tool/
    assert session.run('(doc "crm-get-contact")').value == r.value
    assert session.run('(doc "tool/crm-get-contact")').value == r.value
    # a tool value, as a let gives it
    assert session.run("(let [f tool/crm-get-contact] (doc f))").value == r.value


def test_doc_gives_the_whole_description() -> None:
    def lookup(sku: str) -> dict[str, Any]:
        """Look a product up.

        Returns its price; and stock."""
        return {}

    s = ptc.Session(tools=[lookup])
    assert s.run("(doc tool/lookup)").value == (
        '(tool/lookup sku)               ; (sku :string) -> :map - "Look a product up. Returns'
        ' its price and stock."'
    )
    assert (
        s.run("(:doc (first (tools)))").value
        == "Look a product up.\n\nReturns its price; and stock."
    )


def test_doc_of_a_builtin(session: ptc.Session) -> None:
    assert session.run("(doc inc)").value == 'inc ; 1 argument(s) - "x + 1"'


def test_doc_of_an_unknown_tool_names_the_nearest(session: ptc.Session) -> None:
    e = session.run("(doc tool/crm-get-contakt)").error
    assert e is not None
    assert e.type == "unknown_tool"
    assert e.message == (
        "doc: no tool named tool/crm-get-contakt; nearest: tool/crm-get-contact, "
        "tool/crm-list-contacts"
    )
    assert e.hint == 'find tools by the words of their names and docs: (tools "crm get contakt")'
    e = ptc.Session(tools={}).run("(doc tool/x)").error
    assert e is not None and e.message == "doc: no tool named tool/x; this run has no tools"


@pytest.mark.parametrize(
    ("source", "kind", "message"),
    [
        (
            "(tools 1)",
            "type_error",
            "tools expected a string of words to search for, got integer 1",
        ),
        (
            '(tools "x" -1)',
            "type_error",
            "tools expected a count of matches (an integer, 0 or more), got integer -1",
        ),
        (
            '(tools "x" 1.5)',
            "type_error",
            "tools expected a count of matches (an integer, 0 or more), got float 1.5",
        ),
        ("(tools 1 2 3)", "arity_error", None),
        (
            "(doc 1)",
            "type_error",
            "doc expected tool/name (or a tool's name as a string), got integer 1",
        ),
        ("(doc)", "arity_error", None),
    ],
)
def test_wrong_arguments(session: ptc.Session, source: str, kind: str, message: str | None) -> None:
    e = session.run(source).error
    assert e is not None and e.type == kind
    if message is not None:
        assert e.message == message


# --------------------------------------------------------------------------- pure, fuel


def test_neither_calls_a_tool_nor_records_one(session: ptc.Session) -> None:
    r = session.run('(do (tools "invoice") (doc tool/billing-refund-invoice))')
    assert r.error is None and r.tool_calls == []


def test_fuel_is_charged_for_the_catalogue_scanned() -> None:
    # 300 tools without descriptions: one word each (t0 ... t299), so a scan reads 600 units
    # (each tool once, each of its words once) per query word, after the query's characters
    tools = {f"t{i}": (lambda: 1) for i in range(300)}
    s = ptc.Session(tools=tools)
    one = s.run('(tools "x")')
    two = s.run('(tools "x y")')
    assert two.steps - one.steps == 600 + 2
    small = ptc.Session(tools=tools, limits={"fuel": 500}).run('(tools "x")')
    assert isinstance(small.error, ptc.ExecutionLimitError)
    assert small.error.limit == "fuel"
    assert small.error.message == "evaluation step limit (fuel) of 500 exceeded"


def test_check_and_plan_see_no_tool_call() -> None:
    tools = {"refund": lambda: 1}
    c = ptc.check('(doc tool/refund) (tools "refund") (doc "refund")', tools=tools)
    assert c.errors == () and c.warnings == ()
    assert c.plan.calls == ()
    assert ptc.check("(tool/refund) (doc tool/refund)", tools=tools).plan.calls[0].bound == 1


def test_doc_and_tools_are_builtins_that_cannot_be_redefined() -> None:
    e = ptc.run("(def tools 1)").error
    assert e is not None and e.type == "cannot_shadow_builtin"
    # a data key of that name is read with data/
    assert ptc.run("data/tools", data={"tools": [1]}).value == [1]


# --------------------------------------------------------------------------- the prompt

SPECS = tuple(t.spec(n) for n, t in tool_entries(TOOLS))
FIND = (
    ';; Find tools with (tools "words"): up to 10 best matches by the words of their names and\n'
    ";; docs, as {:name :doc :signature :effect}. (doc tool/name) gives a tool's parameters,\n"
    ";; signature and description."
)
BY_GROUP = (
    ";; === tool/ ===\n"
    ";; 7 tools by group, names only: look a tool up before calling it\n"
    ";; crm: crm-get-contact, crm-list-contacts - fetch, contact, phone, email\n"
    ";; billing: billing-refund-invoice, billing-list-invoices - refund, part, paid, invoice\n"
    ";; shipping: shipping-create-label, shipping-track - label, print, order, parcel\n"
    ";; support: support-open-ticket - open, ticket, bill, shipping\n" + FIND
)
COUNTS = (
    ";; === tool/ ===\n"
    ";; 7 tools in 4 groups: crm (2), billing (2), shipping (2), support (1)\n" + FIND
)


def tokens(text: str) -> int:
    return ptc._core.count_tokens(text, "o200k_base")


def test_the_listing_within_its_budget() -> None:
    full = tool_section(SPECS)
    assert full == "\n".join([";; === tool/ ===", *(tool_line(s) for s in SPECS)])
    assert (tokens(full), tokens(BY_GROUP), tokens(COUNTS)) == (227, 151, 83)
    assert tool_section(SPECS, 227) == full  # at the budget: every line
    assert tool_section(SPECS, 226) == BY_GROUP  # one token over: names by group
    assert tool_section(SPECS, 151) == BY_GROUP
    assert tool_section(SPECS, 150) == COUNTS  # names too long: the counts
    assert tool_section(SPECS, 1) == COUNTS  # the shortest there is, whatever the budget


def agent_run(budget: int | None, replies: list[str], **kw: Any) -> ptc.llm.ScriptedLLM:
    llm = ptc.llm.ScriptedLLM(replies)
    agent = ptc.SubAgent(
        "Refund invoice INV-7", llm=llm, tools=TOOLS, max_turns=3, tool_listing_tokens=budget, **kw
    )
    agent.run()
    return llm


PROGRAMS = [
    '```clojure\n(println (mapv :name (tools "refund")))\n```',
    "```clojure\n(println (doc tool/billing-refund-invoice))\n```",
    "```clojure\n(return :done)\n```",
]


def test_the_first_message_lists_by_group_and_stays_the_same() -> None:
    llm = agent_run(200, PROGRAMS)
    first = [call[1]["content"] for call in llm.calls]
    assert first[0] == f"Refund invoice INV-7\n\n{BY_GROUP}\n\nTurns left: 3"
    assert first == [first[0]] * 3  # byte for byte on every turn: the prompt cache holds
    assert llm.calls[1][3]["content"].startswith(';; Output:\n["tool/billing-refund-invoice"]')
    assert llm.calls[2][5]["content"].startswith(
        ";; Output:\n(tool/billing-refund-invoice invoice-id amount)  ; (invoice-id :string,"
        ' amount :float) -> :map - "Refund part or all of a paid invoice."'
    )
    # the system prompt is the same as without deferral
    assert llm.calls[0][0] == agent_run(None, PROGRAMS[2:]).calls[0][0]


def test_with_compression_the_listing_is_a_fixed_prefix() -> None:
    llm = agent_run(100, PROGRAMS, compression=True)
    users = [call[1]["content"] for call in llm.calls]
    head = f"Refund invoice INV-7\n\n{COUNTS}\n\n"
    assert all(u.startswith(head) for u in users)


def test_under_the_budget_and_without_one_every_line_is_listed() -> None:
    full = f"Refund invoice INV-7\n\n{tool_section(SPECS)}\n\nTurns left: 3"
    assert agent_run(227, PROGRAMS[2:]).calls[0][1]["content"] == full
    assert agent_run(None, PROGRAMS[2:]).calls[0][1]["content"] == full
    # the default budget (1,500 tokens) holds these seven tools
    llm = ptc.llm.ScriptedLLM(PROGRAMS[2:])
    ptc.SubAgent("Refund invoice INV-7", llm=llm, tools=TOOLS, max_turns=3).run()
    assert llm.calls[0][1]["content"] == full


def test_an_agent_describes_the_tools_it_declared() -> None:
    # the agent's Session calls wrappers; programs see the tools as declared
    stock = ptc.Tool(
        lambda sku: 3,
        name="stock",
        signature="(sku :string) -> :int",
        description="Units in stock for a SKU.",
        effect="write",
    )
    llm = ptc.llm.ScriptedLLM(
        [
            '```clojure\n(println (doc tool/stock) (:effect (first (tools "units"))))\n```',
            "```clojure\n(return 1)\n```",
        ]
    )
    ptc.SubAgent("Count stock", llm=llm, tools=[stock], max_turns=2).run()
    assert llm.calls[1][3]["content"].startswith(
        ';; Output:\n(tool/stock sku)                ; (sku :string) -> :int - "Units in stock for'
        ' a SKU." :write'
    )


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1500"])
def test_the_budget_is_checked_where_it_is_given(bad: Any) -> None:
    with pytest.raises(ValueError, match="tool_listing_tokens must be a positive int"):
        ptc.SubAgent("x", tool_listing_tokens=bad)


# --------------------------------------------------------------------------- the catalogue


def test_the_catalogue_is_described_once_and_only_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ptc.session

    described: list[int] = []
    real = ptc.session._tool_catalogue

    def counting(holder: Any) -> Any:
        described.append(1)
        return real(holder)

    monkeypatch.setattr(ptc.session, "_tool_catalogue", counting)
    s = ptc.Session(tools=TOOLS)
    # making a Session describes nothing, nor does a first run that names neither builtin
    assert s.run("(tool/crm-get-contact 7)").value == {"id": 7} and described == []
    assert s.run("(count (tools))").value == 7 and described == [1]
    assert s.run('(doc "crm-get-contact")').error is None and described == [1]
    # after a first run, every run may call a function defined earlier that reads it
    s = ptc.Session(tools=TOOLS)
    assert s.run("(defn n [] (count (tools)))").error is None and described == [1, 1]
    s = ptc.Session(tools=TOOLS)
    assert s.run("(+ 1 2)").value == 3 and described == [1, 1]
    assert s.run("(+ 1 2)").value == 3 and described == [1, 1, 1]


def test_tools_in_parallel_branches(session: ptc.Session) -> None:
    r = session.run('(pmap (fn [q] (count (tools q))) ["invoice" "ship" "zebra"])')
    assert r.value == [2, 3, 0]


def test_a_tool_whose_signature_cannot_be_read_is_listed_without_one() -> None:
    bad = ptc.Tool(lambda x: 1, name="bad", signature="((( nope")
    s = ptc.Session(tools=[bad])
    r = s.run("(first (tools))")
    assert ptc.to_clojure(r.value)[0] == (
        '{:name "tool/bad", :doc nil, :signature nil, :effect :read}'
    )
    assert s.run("(doc tool/bad)").value == "(tool/bad)"


def test_a_core_session_without_descriptions_knows_the_names_only() -> None:
    core = ptc._core.CoreSession(None, {"lookup": lambda args, named: 1})
    assert ptc.to_clojure(core.run("(tools)").value)[0] == (
        '[{:name "tool/lookup", :doc nil, :signature nil, :effect nil}]'
    )
    assert core.run('(mapv :name (tools "look"))').value == ["tool/lookup"]


# --- an unknown tool among many --------------------------------------------------------------


def named(name: str) -> Any:
    def fn(x: int = 0) -> int:
        return x

    fn.__name__ = name.replace("-", "_")
    fn.__doc__ = f"The {name} tool."
    return fn


FILLERS = [named(f"misc-filler-{chr(97 + i)}") for i in range(18)]
TWENTY_ONE = [named("billing-get-invoice"), named("billing-refund-invoice"), named("crm-note")]
TWENTY_ONE += FILLERS


@pytest.mark.parametrize(
    ("call", "message", "hint"),
    [
        (
            "(tool/refund-invoice 1)",
            "Unknown tool: refund-invoice. Nearest of the 21 tools: billing-refund-invoice, "
            'billing-get-invoice. Find others with (tools "words").',
            None,
        ),
        (
            "(tool/billing-refund-invoce 1)",
            "Unknown tool: billing-refund-invoce. Nearest of the 21 tools: "
            'billing-refund-invoice, billing-get-invoice. Find others with (tools "words").',
            "did you mean tool/billing-refund-invoice?",
        ),
        (
            "(tool/zzz 1)",
            "Unknown tool: zzz. None of the 21 tools is named alike. "
            'Find others with (tools "words").',
            None,
        ),
    ],
)
def test_past_twenty_tools_an_unknown_one_names_the_nearest(
    call: str, message: str, hint: str | None
) -> None:
    s = ptc.Session(tools=TWENTY_ONE)
    r = s.run(call)
    assert r.error is not None and r.error.type == "unknown_tool"
    assert (r.error.message, r.error.hint) == (message, hint)
    found = s.check(call).errors  # check reports what the run would
    assert [(e.type, e.message, e.hint) for e in found] == [("unknown_tool", message, hint)]


def test_twenty_tools_are_still_listed_in_full() -> None:
    tools = [named("crm-note"), *[named(f"misc-filler-{chr(97 + i)}") for i in range(19)]]
    r = ptc.Session(tools=tools).run("(tool/nope)")
    names = ", ".join(["crm-note", *(f"misc-filler-{chr(97 + i)}" for i in range(19))])
    assert r.error is not None
    assert r.error.message == f"Unknown tool: nope. Available tools: {names}"


def test_five_at_most_are_named() -> None:
    tools = [named(f"report-part-{i}") for i in range(30)]
    r = ptc.Session(tools=tools).run("(tool/report-summary)")
    assert r.error is not None
    assert r.error.message == (
        "Unknown tool: report-summary. Nearest of the 30 tools: report-part-0, report-part-1, "
        'report-part-2, report-part-3, report-part-4. Find others with (tools "words").'
    )

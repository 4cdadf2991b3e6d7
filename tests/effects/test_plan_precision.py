"""Issue 31 §3, the precision table: "for a table of at least 40 realistic agent programs in the
repository, with the plan a person would write for each, the computed plan must name exactly the
tools called and give every literal argument and every bound that is visible in the source."

Each case is a program an LLM agent would write against business tools, and the plan a careful
person writes by reading it: the tools it can call, and for every call site (a written call, or a
tool used as a value) the tool, the line, the arguments the source shows (``ptc.UNKNOWN`` where
they are computed at run time; ``ptc.UNKNOWN`` itself for a tool used as a value), the most calls
the site can make in one run (``None`` when the source does not show it: loops, data, tool
results, functions stored in maps) and whether it may not run at all. The programs are checked
without data, so ``data/`` collections have no known length.

The expected values were written from the source and docs (api.md of issue 31, LANGUAGE.md), not
copied from the implementation.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import ptc
import pytest

K = ptc.Keyword
U = ptc.UNKNOWN


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("planning never calls a tool")


# ---------------------------------------------------------------------------------------------
# The tools: plain Python functions; the ones that change the world are declared effect="write".
# ---------------------------------------------------------------------------------------------


def get_order(order_id: int) -> dict[str, Any]:
    """Fetch one order."""
    return _never(order_id)


def list_orders(
    status: str = "", customer_id: int = 0, page: int = 1, per_page: int = 50
) -> list[dict[str, Any]]:
    """List orders, one page at a time."""
    return _never(status, customer_id, page, per_page)


def search_orders(query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Full-text order search."""
    return _never(query, limit)


def get_customer(customer_id: int) -> dict[str, Any]:
    """Fetch one customer."""
    return _never(customer_id)


def list_tickets(status: str = "open", customer_id: int = 0, limit: int = 20) -> list[Any]:
    """List support tickets."""
    return _never(status, customer_id, limit)


def get_ticket(ticket_id: int) -> dict[str, Any]:
    """Fetch one support ticket."""
    return _never(ticket_id)


def search_kb(query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Search the knowledge base."""
    return _never(query, limit)


def get_inventory(sku: str) -> dict[str, Any]:
    """Stock of a SKU over all warehouses."""
    return _never(sku)


def get_stock(sku: str, warehouse: str) -> dict[str, Any]:
    """Stock of a SKU in one warehouse."""
    return _never(sku, warehouse)


def get_product(sku: str) -> dict[str, Any]:
    """Product record."""
    return _never(sku)


def get_sales_report(region: str, quarter: str) -> dict[str, Any]:
    """Sales of a region in a quarter."""
    return _never(region, quarter)


def get_exchange_rate(base: str, quote: str) -> dict[str, Any]:
    """Current exchange rate."""
    return _never(base, quote)


def find_free_slots(attendees: list[str], duration_minutes: int, date: str) -> list[Any]:
    """Free calendar slots shared by all attendees."""
    return _never(attendees, duration_minutes, date)


def list_events(calendar: str, date: str) -> list[dict[str, Any]]:
    """Events of a calendar on a day."""
    return _never(calendar, date)


def crm_lookup(email: str) -> dict[str, Any]:
    """Find a CRM contact by email."""
    return _never(email)


def get_invoice(invoice_id: str) -> dict[str, Any]:
    """Fetch one invoice."""
    return _never(invoice_id)


def get_shipment(tracking: str) -> dict[str, Any]:
    """Shipment status."""
    return _never(tracking)


def get_weather(city: str) -> dict[str, Any]:
    """Weather forecast."""
    return _never(city)


def file_exists(path: str) -> bool:
    """Whether a file exists."""
    return bool(_never(path))


def read_file(path: str) -> str:
    """Read a text file."""
    return str(_never(path))


def list_files(folder: str, page: int = 1) -> dict[str, Any]:
    """One page of a folder listing."""
    return _never(folder, page)


def get_deploy_status(service: str) -> dict[str, Any]:
    """State of a service's last deploy."""
    return _never(service)


def get_price(product: str, market: str) -> dict[str, Any]:
    """Price of a product in a market."""
    return _never(product, market)


def get_usage_stats(customer_id: int) -> dict[str, Any]:
    """Product usage of a customer."""
    return _never(customer_id)


def check_domain(domain: str) -> dict[str, Any]:
    """Reputation of an email domain."""
    return _never(domain)


def get_job_status(job_id: str) -> dict[str, Any]:
    """State of a background job."""
    return _never(job_id)


def load_config() -> dict[str, Any]:
    """The agent's configuration."""
    return _never()


def list_claims(status: str) -> list[dict[str, Any]]:
    """Insurance/damage claims."""
    return _never(status)


def get_metric(name: str, week: str) -> int:
    """A weekly business metric."""
    return int(_never(name, week))


def refund_order(order_id: int, amount: float = 0.0, reason: str = "") -> str:
    """Refund an order (all of it unless amount is given)."""
    return str(_never(order_id, amount, reason))


def cancel_order(order_id: int, reason: str = "") -> str:
    """Cancel an order."""
    return str(_never(order_id, reason))


def send_email(to: str, subject: str, body: str = "") -> str:
    """Send one email."""
    return str(_never(to, subject, body))


def create_ticket(title: str, priority: str = "normal", assignee: str = "") -> dict[str, Any]:
    """Open a ticket."""
    return _never(title, priority, assignee)


def update_ticket(ticket_id: int, status: str = "", priority: str = "", note: str = "") -> str:
    """Change a ticket."""
    return str(_never(ticket_id, status, priority, note))


def post_message(text: str, channel: str) -> str:
    """Post to a chat channel."""
    return str(_never(text, channel))


def create_event(title: str, start: str, attendees: list[str]) -> dict[str, Any]:
    """Create a calendar event."""
    return _never(title, start, attendees)


def update_event(event_id: str, note: str) -> str:
    """Add a note to a calendar event."""
    return str(_never(event_id, note))


def reserve_stock(sku: str, qty: int) -> str:
    """Reserve units of a SKU."""
    return str(_never(sku, qty))


def write_file(path: str, content: str) -> str:
    """Write a text file."""
    return str(_never(path, content))


def tag_customer(customer_id: int, tag: str) -> str:
    """Tag a CRM contact."""
    return str(_never(customer_id, tag))


def create_backorder(sku: str, qty: int) -> str:
    """Order more units from the supplier."""
    return str(_never(sku, qty))


READS = [
    get_order,
    list_orders,
    search_orders,
    get_customer,
    list_tickets,
    get_ticket,
    search_kb,
    get_inventory,
    get_stock,
    get_product,
    get_sales_report,
    get_exchange_rate,
    find_free_slots,
    list_events,
    crm_lookup,
    get_invoice,
    get_shipment,
    get_weather,
    file_exists,
    read_file,
    list_files,
    get_deploy_status,
    get_price,
    get_usage_stats,
    check_domain,
    get_job_status,
    load_config,
    list_claims,
    get_metric,
]
WRITES = [
    refund_order,
    cancel_order,
    send_email,
    create_ticket,
    update_ticket,
    post_message,
    create_event,
    update_event,
    reserve_stock,
    write_file,
    tag_customer,
    create_backorder,
]
#: Every case sees every tool: the plan must name only those the program can call.
ALL_TOOLS: list[Any] = [*READS, *(ptc.Tool(fn, effect="write") for fn in WRITES)]


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """One call site of the person's plan. ``args`` is a tuple (a written call) or ``U`` (a tool
    used as a value). ``at`` finds the column: by default the one ``(tool/name`` (written call)
    or bare ``tool/name`` (value) on the line; a string names another anchor; ``False`` leaves
    the column uncompared (a call written as ``#(tool/x ...)``)."""

    tool: str
    line: int
    args: Any
    bound: int | None
    conditional: bool
    at: str | bool | None = None


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    calls: tuple[Site, ...]
    writes: frozenset[str] = frozenset()
    totals: dict[str, int | None] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=lambda: ALL_TOOLS)

    @property
    def tool_set(self) -> set[str]:
        return {s.tool for s in self.calls}


def src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


CASES: list[Case] = [
    Case(
        "refund_late_orders",
        src(r"""
            (let [orders (tool/list-orders {:status "late" :per-page 50})
                  late (filter #(> (:days-late %) 7) orders)]
              (doseq [o late]
                (tool/refund-order {:order-id (:id o) :reason "late delivery"}))
              (count late))
        """),
        (
            Site("list-orders", 1, ({"status": "late", "per-page": 50},), 1, False),
            Site("refund-order", 4, ({"order-id": U, "reason": "late delivery"},), None, True),
        ),
        frozenset({"refund-order"}),
        {"list-orders": 1, "refund-order": None},
    ),
    Case(
        "order_summary_without_tools",
        src(r"""
            (let [orders data/orders
                  by-status (group-by :status orders)]
              {:open (count (get by-status "open"))
               :total (sum-by :amount orders)
               :top (->> orders (sort-by :amount >) (take 3) (map :id))})
        """),
        (),
        totals={"get-order": 0, "refund-order": 0},
    ),
    Case(
        "orders_by_literal_ids_tool_as_value",
        src(r"""
            (let [ids [1001 1002 1003 1004]
                  orders (map tool/get-order ids)]
              (filter #(= (:status %) "shipped") orders))
        """),
        (Site("get-order", 2, U, 4, False),),
        totals={"get-order": 4},
    ),
    Case(
        "alert_three_addresses",
        src(r"""
            (doseq [addr ["ops@acme.com" "billing@acme.com" "cto@acme.com"]]
              (tool/send-email {:to addr
                                :subject "Nightly sync failed"
                                :body "The nightly CRM sync did not complete."}))
        """),
        (
            Site(
                "send-email",
                2,
                (
                    {
                        "to": U,
                        "subject": "Nightly sync failed",
                        "body": "The nightly CRM sync did not complete.",
                    },
                ),
                3,
                False,
            ),
        ),
        frozenset({"send-email"}),
        {"send-email": 3},
    ),
    Case(
        "helper_called_from_three_bindings",
        src(r"""
            (defn stock-of [sku]
              (:available (tool/get-inventory sku)))

            (let [a (stock-of "SKU-100")
                  b (stock-of "SKU-200")
                  c (stock-of "SKU-300")]
              {:total (+ a b c)
               :low (filter #(< % 10) [a b c])})
        """),
        (Site("get-inventory", 2, (U,), 3, False),),
        totals={"get-inventory": 3},
    ),
    Case(
        "pmap_sales_by_region",
        src(r"""
            (let [regions ["us-east" "us-west" "eu-central"]
                  reports (pmap (fn [r] (tool/get-sales-report {:region r :quarter "Q3"})) regions)]
              (->> reports
                   (map :revenue)
                   (reduce +)))
        """),
        (Site("get-sales-report", 2, ({"region": U, "quarter": "Q3"},), 3, False),),
    ),
    Case(
        "pcalls_customer_overview",
        src(r"""
            (let [[customer orders tickets]
                  (pcalls #(tool/get-customer 42)
                          #(tool/list-orders {:customer-id 42 :status "open"})
                          #(tool/list-tickets :customer-id 42 :status "open"))]
              {:name (:name customer)
               :open-orders (count orders)
               :open-tickets (count tickets)})
        """),
        (
            Site("get-customer", 2, (42,), 1, False, False),
            Site("list-orders", 3, ({"customer-id": 42, "status": "open"},), 1, False, False),
            Site("list-tickets", 4, (K("customer-id"), 42, K("status"), "open"), 1, False, False),
        ),
        totals={"get-customer": 1, "list-orders": 1, "list-tickets": 1, "send-email": 0},
    ),
    Case(
        "escalate_ticket_by_age",
        src(r"""
            (let [t (tool/get-ticket data/ticket-id)
                  age (:age-hours t)]
              (cond
                (> age 72) (tool/update-ticket {:ticket-id (:id t) :priority "urgent"})
                (> age 24) (tool/update-ticket {:ticket-id (:id t) :priority "high"})
                :else (:status t)))
        """),
        (
            Site("get-ticket", 1, (U,), 1, False),
            Site("update-ticket", 4, ({"ticket-id": U, "priority": "urgent"},), 1, True),
            Site("update-ticket", 5, ({"ticket-id": U, "priority": "high"},), 1, True),
        ),
        frozenset({"update-ticket"}),
        {"get-ticket": 1, "update-ticket": 2},
    ),
    Case(
        "paginate_pending_orders",
        src(r"""
            (loop [page 1
                   acc []]
              (let [resp (tool/list-orders {:status "pending" :page page :per-page 100})
                    acc (into acc (:items resp))]
                (if (and (:has-more resp) (< page 20))
                  (recur (inc page) acc)
                  (count acc))))
        """),
        (
            Site(
                "list-orders",
                3,
                ({"status": "pending", "page": U, "per-page": 100},),
                None,
                False,
            ),
        ),
        totals={"list-orders": None},
    ),
    Case(
        "restock_nested_doseq",
        src(r"""
            (doseq [wh ["berlin" "austin"]
                    sku ["A-1" "A-2" "B-7"]]
              (let [s (tool/get-stock sku wh)]
                (when (< (:qty s) 5)
                  (tool/create-ticket {:title (str "Restock " sku " at " wh)
                                       :priority "high"}))))
        """),
        (
            Site("get-stock", 3, (U, U), 6, False),
            Site("create-ticket", 5, ({"title": U, "priority": "high"},), 6, True),
        ),
        frozenset({"create-ticket"}),
        {"get-stock": 6, "create-ticket": 6},
    ),
    Case(
        "list_files_over_range",
        src(r"""
            (let [pages (map (fn [p] (tool/list-files {:folder "/reports/2024" :page p}))
                             (range 1 4))
                  files (reduce into [] (map :files pages))]
              (->> files
                   (filter #(ends-with? (:name %) ".csv"))
                   (map :path)))
        """),
        (Site("list-files", 1, ({"folder": "/reports/2024", "page": U},), 3, False),),
        totals={"list-files": 3},
    ),
    Case(
        "stale_tickets_take_five",
        src(r"""
            (let [tickets (tool/list-tickets :status "open" :limit 50)
                  oldest (->> tickets (sort-by :created-at) (take 5))]
              (doseq [t oldest]
                (tool/post-message (str "Stale ticket #" (:id t) ": " (:title t)) "#support"))
              (map :id oldest))
        """),
        (
            Site("list-tickets", 1, (K("status"), "open", K("limit"), 50), 1, False),
            Site("post-message", 4, (U, "#support"), 5, True),
        ),
        frozenset({"post-message"}),
        {"list-tickets": 1, "post-message": 5},
    ),
    Case(
        "refund_or_explain_one_order",
        src(r"""
            (let [order (tool/get-order 58812)]
              (if (= (:status order) "damaged")
                (tool/refund-order {:order-id 58812 :amount (:total order) :reason "damaged"})
                (tool/send-email {:to (:email order)
                                  :subject "About your order 58812"
                                  :body "We checked your order and it arrived intact."})))
        """),
        (
            Site("get-order", 1, (58812,), 1, False),
            Site(
                "refund-order",
                3,
                ({"order-id": 58812, "amount": U, "reason": "damaged"},),
                1,
                True,
            ),
            Site(
                "send-email",
                4,
                (
                    {
                        "to": U,
                        "subject": "About your order 58812",
                        "body": "We checked your order and it arrived intact.",
                    },
                ),
                1,
                True,
            ),
        ),
        frozenset({"refund-order", "send-email"}),
    ),
    Case(
        "tag_gold_customer_when_let",
        src(r"""
            (when-let [c (tool/crm-lookup "dana@globex.com")]
              (when (= (:tier c) "gold")
                (tool/tag-customer (:id c) "vip-2024")))
        """),
        (
            Site("crm-lookup", 1, ("dana@globex.com",), 1, False),
            Site("tag-customer", 3, (U, "vip-2024"), 1, True),
        ),
        frozenset({"tag-customer"}),
    ),
    Case(
        "delayed_shipments_from_data",
        src(r"""
            (->> data/order-ids
                 (map #(tool/get-shipment %))
                 (filter #(= (:state %) "delayed"))
                 (map (fn [s] {:order (:order-id s) :eta (:eta s)})))
        """),
        (Site("get-shipment", 2, (U,), None, True, False),),
        totals={"get-shipment": None},
    ),
    Case(
        "reduce_balances_over_currencies",
        src(r"""
            (reduce (fn [total cur]
                      (let [rate (tool/get-exchange-rate cur "USD")]
                        (+ total (* (:rate rate) (get data/balances cur)))))
                    0
                    ["EUR" "GBP" "JPY" "CHF"])
        """),
        (Site("get-exchange-rate", 2, (U, "USD"), 4, False),),
        totals={"get-exchange-rate": 4},
    ),
    Case(
        "schedule_incident_review",
        src(r"""
            (let [attendees ["ana@acme.com" "raj@acme.com" "li@acme.com"]
                  slots (tool/find-free-slots {:attendees attendees :duration-minutes 30
                                               :date "2024-06-12"})
                  slot (first slots)]
              (if slot
                (tool/create-event {:title "Incident review"
                                    :start (:start slot)
                                    :attendees attendees})
                (fail "no common free slot on 2024-06-12")))
        """),
        (
            Site(
                "find-free-slots",
                2,
                (
                    {
                        "attendees": ["ana@acme.com", "raj@acme.com", "li@acme.com"],
                        "duration-minutes": 30,
                        "date": "2024-06-12",
                    },
                ),
                1,
                False,
            ),
            Site(
                "create-event",
                6,
                (
                    {
                        "title": "Incident review",
                        "start": U,
                        "attendees": ["ana@acme.com", "raj@acme.com", "li@acme.com"],
                    },
                ),
                1,
                True,
            ),
        ),
        frozenset({"create-event"}),
    ),
    Case(
        "rainy_cities_pmap_tool_value",
        src(r"""
            (let [cities ["Oslo" "Lima" "Nairobi"]
                  forecasts (pmap tool/get-weather cities)]
              (->> (map vector cities forecasts)
                   (filter (fn [[_ f]] (> (:rain-mm f) 10)))
                   (map first)))
        """),
        (Site("get-weather", 2, U, 3, False),),
        totals={"get-weather": 3},
    ),
    Case(
        "deploy_notice_helper_two_callers",
        src(r"""
            (defn notify [who msg]
              (tool/send-email {:to who :subject "Deploy status" :body msg}))

            (let [result (tool/get-deploy-status "web-frontend")]
              (doseq [who ["sre@acme.com" "dev-leads@acme.com"]]
                (notify who (str "web-frontend: " (:state result))))
              (when (= (:state result) "failed")
                (notify "cto@acme.com" "web-frontend deploy failed")))
        """),
        (
            Site("send-email", 2, ({"to": U, "subject": "Deploy status", "body": U},), 3, False),
            Site("get-deploy-status", 4, ("web-frontend",), 1, False),
        ),
        frozenset({"send-email"}),
        {"send-email": 3, "get-deploy-status": 1},
    ),
    Case(
        "fibonacci_loop_without_tools",
        src(r"""
            (loop [n 10 a 0 b 1 out []]
              (if (zero? n)
                out
                (recur (dec n) b (+ a b) (conj out a))))
        """),
        (),
    ),
    Case(
        "format_cart_without_tools",
        src(r"""
            (defn fmt-line [i item]
              (str (inc i) ". " (:name item) " x" (:qty item)))

            (->> data/cart
                 (map-indexed fmt-line)
                 (join "\n"))
        """),
        (),
    ),
    Case(
        "dispatch_table_of_tools",
        src(r"""
            (def handlers {"refund" tool/refund-order
                           "cancel" tool/cancel-order})

            (doseq [req data/requests]
              (let [f (get handlers (:action req))]
                (when f
                  (f (:order-id req)))))
        """),
        (
            Site("refund-order", 1, U, None, True),
            Site("cancel-order", 2, U, None, True),
        ),
        frozenset({"refund-order", "cancel-order"}),
        {"refund-order": None, "cancel-order": None},
    ),
    Case(
        "overdue_invoice_and_or",
        src(r"""
            (let [inv (tool/get-invoice "INV-2024-0117")]
              (or (:paid inv)
                  (and (> (:days-overdue inv) 30)
                       (tool/send-email {:to (:billing-email inv)
                                         :subject "Invoice INV-2024-0117 is overdue"
                                         :body "Please settle the invoice within 7 days."}))))
        """),
        (
            Site("get-invoice", 1, ("INV-2024-0117",), 1, False),
            Site(
                "send-email",
                4,
                (
                    {
                        "to": U,
                        "subject": "Invoice INV-2024-0117 is overdue",
                        "body": "Please settle the invoice within 7 days.",
                    },
                ),
                1,
                True,
            ),
        ),
        frozenset({"send-email"}),
    ),
    Case(
        "export_file_if_missing",
        src(r"""
            (if (tool/file-exists "/exports/q3.csv")
              (let [content (tool/read-file "/exports/q3.csv")]
                (count (split-lines content)))
              (tool/write-file "/exports/q3.csv" "id,amount\n"))
        """),
        (
            Site("file-exists", 1, ("/exports/q3.csv",), 1, False),
            Site("read-file", 2, ("/exports/q3.csv",), 1, True),
            Site("write-file", 4, ("/exports/q3.csv", "id,amount\n"), 1, True),
        ),
        frozenset({"write-file"}),
    ),
    Case(
        "returns_report_threaded_into_post",
        src(r"""
            (let [orders (tool/search-orders :query "status:returned" :limit 200)
                  report (->> orders
                              (group-by :reason)
                              (map (fn [[reason os]] (str reason ": " (count os))))
                              (join "\n"))]
              (-> (str "Returns this week\n" report)
                  (tool/post-message "#returns")))
        """),
        (
            Site("search-orders", 1, (K("query"), "status:returned", K("limit"), 200), 1, False),
            Site("post-message", 7, (U, "#returns"), 1, False),
        ),
        frozenset({"post-message"}),
    ),
    Case(
        "bare_tool_names",
        src(r"""
            (let [c (get-customer 7731)
                  orders (list-orders {:customer-id 7731})]
              {:customer (:name c)
               :lifetime (sum-by :total orders)})
        """),
        (
            Site("get-customer", 1, (7731,), 1, False, "(get-customer"),
            Site("list-orders", 2, ({"customer-id": 7731},), 1, False, "(list-orders"),
        ),
    ),
    Case(
        "price_matrix_nested_map",
        src(r"""
            (let [products ["laptop" "monitor"]
                  markets ["de" "fr" "es"]]
              (map (fn [p]
                     (map (fn [m] (tool/get-price {:product p :market m})) markets))
                   products))
        """),
        (Site("get-price", 4, ({"product": U, "market": U},), 6, False),),
        totals={"get-price": 6},
    ),
    Case(
        "churn_risk_filter_over_data",
        src(r"""
            (let [candidates data/customers
                  churn-risk (filter (fn [c]
                                       (let [s (tool/get-usage-stats (:id c))]
                                         (< (:logins-30d s) 2)))
                                     candidates)]
              (doseq [c churn-risk]
                (tool/create-ticket {:title (str "Check in with " (:name c))
                                     :assignee "success-team"})))
        """),
        (
            Site("get-usage-stats", 3, (U,), None, True),
            Site("create-ticket", 7, ({"title": U, "assignee": "success-team"},), None, True),
        ),
        frozenset({"create-ticket"}),
    ),
    Case(
        "early_return_before_refunds",
        src(r"""
            (let [orders (tool/list-orders {:status "awaiting-refund"})]
              (when (empty? orders)
                (return "nothing to refund"))
              (doseq [o orders]
                (tool/refund-order (:id o)))
              (tool/post-message (str "Refunded " (count orders) " orders") "#finance"))
        """),
        (
            Site("list-orders", 1, ({"status": "awaiting-refund"},), 1, False),
            Site("refund-order", 5, (U,), None, True),
            # may not run: the program returns early when there is nothing to refund
            Site("post-message", 6, (U, "#finance"), 1, True),
        ),
        frozenset({"refund-order", "post-message"}),
        {"list-orders": 1, "refund-order": None, "post-message": 1},
    ),
    Case(
        "reserve_two_collections_shortest",
        src(r"""
            (let [skus ["P-1" "P-2" "P-3" "P-4"]
                  qtys [5 2 9]]
              (mapv (fn [sku qty] (tool/reserve-stock sku qty)) skus qtys))
        """),
        (Site("reserve-stock", 3, (U, U), 3, False),),
        frozenset({"reserve-stock"}),
        {"reserve-stock": 3},
    ),
    Case(
        "first_warehouse_with_stock",
        src(r"""
            (let [sku "GPU-4090"]
              (some (fn [wh]
                      (let [s (tool/get-stock sku wh)]
                        (when (pos? (:qty s)) wh)))
                    ["fra-1" "ams-2" "lon-1" "par-3"]))
        """),
        (Site("get-stock", 3, ("GPU-4090", U), 4, False),),
        totals={"get-stock": 4},
    ),
    Case(
        "onboarding_tickets_over_range",
        src(r"""
            (doseq [i (range 3)]
              (tool/create-ticket {:title (str "Onboarding task " (inc i))
                                   :priority "normal"
                                   :assignee "new-hire@acme.com"}))
        """),
        (
            Site(
                "create-ticket",
                2,
                ({"title": U, "priority": "normal", "assignee": "new-hire@acme.com"},),
                3,
                False,
            ),
        ),
        frozenset({"create-ticket"}),
        {"create-ticket": 3},
    ),
    Case(
        "helper_calls_helper",
        src(r"""
            (defn fetch-contact [email]
              (tool/crm-lookup email))

            (defn ensure-tag [email tag]
              (let [c (fetch-contact email)]
                (when-not (contains? (set (:tags c)) tag)
                  (tool/tag-customer (:id c) tag))))

            (ensure-tag "ana@initech.com" "beta")
            (ensure-tag "bo@initech.com" "beta")
            (ensure-tag "cy@initech.com" "early-access")
        """),
        (
            Site("crm-lookup", 2, (U,), 3, False),
            Site("tag-customer", 7, (U, U), 3, True),
        ),
        frozenset({"tag-customer"}),
        {"crm-lookup": 3, "tag-customer": 3},
    ),
    Case(
        "tool_bound_to_a_name",
        src(r"""
            (def fetch-order tool/get-order)

            (let [ids [310 311 312]
                  orders (map fetch-order ids)]
              (sum-by :total orders))
        """),
        (Site("get-order", 1, U, 3, False),),
        totals={"get-order": 3},
    ),
    Case(
        "lost_parcel_refund_and_email",
        src(r"""
            (let [order (tool/get-order data/order-id)
                  shipment (tool/get-shipment (:tracking order))]
              (when (and (= (:state shipment) "lost") (not (:refunded order)))
                (tool/refund-order {:order-id (:id order) :reason "lost in transit"})
                (tool/send-email {:to (:email order)
                                  :subject "Your refund is on its way"
                                  :body "Your parcel was lost; we refunded the full amount."})))
        """),
        (
            Site("get-order", 1, (U,), 1, False),
            Site("get-shipment", 2, (U,), 1, False),
            Site("refund-order", 4, ({"order-id": U, "reason": "lost in transit"},), 1, True),
            Site(
                "send-email",
                5,
                (
                    {
                        "to": U,
                        "subject": "Your refund is on its way",
                        "body": "Your parcel was lost; we refunded the full amount.",
                    },
                ),
                1,
                True,
            ),
        ),
        frozenset({"refund-order", "send-email"}),
    ),
    Case(
        "annotate_large_meetings",
        src(r"""
            (let [events (tool/list-events {:calendar "team-platform" :date "2024-06-14"})
                  large (->> events
                             (filter #(> (count (:attendees %)) 8))
                             (map :id))]
              (doseq [id large]
                (tool/update-event {:event-id id :note "Large meeting: please share an agenda."}))
              (count large))
        """),
        (
            Site(
                "list-events", 1, ({"calendar": "team-platform", "date": "2024-06-14"},), 1, False
            ),
            Site(
                "update-event",
                6,
                ({"event-id": U, "note": "Large meeting: please share an agenda."},),
                None,
                True,
            ),
        ),
        frozenset({"update-event"}),
    ),
    Case(
        "blocked_domains_filter_predicate",
        src(r"""
            (let [domains ["acme.com" "globex.com" "initech.com" "umbrella.com" "hooli.com"]
                  blocked (filter #(:blocked (tool/check-domain %)) domains)]
              (if (seq blocked)
                (tool/create-ticket {:title (str "Blocked domains: " (join ", " blocked))
                                     :priority "high"})
                "all domains ok"))
        """),
        (
            Site("check-domain", 2, (U,), 5, False),
            Site("create-ticket", 4, ({"title": U, "priority": "high"},), 1, True),
        ),
        frozenset({"create-ticket"}),
        {"check-domain": 5, "create-ticket": 1},
    ),
    Case(
        "kb_gaps_from_literal_queries",
        src(r"""
            (let [queries ["reset password" "change email" "delete account"]
                  results (map (fn [q] {:q q :hits (tool/search-kb :query q :limit 3)}) queries)
                  missing (filter #(empty? (:hits %)) results)]
              (doseq [m missing]
                (tool/create-ticket {:title (str "Write KB article: " (:q m)) :priority "low"}))
              (map :q missing))
        """),
        (
            Site("search-kb", 2, (K("query"), U, K("limit"), 3), 3, False),
            # missing is a filter of the three results: at most three tickets
            Site("create-ticket", 5, ({"title": U, "priority": "low"},), 3, True),
        ),
        frozenset({"create-ticket"}),
        {"search-kb": 3, "create-ticket": 3},
    ),
    Case(
        "cond_with_tool_calls_in_tests",
        src(r"""
            (let [sku data/sku]
              (cond
                (:discontinued (tool/get-product sku)) "discontinued"
                (pos? (:qty (tool/get-inventory sku))) "in stock"
                :else (do (tool/create-backorder {:sku sku :qty 10})
                          "backordered")))
        """),
        (
            Site("get-product", 3, (U,), 1, False),
            Site("get-inventory", 4, (U,), 1, True),
            Site("create-backorder", 5, ({"sku": U, "qty": 10},), 1, True),
        ),
        frozenset({"create-backorder"}),
    ),
    Case(
        "one_on_ones_for_defined_team",
        src(r"""
            (def team [{:name "Ana" :email "ana@acme.com" :tz "Europe/Berlin"}
                       {:name "Raj" :email "raj@acme.com" :tz "Asia/Kolkata"}])

            (doseq [{:keys [name email]} team]
              (let [free (tool/find-free-slots {:attendees [email] :duration-minutes 15
                                                :date "2024-06-17"})]
                (tool/create-event {:title (str "1:1 with " name)
                                    :start (:start (first free))
                                    :attendees [email "lead@acme.com"]})))
        """),
        (
            Site(
                "find-free-slots",
                5,
                ({"attendees": [U], "duration-minutes": 15, "date": "2024-06-17"},),
                2,
                False,
            ),
            Site(
                "create-event",
                7,
                ({"title": U, "start": U, "attendees": [U, "lead@acme.com"]},),
                2,
                False,
            ),
        ),
        frozenset({"create-event"}),
        {"find-free-slots": 2, "create-event": 2},
    ),
    Case(
        "claims_with_config_limit",
        src(r"""
            (let [cfg (tool/load-config)
                  limit (:max-refund cfg)
                  claims (tool/list-claims {:status "approved"})]
              (doseq [c claims]
                (if (<= (:amount c) limit)
                  (tool/refund-order {:order-id (:order-id c) :amount (:amount c)
                                      :reason "approved claim"})
                  (tool/create-ticket {:title (str "Manual review: claim " (:id c))
                                       :priority "high"})))
              (count claims))
        """),
        (
            Site("load-config", 1, (), 1, False),
            Site("list-claims", 3, ({"status": "approved"},), 1, False),
            Site(
                "refund-order",
                6,
                ({"order-id": U, "amount": U, "reason": "approved claim"},),
                None,
                True,
            ),
            Site("create-ticket", 8, ({"title": U, "priority": "high"},), None, True),
        ),
        frozenset({"refund-order", "create-ticket"}),
    ),
    Case(
        "poll_export_job",
        src(r"""
            (loop [attempt 1]
              (let [job (tool/get-job-status "export-7781")]
                (cond
                  (= (:state job) "done") (tool/read-file (:output-path job))
                  (< attempt 5) (recur (inc attempt))
                  :else (fail "export did not finish"))))
        """),
        (
            Site("get-job-status", 2, ("export-7781",), None, False),
            # the branch that reads the file ends the loop: it runs at most once
            Site("read-file", 4, (U,), 1, True),
        ),
        totals={"get-job-status": None, "read-file": 1},
    ),
    Case(
        "release_checklist_map_indexed",
        src(r"""
            (let [steps ["Backup database" "Run migrations" "Smoke test" "Flip traffic"]]
              (map-indexed (fn [i step]
                             (tool/create-ticket {:title (str (inc i) ". " step)
                                                  :priority "high"
                                                  :assignee "release-captain"}))
                           steps))
        """),
        (
            Site(
                "create-ticket",
                3,
                ({"title": U, "priority": "high", "assignee": "release-captain"},),
                4,
                False,
            ),
        ),
        frozenset({"create-ticket"}),
        {"create-ticket": 4},
    ),
    Case(
        "payment_reminders_take_ten",
        src(r"""
            (->> data/invoices
                 (filter #(= (:status %) "unpaid"))
                 (sort-by :due-date)
                 (take 10)
                 (pmap #(tool/send-email {:to (:email %)
                                          :subject "Payment reminder"
                                          :body (str "Invoice " (:id %) " is due.")})))
        """),
        (
            Site(
                "send-email",
                5,
                ({"to": U, "subject": "Payment reminder", "body": U},),
                10,
                True,
                False,
            ),
        ),
        frozenset({"send-email"}),
        {"send-email": 10},
    ),
    Case(
        "weekly_metrics_from_defined_constants",
        src(r"""
            (def report-channel "#weekly-metrics")
            (def week "2024-W23")

            (let [signups (tool/get-metric {:name "signups" :week week})
                  churn (tool/get-metric {:name "churn" :week week})]
              (tool/post-message (str "Week " week ": " signups " signups, " churn " churned")
                                 report-channel))
        """),
        (
            Site("get-metric", 4, ({"name": "signups", "week": "2024-W23"},), 1, False),
            Site("get-metric", 5, ({"name": "churn", "week": "2024-W23"},), 1, False),
            Site("post-message", 6, (U, "#weekly-metrics"), 1, False),
        ),
        frozenset({"post-message"}),
        {"get-metric": 2, "post-message": 1},
    ),
]


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------


def _column(source: str, site: Site) -> int | None:
    """The column the person reads off the source: where ``(tool/name`` (a written call) or
    ``tool/name`` (a tool value) is written on the site's line."""
    if site.at is False:
        return None
    text = source.splitlines()[site.line - 1]
    value = site.args is U
    anchor = site.at if isinstance(site.at, str) else f"tool/{site.tool}"
    if not value and site.at is None:
        anchor = f"(tool/{site.tool}"
    found = []
    start = text.find(anchor)
    while start != -1:
        if not (value and site.at is None and start > 0 and text[start - 1] == "("):
            found.append(start + 1)
        start = text.find(anchor, start + 1)
    assert len(found) == 1, f"the table is wrong: {anchor!r} on line {site.line}: {text!r}"
    return found[0]


def _show_expected(case: Case) -> str:
    rows = [f"tools={sorted(case.tool_set)} writes={sorted(case.writes)}"]
    for s in case.calls:
        col = _column(case.source, s)
        rows.append(
            f"  {s.tool} line {s.line} col {col} args={s.args!r} bound={s.bound} "
            f"conditional={s.conditional}"
        )
    return "\n".join(rows)


def _show_computed(plan: Any) -> str:
    rows = [plan.render(), f"tools={plan.tools} writes={plan.writes} any_tool={plan.any_tool}"]
    for c in plan.calls:
        rows.append(
            f"  {c.tool} line {c.line} col {c.column} args={c.args!r} bound={c.bound} "
            f"conditional={c.conditional} repeats={c.repeats} via={c.via}"
        )
    return "\n".join(rows)


def _same_args(computed: Any, expected: Any) -> bool:
    if expected is U:
        return computed is U
    return isinstance(computed, tuple) and computed == expected


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_plan_is_what_a_person_reads_off_the_program(case: Case) -> None:
    check = ptc.check(case.source, tools=case.tools)
    assert check.ok, [f"{e.line}:{e.column} {e.message}" for e in check.errors]
    plan = check.plan
    assert plan is not None

    problems: list[str] = []
    if set(plan.tools) != case.tool_set:
        problems.append(f"tools: expected {sorted(case.tool_set)}, computed {list(plan.tools)}")
    if set(plan.writes) != set(case.writes):
        problems.append(f"writes: expected {sorted(case.writes)}, computed {list(plan.writes)}")
    if plan.any_tool:
        problems.append("any_tool: expected False")

    expected_keys = Counter((s.tool, s.line) for s in case.calls)
    assert all(n == 1 for n in expected_keys.values()), "the table has two sites on one line"
    computed_keys = Counter((c.tool, c.line) for c in plan.calls)
    if computed_keys != expected_keys:
        problems.append(
            f"sites (tool, line): expected {sorted(expected_keys)},"
            f" computed {sorted(computed_keys)}"
        )
    by_key = {(c.tool, c.line): c for c in plan.calls}
    for s in case.calls:
        c = by_key.get((s.tool, s.line))
        if c is None:
            continue
        where = f"{s.tool} line {s.line}"
        if not _same_args(c.args, s.args):
            problems.append(f"{where} args: expected {s.args!r}, computed {c.args!r}")
        if c.bound != s.bound:
            problems.append(f"{where} bound: expected {s.bound}, computed {c.bound}")
        if c.conditional != s.conditional:
            problems.append(
                f"{where} conditional: expected {s.conditional}, computed {c.conditional}"
            )
        if c.repeats != (s.bound != 1):
            problems.append(f"{where} repeats: expected {s.bound != 1}, computed {c.repeats}")
        col = _column(case.source, s)
        if col is not None and c.column != col:
            problems.append(f"{where} column: expected {col}, computed {c.column}")
        if c.via is not None:
            problems.append(f"{where} via: expected None, computed {c.via!r}")
    for tool, total in case.totals.items():
        if plan.bound(tool) != total:
            problems.append(f"bound({tool!r}): expected {total}, computed {plan.bound(tool)}")

    assert not problems, (
        "\n".join(problems)
        + "\n\nexpected (a person's plan):\n"
        + _show_expected(case)
        + "\n\ncomputed:\n"
        + _show_computed(plan)
        + "\n\nsource:\n"
        + case.source
    )


def test_the_table_has_at_least_forty_programs() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert sum(1 for c in CASES if not c.calls) >= 3  # a few programs call no tool
    assert sum(1 for c in CASES if c.writes) >= 20  # and many change something

"""A catalogue of 500 realistic tools, made deterministically, for issue 33 §2 (tools found on
demand): 20 business domains of 5 entities each, 5 of 7 verbs per entity (get, list, create,
update, cancel, search, export), named ``domain-verb-entity`` (``crm-get-contact``,
``billing-list-invoices``), each with a signature, an effect (writes for create, update and
cancel) and a one-sentence description.

Descriptions are made from a few templates per verb, so tools share most of their words as
real catalogues do ("Fetch one invoice by id ...", "List invoices page by page ..."); each
also names one detail of its own (a field, a report, a rule: ``renewal``, ``payslip``,
``layover``), and often one of a few details common to many tools (status, owner, region...).
The benchmark's query for a tool is the rarest word of its description across the catalogue.

``python benches/tool_catalogue.py`` prints the catalogue, one tool a line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import ptc

# domain -> (its entities, singular; 25 details of its own, one for each of its tools)
DOMAINS: dict[str, tuple[list[str], list[str]]] = {
    "crm": (
        ["contact", "lead", "deal", "account", "note"],
        "phone birthday linkedin timezone pipeline stage probability territory industry"
        " headcount referral webinar nurture churn renewal upsell quota handshake rapport"
        " persona firmographics lifecycle prospecting salutation nickname".split(),
    ),
    "billing": (
        ["invoice", "payment", "refund", "subscription", "tax-rate"],
        "dunning proration overdue remittance iban chargeback dispute installment vat"
        " withholding surcharge gratuity receipt ledger settlement acquirer cardholder"
        " tokenized recurring metered trial grace coupon arrears memo".split(),
    ),
    "inventory": (
        ["product", "stock-level", "warehouse", "supplier", "purchase-order"],
        "sku barcode shelf bin aisle reorder safety lot expiry serial pallet bundle"
        " variant dimensions weight hazmat consignment backorder cycle count shrinkage"
        " valuation fifo replenishment dropship".split(),
    ),
    "shipping": (
        ["shipment", "carrier", "parcel", "pickup", "return"],
        "tracking customs manifest courier freight insurance signature waybill dock"
        " transit zone postcode undeliverable doorstep locker cutoff oversize dangerous"
        " incoterms brokerage consolidation rma crossdock lastmile proof".split(),
    ),
    "hr": (
        ["employee", "leave-request", "payslip", "position", "review"],
        "onboarding probation sabbatical maternity overtime payroll pension bonus"
        " headhunter vacancy shortlist interview offboarding grievance appraisal"
        " competency succession tenure severance allowance commute badge relocation"
        " mentoring diversity".split(),
    ),
    "analytics": (
        ["dashboard", "metric", "funnel", "cohort", "segment"],
        "retention conversion bounce pageview attribution anomaly percentile histogram"
        " sampling widget drilldown baseline seasonality uplift correlation heatmap"
        " sessionization dimension granularity rollup threshold sparkline benchmark"
        " outlier annotation".split(),
    ),
    "support": (
        ["ticket", "macro", "survey", "sla-policy", "queue"],
        "escalation csat nps backlog triage assignee canned firstresponse resolution"
        " reopened sentiment transcript chatbot callback voicemail holiday businesshours"
        " breach urgency knowledgebase deflection merge spam satisfaction followup".split(),
    ),
    "calendar": (
        ["event", "room", "availability", "reminder", "attendee"],
        "recurrence rsvp timeslot videolink projector capacity catering agenda organizer"
        " busy freebusy invitation declined tentative allday weekday snooze alarm"
        " ics buffer overlap booking whiteboard quorum conflict".split(),
    ),
    "files": (
        ["document", "folder", "share-link", "file-version", "upload"],
        "pdf thumbnail checksum mimetype watermark ocr preview quota trash restore"
        " permission password expiration download revision diff rename breadcrumb"
        " multipart resumable virus encryption retention lock starred".split(),
    ),
    "search": (
        ["index", "query-log", "synonym", "ranking-rule", "suggestion"],
        "autocomplete typo stemming tokenizer boost relevance facet shard replica"
        " reindex stopword clickthrough zeroresult misspelling embedding vector rerank"
        " freshness popularity personalization snippet highlight analyzer phrase"
        " proximity".split(),
    ),
    "marketing": (
        ["campaign", "email-template", "audience", "promo-code", "landing-page"],
        "newsletter unsubscribe opens clicks bounce subjectline preheader abtest"
        " utm influencer affiliate giveaway sweepstakes loyalty referralbonus banner"
        " retargeting lookalike budgetcap impressions reach frequency optin doubleoptin"
        " sender".split(),
    ),
    "projects": (
        ["project", "task", "milestone", "timesheet", "sprint"],
        "gantt dependency blocker assignee estimate storypoints burndown velocity backlog"
        " kanban swimlane deadline subtask checklist billable hours retrospective standup"
        " roadmap epic scope risk stakeholder charter kickoff".split(),
    ),
    "finance": (
        ["budget", "expense", "journal-entry", "forecast", "exchange-rate"],
        "mileage per-diem reimbursement accrual depreciation amortization variance capex"
        " opex costcenter chartofaccounts reconciliation audit quarterly fiscal spot"
        " hedge treasury cashflow liquidity receivable payable petty cashbox mealcard".split(),
    ),
    "legal": (
        ["contract", "clause", "signature-request", "nda", "compliance-check"],
        "indemnity liability jurisdiction arbitration termination counterparty redline"
        " notarized witness esign countersign gdpr sanctions kyc aml whistleblower"
        " subpoena litigation trademark patent copyright licensing escrow"
        " confidentiality noncompete".split(),
    ),
    "security": (
        ["user-role", "api-key", "audit-log", "login-session", "mfa-device"],
        "rotation scope revoke privilege least phishing bruteforce lockout totp"
        " yubikey fingerprint geofence ipallowlist sso saml oauth jwt entitlement"
        " impersonation suspicious breachalert passwordless recovery secret vault".split(),
    ),
    "devops": (
        ["deployment", "build", "incident", "alert", "server"],
        "rollback canary bluegreen pipeline artifact docker kubernetes helm terraform"
        " postmortem oncall pager uptime latency cpu memoryleak disk autoscale loadbalancer"
        " dns certificate ssl cron logs tracing".split(),
    ),
    "ecommerce": (
        ["cart", "order", "wishlist", "product-review", "checkout"],
        "abandoned upsells crosssell giftwrap giftcard storecredit taxexempt guest"
        " express preorder backordered fulfillment packing invoice-copy stars verified"
        " photos moderation helpful shipping-method address billing-address"
        " clickandcollect installments bnpl".split(),
    ),
    "procurement": (
        ["vendor", "quote", "requisition", "approval", "catalog-item"],
        "tender rfq rfp bid sourcing onboarding-vendor w9 diversity-spend punchout"
        " threshold delegation approver matching three-way goods-receipt leadtime moq"
        " incumbent scorecard spend maverick consortium framework blanket catalogsync".split(),
    ),
    "education": (
        ["course", "lesson", "enrollment", "quiz", "certificate"],
        "syllabus prerequisite gradebook rubric plagiarism proctoring transcript-copy"
        " credits semester tuition scholarship waitlist attendance homework deadline-extension"
        " lecture slides flashcards badge-earned alumni tutor cohort-start accreditation"
        " diploma microcredential".split(),
    ),
    "travel": (
        ["booking", "flight", "hotel", "itinerary", "visa"],
        "layover baggage seatmap boarding upgrade frequentflyer checkin checkout-time"
        " minibar concierge shuttle passport embassy biometrics jetlag timezone-shift"
        " perdiem-travel carbon offset refundable farebasis codeshare lounge stopover"
        " redeye".split(),
    ),
}

VERBS = ["get", "list", "create", "update", "cancel", "search", "export"]
#: the verbs whose tools change something outside the run
WRITES = {"create", "update", "cancel"}
#: details many tools share, as real catalogues do
COMMON = ["status", "owner", "region", "currency", "priority", "tags", "created date", "notes"]

TEMPLATES: dict[str, list[str]] = {
    "get": [
        "Fetch one {e} by id, including its {d} and {c}.",
        "Return a single {e} with its {d}, looked up by id.",
    ],
    "list": [
        "List {es} page by page, filtered by {d} or {c}.",
        "Page through {es}, newest first, with their {d}.",
    ],
    "create": [
        "Create a new {e} from a {d} and an optional {c}.",
        "Add a {e}; the {d} is required.",
    ],
    "update": [
        "Change the {d} or {c} of an existing {e}.",
        "Edit a {e} in place, for example its {d}.",
    ],
    "cancel": [
        "Cancel a pending {e}; its {d} is kept for the record.",
        "Stop a {e} that has not finished and release its {d}.",
    ],
    "search": [
        "Search {es} by free text over {d} and {c}.",
        "Find {es} whose {d} matches the words given.",
    ],
    "export": [
        "Export {es} as CSV with their {d} and {c} columns.",
        "Download every {e} as a spreadsheet, {d} included.",
    ],
}

SIGNATURES = {
    "get": "(id :string) -> :map",
    "list": "(limit :int, cursor :string?) -> [:map]",
    "create": "(fields :map) -> :map",
    "update": "(id :string, fields :map) -> :map",
    "cancel": "(id :string, reason :string?) -> :map",
    "search": "(text :string, limit :int?) -> [:map]",
    "export": "(filters :map?) -> :string",
}


def plural(word: str) -> str:
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy")):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


@dataclass(frozen=True)
class CatalogueTool:
    name: str
    signature: str
    description: str
    effect: str


def catalogue(seed: int = 33) -> list[CatalogueTool]:
    """The 500 tools, in domain order (the same list for the same seed)."""
    rng = random.Random(seed)
    out: list[CatalogueTool] = []
    for domain, (entities, details) in DOMAINS.items():
        if len(details) != 25:
            raise ValueError(f"{domain} has {len(details)} details, not 25")
        shuffled = list(details)
        rng.shuffle(shuffled)
        k = 0
        for entity in entities:
            for verb in sorted(rng.sample(VERBS, 5), key=VERBS.index):
                e = entity.replace("-", " ")
                es = plural(e)
                slug = plural(entity) if verb in ("list", "search", "export") else entity
                template = rng.choice(TEMPLATES[verb])
                detail = shuffled[k].replace("-", " ")
                k += 1
                doc = template.format(e=e, es=es, d=detail, c=rng.choice(COMMON))
                out.append(
                    CatalogueTool(
                        f"{domain}-{verb}-{slug}",
                        SIGNATURES[verb],
                        doc,
                        "write" if verb in WRITES else "read",
                    )
                )
    return out


def _call(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {}


def tools(seed: int = 33) -> list[ptc.Tool]:
    """The catalogue as ``ptc.Tool``s (each answers ``{}``), for a Session or an agent."""
    return [
        ptc.Tool(
            _call,
            name=t.name,
            signature=t.signature,
            description=t.description,
            effect="write" if t.effect == "write" else "read",
        )
        for t in catalogue(seed)
    ]


if __name__ == "__main__":
    for t in catalogue():
        print(f"{t.name:44} {t.effect:5} {t.signature:40} {t.description}")

"""The text bank of the retrieval dev set: claim subjects and the aspects a claim splits into.

Every aspect is one part of a claim an organisation makes about itself, with
the prose each stage of a claim review writes about it: the planner's
question, the analyst's finding and evidence (as of the latest round and of
an earlier one), the reviewer's gap note, a follow-up analyst's finding, and
two questions a reviewer may ask about it — one that shares words with the
finding (``lexical``) and one that shares none with anything the relevant
analysts wrote (``paraphrase``; the generator asserts it).

Siblings compete for real: every aspect of a claim is about the same subject
(its name appears in every analyst's text), findings share the register of
audit prose ("filings", "records", "percent"), and the merge and planner
mention every aspect. ``{s}`` is the subject, ``{y}`` the year.

Aspects are split once, by name, between the dev and held-out sets
(:data:`HELDOUT_ASPECTS`), so tuning on the dev split never sees a held-out
text. The subjects are shared: a name is not what a method could overfit to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ASPECTS", "HELDOUT_ASPECTS", "SUBJECTS", "Aspect"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Aspect:
    """One part of a claim and what each stage writes about it."""

    name: str
    claim: str
    question: str
    finding: str
    earlier: str
    evidence: tuple[str, ...]
    lexical: str
    paraphrase: str
    gap: str
    followup: str
    followup_evidence: tuple[str, ...]


SUBJECTS: Final = (
    "Northwind Foods",
    "Harbor City Transit",
    "Keller General Hospital",
    "Bluepeak Mining",
    "Solano Water District",
    "Verity Savings Bank",
    "Atlas Freight",
    "Crescent Software",
)

ASPECTS: Final = (
    Aspect(
        name="headcount",
        claim="grew its workforce by 14 percent in {y}",
        question="Did {s} grow its workforce by 14 percent in {y}?",
        finding="Payroll filings show {s} employed 1,240 people at the end of {y}, up from 1,090 a year earlier, a rise of about 14 percent that matches the claim.",
        earlier="The workforce figure for {s} could not be checked yet: the payroll filing for {y} was not published when this round ran.",
        evidence=(
            "{s} payroll filing for {y}, schedule B",
            "state labour office employer register",
        ),
        lexical="Is the 14 percent workforce growth at {s} backed by the payroll filings?",
        paraphrase="Were more staff hired? How many employees joined?",
        gap="The workforce claim for {s} rests on payroll filings alone; agency and contract workers were not counted.",
        followup="Agency invoices show {s} ended 60 contract placements during {y}, so total labour grew about 8 percent once contractors are included.",
        followup_evidence=("{s} staffing agency invoices for {y}",),
    ),
    Aspect(
        name="emissions",
        claim="cut its carbon emissions by a fifth",
        question="Did {s} cut its carbon emissions by a fifth?",
        finding="The verified greenhouse gas inventory of {s} reports 41,000 tonnes of CO2 equivalent for {y} against 52,000 tonnes in the base year, a 21 percent cut.",
        earlier="The {s} greenhouse gas inventory for {y} was still unverified; the draft figure of 44,000 tonnes CO2 equivalent may change.",
        evidence=(
            "third-party verification statement of the {y} inventory",
            "{s} sustainability report, scope 1 and 2 table",
        ),
        lexical="Does the verified inventory confirm the cut in CO2 emissions at {s}?",
        paraphrase="Has pollution caused by burning fuel actually dropped? What did auditors sign off?",
        gap="The emissions claim for {s} covers scope 1 and 2 only; supply chain emissions were left out of the inventory.",
        followup="Scope 3 estimates for {s} add 130,000 tonnes of CO2 equivalent from purchased goods, which rose 6 percent in {y}.",
        followup_evidence=("{s} scope 3 screening workbook",),
    ),
    Aspect(
        name="safety",
        claim="halved its workplace injury rate",
        question="Did {s} halve its workplace injury rate?",
        finding="Incident logs filed with the safety regulator show {s} recorded 2.1 lost-time injuries per 200,000 hours in {y}, down from 4.3, which is roughly half.",
        earlier="Injury logs for {s} were incomplete: two sites had not filed their incident records with the safety regulator.",
        evidence=(
            "OSHA form 300A summaries for each {s} site",
            "{s} health and safety committee minutes",
        ),
        lexical="Do the incident logs support the halved injury rate at {s}?",
        paraphrase="Are workers getting hurt less often? Any accident statistics?",
        gap="The injury rate for {s} counts lost-time injuries only; near misses and restricted-duty cases were not reviewed.",
        followup="Restricted-duty cases at {s} rose from 35 to 48 in {y}, so the overall recordable rate fell by a third, not by half.",
        followup_evidence=("{s} restricted-duty case register",),
    ),
    Aspect(
        name="revenue",
        claim="grew revenue to 480 million dollars",
        question="Did {s} grow revenue to 480 million dollars in {y}?",
        finding="Audited accounts of {s} report revenue of 478 million dollars for {y}, up from 431 million, consistent with the claimed 480 million after rounding.",
        earlier="Revenue for {s} in {y} is only available as an unaudited trading update of 470 to 490 million dollars.",
        evidence=(
            "{s} audited financial statements {y}, income statement",
            "auditor opinion letter",
        ),
        lexical="Do the audited accounts confirm revenue of 480 million dollars at {s}?",
        paraphrase="How much money did sales bring? Is that top line as big as stated?",
        gap="The revenue claim for {s} includes a one-off asset sale booked as revenue; recurring revenue was not separated.",
        followup="Excluding the 22 million dollar asset sale, recurring revenue of {s} was 456 million dollars in {y}.",
        followup_evidence=("{s} segment note 4 of the {y} accounts",),
    ),
    Aspect(
        name="costs",
        claim="kept operating costs flat",
        question="Did {s} keep operating costs flat in {y}?",
        finding="Operating expenses of {s} were 312 million dollars in {y} against 309 million the year before, a 1 percent increase that is close to flat.",
        earlier="Operating expense figures for {s} were available only for the first half of {y}, at 158 million dollars.",
        evidence=(
            "{s} audited income statement {y}, operating expense lines",
            "management discussion of cost drivers",
        ),
        lexical="Were operating costs at {s} really flat according to the expense figures?",
        paraphrase="Has spending on running this business stayed level? Any budget overruns?",
        gap="The operating cost claim for {s} ignores capitalised software spending that moved off the expense lines.",
        followup="{s} capitalised 18 million dollars of software work in {y}; adding it back, operating outlays grew 7 percent.",
        followup_evidence=("{s} fixed asset note, software additions",),
    ),
    Aspect(
        name="complaints",
        claim="cut customer complaints by 30 percent",
        question="Did {s} cut customer complaints by 30 percent?",
        finding="The complaints register of {s} logged 8,900 customer complaints in {y} against 12,600 the year before, a 29 percent fall.",
        earlier="The {s} complaints register was being migrated to a new system; counts for the last quarter of {y} were missing.",
        evidence=("{s} complaints register extract, {y}", "ombudsman referral statistics"),
        lexical="Does the complaints register show a 30 percent fall in customer complaints at {s}?",
        paraphrase="Are clients less unhappy now? Fewer grievances reaching watchdogs?",
        gap="The complaint figures for {s} exclude social media complaints, which the register does not capture.",
        followup="Social media monitoring counted 5,400 public complaints about {s} in {y}, up 12 percent, offsetting part of the register's fall.",
        followup_evidence=("{s} social listening dashboard export",),
    ),
    Aspect(
        name="suppliers",
        claim="audited every tier-one supplier",
        question="Did {s} audit every tier-one supplier in {y}?",
        finding="Supplier audit records show {s} completed on-site audits of 112 of its 118 tier-one suppliers in {y}; six audits were postponed to the next year.",
        earlier="Supplier audit records for {s} listed 64 completed audits by mid {y}, with the remaining tier-one suppliers scheduled.",
        evidence=("{s} supplier audit tracker", "audit firm engagement letters"),
        lexical="Were all tier-one suppliers of {s} audited according to the supplier audit records?",
        paraphrase="Has every direct vendor been inspected physically? Which vendors got skipped?",
        gap="The supplier audit claim for {s} counts postponed audits as done; six tier-one suppliers had no audit in {y}.",
        followup="Four of the six postponed supplier audits at {s} found labour violations once completed early the next year.",
        followup_evidence=("{s} supplier corrective action log",),
    ),
    Aspect(
        name="water",
        claim="reduced water use by 25 percent",
        question="Did {s} reduce water use by 25 percent?",
        finding="Meter readings show {s} drew 3.2 million cubic metres of water in {y} against 4.1 million in the base year, a 22 percent reduction.",
        earlier="Water meter data for {s} covered only nine months of {y}; a full-year figure was not yet available.",
        evidence=("utility water meter statements for {s}", "{s} environmental permit returns"),
        lexical="Do the meter readings confirm the 25 percent cut in water use at {s}?",
        paraphrase="Is less being pumped out from rivers and wells? How big is that drop?",
        gap="The water claim for {s} nets off recycled water that was counted twice in the meter totals.",
        followup="Correcting the double-counted recycled volumes, {s} used 3.5 million cubic metres in {y}, a 15 percent reduction.",
        followup_evidence=("{s} recycled water balance sheet",),
    ),
    Aspect(
        name="delivery",
        claim="delivered 95 percent of orders on time",
        question="Did {s} deliver 95 percent of orders on time in {y}?",
        finding="Dispatch system data show {s} delivered 93.8 percent of 2.4 million orders within the promised window in {y}, just short of the 95 percent claimed.",
        earlier="On-time delivery data for {s} came from a sample of one region only and showed 96 percent of orders delivered within the window.",
        evidence=(
            "{s} dispatch system export, delivery timestamps",
            "carrier performance scorecards",
        ),
        lexical="Were 95 percent of orders at {s} delivered on time according to the dispatch data?",
        paraphrase="Do parcels arrive punctually? How often are shipments late?",
        gap="The delivery claim for {s} measures dispatch to the carrier, not arrival at the customer.",
        followup="Carrier arrival scans put on-time arrival for {s} at 89 percent in {y}, lower than the dispatch figure.",
        followup_evidence=("carrier arrival scan feed for {s}",),
    ),
    Aspect(
        name="energy",
        claim="ran its sites on 100 percent renewable electricity",
        question="Did {s} run its sites on 100 percent renewable electricity?",
        finding="Energy certificates show {s} matched 100 percent of its 96 gigawatt hours of electricity in {y} with renewable certificates, 40 percent of them from a direct solar contract.",
        earlier="{s} had renewable certificates for 70 percent of its electricity in {y}; purchases for the remainder were pending.",
        evidence=(
            "{s} renewable energy certificate retirement records",
            "solar power purchase agreement summary",
        ),
        lexical="Do the renewable energy certificates cover all the electricity used by {s}?",
        paraphrase="Is their juice green? Do facilities still burn coal and gas?",
        gap="The renewable electricity claim for {s} relies on unbundled certificates from other regions.",
        followup="Only 38 gigawatt hours at {s} came from local renewable supply; the rest of the certificates were bought from other grids.",
        followup_evidence=("{s} certificate origin breakdown",),
    ),
    Aspect(
        name="security",
        claim="had no data breaches",
        question="Did {s} have no data breaches in {y}?",
        finding="Breach notification records show {s} filed no data breach notices with the privacy regulator in {y}; its penetration test found two medium-risk flaws, since fixed.",
        earlier="Security records for {s} were under review after a suspected intrusion; no breach notice had been filed pending the investigation.",
        evidence=("privacy regulator breach notice register", "{s} penetration test report {y}"),
        lexical="Do breach notification records confirm no data breaches at {s}?",
        paraphrase="Were hackers kept out? Has personal information leaked?",
        gap="The no-breach claim for {s} rests on regulator filings; an incident at a cloud vendor holding its data was not examined.",
        followup="A cloud vendor of {s} disclosed an exposed storage bucket holding 14,000 customer records during {y}.",
        followup_evidence=("vendor incident disclosure notice",),
    ),
    Aspect(
        name="recalls",
        claim="had no product recalls",
        question="Did {s} have no product recalls in {y}?",
        finding="The product safety authority database lists no recalls of {s} products in {y}; its quality system logged 37 defect reports, all closed.",
        earlier="A possible recall of one {s} product line was under assessment by the product safety authority at the time of this round.",
        evidence=("product safety authority recall database", "{s} quality management defect log"),
        lexical="Does the recall database confirm no product recalls for {s}?",
        paraphrase="Has anything sold been pulled off shelves? Were faulty goods withdrawn?",
        gap="The recall claim for {s} does not cover voluntary market withdrawals, which the authority database omits.",
        followup="{s} quietly withdrew one batch of 4,000 units from retailers in {y} after a labelling fault.",
        followup_evidence=("{s} retailer withdrawal notice",),
    ),
    Aspect(
        name="wages",
        claim="raised its lowest pay to a living wage",
        question="Did {s} raise its lowest pay to a living wage?",
        finding="Payroll data show the lowest hourly rate at {s} was 17.40 dollars from April {y}, above the regional living wage benchmark of 16.90 dollars.",
        earlier="{s} announced a living wage for April {y}; payroll data confirming the new minimum rate were not yet available.",
        evidence=("{s} payroll rate table", "regional living wage foundation benchmark"),
        lexical="Do payroll data show the lowest pay at {s} reaching the living wage?",
        paraphrase="Can worst-compensated workers afford rent and groceries? Are janitors earning enough?",
        gap="The living wage claim for {s} covers direct employees only; outsourced cleaning and security staff were not checked.",
        followup="Outsourced cleaners at {s} were paid 15.10 dollars an hour in {y}, below the living wage benchmark.",
        followup_evidence=("facilities contractor pay schedule for {s}",),
    ),
    Aspect(
        name="fines",
        claim="paid no regulatory fines",
        question="Did {s} pay no regulatory fines in {y}?",
        finding="Enforcement registers of the three relevant regulators show no fines imposed on {s} in {y}; one warning letter was issued and answered.",
        earlier="An enforcement case against {s} was open with one regulator; a fine had not been decided when this round ran.",
        evidence=("regulator enforcement registers", "{s} legal provisions note"),
        lexical="Do the enforcement registers confirm no regulatory fines for {s}?",
        paraphrase="Has any watchdog penalised them? Were penalties settled privately?",
        gap="The no-fines claim for {s} does not cover settlements agreed without a formal enforcement finding.",
        followup="{s} paid a 1.2 million dollar settlement in {y} to close an investigation without admitting liability.",
        followup_evidence=("{s} legal settlement disclosure",),
    ),
    Aspect(
        name="market",
        claim="became the market leader with a 31 percent share",
        question="Did {s} become the market leader with a 31 percent share?",
        finding="Industry panel data give {s} a 31 percent market share in {y}, ahead of its nearest rival at 27 percent.",
        earlier="Market share data for {s} came from its own customer survey, which put its share between 28 and 33 percent.",
        evidence=("independent industry panel report {y}", "trade association sales statistics"),
        lexical="Does the industry panel data confirm the 31 percent market share of {s}?",
        paraphrase="Does it really beat competitors? Who sells most?",
        gap="The market share claim for {s} uses a narrow market definition that leaves out online rivals.",
        followup="Counting online rivals, the share of {s} falls to 24 percent, second behind an online seller.",
        followup_evidence=("wider market sizing by the trade association",),
    ),
    Aspect(
        name="training",
        claim="gave every employee 40 hours of training",
        question="Did {s} give every employee 40 hours of training?",
        finding="Learning system records show {s} employees averaged 42 hours of training in {y}, but 18 percent of employees logged under 10 hours.",
        earlier="Training hours at {s} were self-reported by managers for {y}; the learning system export was not yet available.",
        evidence=("{s} learning management system export", "training budget statement"),
        lexical="Do learning system records show 40 hours of training for every employee at {s}?",
        paraphrase="Did each worker actually attend courses? Were some people left without upskilling?",
        gap="The training claim for {s} reports an average; it hides the employees who received almost no training.",
        followup="Night shift staff at {s} averaged 6 hours of training in {y}, far below the 40 hour target.",
        followup_evidence=("{s} shift roster joined with course attendance",),
    ),
    Aspect(
        name="waste",
        claim="sent zero waste to landfill",
        question="Did {s} send zero waste to landfill in {y}?",
        finding="Waste transfer notes show {s} sent 96 percent of its 8,100 tonnes of waste to recycling or energy recovery in {y}; 320 tonnes went to landfill.",
        earlier="Waste transfer notes for {s} were being collected from contractors; landfill tonnage for {y} was unknown.",
        evidence=("waste contractor transfer notes", "{s} environmental permit waste returns"),
        lexical="Do the waste transfer notes confirm zero waste to landfill at {s}?",
        paraphrase="Does rubbish still go underground? Is anything dumped rather than reused?",
        gap="The zero landfill claim for {s} counts incineration ash sent to landfill as energy recovery.",
        followup="Incinerator ash from the energy recovery of {s} waste added 900 tonnes buried in {y}.",
        followup_evidence=("incinerator operator ash disposal statement",),
    ),
    Aspect(
        name="diversity",
        claim="reached 40 percent women on its board",
        question="Did {s} reach 40 percent women on its board?",
        finding="The annual governance statement lists 5 women among the 12 directors of {s} at the end of {y}, which is 42 percent.",
        earlier="Board composition of {s} was changing: two director appointments were announced but not confirmed at the general meeting.",
        evidence=("{s} governance statement {y}", "companies registry director filings"),
        lexical="Does the governance statement confirm 40 percent women on the board of {s}?",
        paraphrase="How many females sit around that top table? Are leaders gender balanced?",
        gap="The board claim for {s} counts the board only; the executive committee had one woman among nine members.",
        followup="Only 1 of the 9 executive committee members of {s} was a woman at the end of {y}.",
        followup_evidence=("{s} executive committee roster",),
    ),
    Aspect(
        name="uptime",
        claim="kept its services available 99.9 percent of the time",
        question="Did {s} keep its services available 99.9 percent of the time?",
        finding="Status page and monitoring logs show {s} services available 99.93 percent of {y}, with 6 hours of unplanned downtime in total.",
        earlier="Availability monitoring for {s} covered the main service only; the mobile service had no uptime records for {y}.",
        evidence=("{s} external uptime monitor logs", "public status page incident history"),
        lexical="Do monitoring logs confirm 99.9 percent availability of {s} services?",
        paraphrase="How often did apps go down? Got customers locked out by outages?",
        gap="The availability claim for {s} excludes scheduled maintenance windows from downtime.",
        followup="Including scheduled maintenance, {s} services were unavailable for 31 hours in {y}, or 99.65 percent availability.",
        followup_evidence=("{s} change calendar maintenance windows",),
    ),
    Aspect(
        name="tax",
        claim="paid its full share of corporate tax",
        question="Did {s} pay its full share of corporate tax in {y}?",
        finding="Tax filings show {s} paid 31 million dollars of corporate income tax on 142 million dollars of profit in {y}, an effective rate of 22 percent.",
        earlier="Corporate tax for {s} in {y} was only an estimate in the interim accounts, at 25 to 35 million dollars.",
        evidence=("{s} tax reconciliation note", "country-by-country tax report"),
        lexical="Do tax filings show {s} paying its full share of corporate tax?",
        paraphrase="Are profits shifted offshore? What did the treasury receive from them?",
        gap="The tax claim for {s} ignores profits booked through a subsidiary in a low-tax jurisdiction.",
        followup="A subsidiary of {s} in a low-tax jurisdiction booked 40 million dollars of profit taxed at 3 percent in {y}.",
        followup_evidence=("country-by-country report, subsidiary line",),
    ),
    Aspect(
        name="donations",
        claim="gave 2 percent of profit to local charities",
        question="Did {s} give 2 percent of profit to local charities?",
        finding="Grant records show {s} gave 2.9 million dollars to 48 local charities in {y}, which is 2.0 percent of pre-tax profit.",
        earlier="{s} pledged 2 percent of profit to local charities for {y}; grant payments were still being made.",
        evidence=("{s} foundation grant ledger", "charity regulator income filings of recipients"),
        lexical="Do grant records confirm that {s} gave 2 percent of profit to local charities?",
        paraphrase="How generous were donations? Did community groups receive money?",
        gap="The charity claim for {s} counts staff volunteering hours at a notional value as giving.",
        followup="0.9 million dollars of the giving reported by {s} was the notional value of volunteering, not cash.",
        followup_evidence=("{s} volunteering valuation method note",),
    ),
)
"""Every aspect, dev and held-out."""

HELDOUT_ASPECTS: Final = frozenset(
    {"costs", "water", "energy", "recalls", "fines", "training", "uptime", "donations"}
)
"""Aspects only the held-out split uses (8 of 21): tuning on the dev split never reads them."""

"""A tick's shares: what it dispatches when its capacity (MaxDispatchPerTick) or a tenant's rate quota
(max_runs_per_minute) holds some back, the slots shared across tenants by weight (tickwork.tick.fairness), each
rate-limited tenant's runs reserved in its minute window (one conditional ADD, tickwork.store.tenant_rates)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta

from tickwork.model.claim_plan import ClaimableJob, runs_to_claim
from tickwork.model.clock import from_ms, optional_instant, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.policies import DispatchOrder
from tickwork.model.tenant_settings import TenantDirectory, TenantSettings, rate_window
from tickwork.observability import logger, metrics
from tickwork.store import DueItem
from tickwork.store.codec import ROOTS_DEADLINE_SECONDS, stored_forecasts
from tickwork.store.tenant_rates import TenantRates
from tickwork.tick.blockers import TickBlockers
from tickwork.tick.claimer import MAX_CLAIM_ROUNDS
from tickwork.tick.fairness import Allocation, Allotted, Candidate, HoldReason, allocate, held_by_quota
from tickwork.tick.report import HELD_BACK_METRIC, TickReport


class DispatchShares:
    """Without a directory every tenant has the defaults (weight 1, no quota); without rates no quota holds."""

    def __init__(
        self,
        tenants: TenantDirectory | None,
        rates: TenantRates | None,
        *,
        max_dispatch: int,
        tick_period: timedelta,
        aging_after: timedelta,
    ) -> None:
        self.tenants, self.rates = tenants, rates
        self.max_dispatch, self.tick_period, self.aging_after = max_dispatch, tick_period, aging_after

    def choose(
        self, items: list[DueItem], now: datetime, horizon_end: datetime, report: TickReport, blockers: TickBlockers
    ) -> tuple[list[Allotted[DueItem]], dict[str, set[int]]]:
        """What the tick acts on, in order, and the windows each rate-limited tenant with late jobs has spent.
        `blockers`: the tick's calendars and freezes, which a job's runs asked are counted under."""
        settings, quotas = self._quotas(items)
        spent = self._spent_windows(items, quotas, now)
        return self._allocate(items, now, horizon_end, report, settings, quotas, spent, blockers), spent

    def _quotas(self, items: list[DueItem]) -> tuple[dict[str, TenantSettings], dict[str, int]]:
        """The settings of the tenants with items, and the rate quotas among them (none without `rates`). One
        BatchGetItem for the tenants whose settings are not cached."""
        if not items:
            return {}, {}
        settings = self.tenants.settings_for({tenant_of(i) for i in items}) if self.tenants is not None else {}
        quotas = {
            t: s.max_runs_per_minute
            for t, s in settings.items()
            if s.max_runs_per_minute is not None and self.rates is not None
        }
        return settings, quotas

    def _spent_windows(self, items: list[DueItem], quotas: dict[str, int], now: datetime) -> dict[str, set[int]]:
        """For each rate-limited tenant with a job due in a window before now's, the windows since then in which
        its quota was spent (fairness.held_by_quota). A tenant without a quota, or with nothing late, pays nothing;
        one with late jobs one Query. Unread (DynamoDB refused it): every window counts as spent, so those jobs'
        occurrences run rather than be skipped as missed."""
        rates = self.rates
        late: dict[str, int] = {}  # tenant -> its oldest late job's due time (ms)
        for i in items:
            tenant = tenant_of(i)
            if i.kind is ItemKind.JOB and tenant in quotas and rate_window(from_ms(i.due_at)) < rate_window(now):
                late[tenant] = min(i.due_at, late.get(tenant, i.due_at))
        spent: dict[str, set[int]] = {}
        if rates is None:
            return spent
        for tenant, due_at in late.items():
            since = from_ms(due_at)
            try:
                spent[tenant] = rates.spent_windows(tenant, limit=quotas[tenant], since=since, now=now)
            except Exception:
                logger.exception("could not read a tenant's spent quota windows", extra={"tenant": tenant})
                spent[tenant] = set(range(rate_window(since), rate_window(now)))
        return spent

    def _allocate(
        self,
        items: list[DueItem],
        now: datetime,
        horizon_end: datetime,
        report: TickReport,
        settings: dict[str, TenantSettings],
        quotas: dict[str, int],
        spent: dict[str, set[int]],
        blockers: TickBlockers,
    ) -> list[Allotted[DueItem]]:
        """What this tick acts on, in order (tickwork.tick.fairness): everything in today's order unless the tick's
        capacity or a tenant's rate quota holds some back; then the slots are shared by weight within each band.

        Costs one UpdateItem per tenant with a rate quota and jobs to claim; a tenant without a quota pays
        nothing more."""
        if not items:
            return []
        urgent_ms = to_ms(now + self.tick_period)
        candidates = [
            candidate_of(
                i,
                urgent_ms=urgent_ms,
                # Only claims of new occurrences count against a quota: re-sends and parked retries are
                # recovery of runs already dispatched, and a quota never holds them back.
                cost=self._runs_asked(i, now, horizon_end, spent, blockers)
                if i.kind is ItemKind.JOB and tenant_of(i) in quotas
                else 0,
                tenant_order=settings[tenant_of(i)].dispatch_order if tenant_of(i) in settings else DispatchOrder.EDF,
            )
            for i in items
        ]
        weights = {t: s.weight for t, s in settings.items()}

        def fit(budgets: dict[str, int]) -> Allocation[DueItem]:
            return allocate(
                candidates,
                capacity=self.max_dispatch,
                weights=weights,
                budgets=budgets,
                now_ms=to_ms(now),
                aging_after_ms=int(self.aging_after.total_seconds() * 1000),
            )

        # First as if no quota held, to learn what each rate-limited tenant would get; then reserve that much
        # of its window, and share again within what the reservations granted.
        allocation = fit({})
        if quotas:
            asked: Counter[str] = Counter()
            for a in allocation.chosen:
                if a.candidate.tenant in quotas:
                    asked[a.candidate.tenant] += a.candidate.cost
            budgets = {t: self._reserve(t, asked[t], limit, now) for t, limit in quotas.items()}
            allocation = fit(budgets)  # caps each rate-limited claim by what was reserved for it
        self._report_held(allocation, report)
        return allocation.chosen

    def _runs_asked(
        self, item: DueItem, now: datetime, horizon_end: datetime, spent: dict[str, set[int]], blockers: TickBlockers
    ) -> int:
        """The runs claiming this job would dispatch now. An item that cannot be read as a job asks for one: its
        claim fails on its own (and is logged there) without stopping the tick."""
        try:
            job = blockers.attach(claimable_as_of(item, now, spent))
        except Exception:
            return 1
        return runs_to_claim(job, now=now, horizon_end=horizon_end, rounds=MAX_CLAIM_ROUNDS)

    @staticmethod
    def _report_held(allocation: Allocation[DueItem], report: TickReport) -> None:
        held = allocation.held_by_reason
        if not held:
            return
        report.over_capacity = held[HoldReason.CAPACITY]
        report.held_back_rate = held[HoldReason.TENANT_RATE]
        metrics.add_metric(name="RunsHeldBack", unit="Count", value=sum(held.values()))
        for reason, count in held.items():
            metrics.add_metric(name=HELD_BACK_METRIC[reason], unit="Count", value=count)
        # Per tenant in the log, not as metrics: a dimension per tenant would be a metric per tenant.
        logger.warning(
            "more due than this tick dispatches",
            extra={
                "held_back": {r.value: n for r, n in held.items()},
                "held_back_by_tenant": {t: {r.value: n for r, n in c.items()} for t, c in allocation.held.items()},
                "dispatch_share": dict(allocation.shares()),
            },
        )

    def create_budget(self, job: ClaimableJob, now: datetime, horizon_end: datetime) -> int | None:
        """The runs a job claimed at create may dispatch under its tenant's rate quota (None: no quota)."""
        if self.tenants is None or self.rates is None or job.kind is not ItemKind.JOB:
            return None
        limit = self.tenants.settings_of(job.tenant).max_runs_per_minute
        if limit is None:
            return None
        asked = runs_to_claim(job, now=now, horizon_end=horizon_end, rounds=MAX_CLAIM_ROUNDS)
        return self._reserve(job.tenant, asked, limit, now) if asked else None

    def _reserve(self, tenant: str, asked: int, limit: int, now: datetime) -> int:
        """Reserve a rate-limited tenant's runs for this window. A reservation that fails (DynamoDB refused it)
        grants nothing: that tenant's new runs wait for a later tick, and everyone else's go ahead."""
        if not asked or self.rates is None:
            return 0
        try:
            return self.rates.reserve(tenant, want=asked, limit=limit, now=now)
        except Exception:
            logger.exception("could not reserve a tenant's rate quota; its new runs wait", extra={"tenant": tenant})
            return 0


def claimable_as_of(item: DueItem, now: datetime, spent: dict[str, set[int]]) -> ClaimableJob:
    """A due job as this tick claims it: held back by its tenant's quota if a window of it was spent since the
    job's due time (fairness.held_by_quota)."""
    job = item.claimable()
    windows = spent.get(job.tenant)
    if windows and held_by_quota(job.next_run_at, now, windows):
        job = replace(job, held_by_quota=True)
    return job


def candidate_of(
    item: DueItem, *, urgent_ms: int, cost: int = 0, tenant_order: DispatchOrder = DispatchOrder.EDF
) -> Candidate[DueItem]:
    """A due entry as the allocator sees it (tickwork.tick.fairness); `urgent_ms`: what is due by then must go
    before the next tick. A job's `dispatch_order`, else its tenant's (`tenant_order`), says whether it competes
    by its deadline or by its expected length (its forecast's p50: none before it has one)."""
    own = item.attrs.get("dispatch_order")
    shortest_first = (DispatchOrder(own) if own else tenant_order) is DispatchOrder.SJF and item.kind is ItemKind.JOB
    forecasts = stored_forecasts(item.attrs) if shortest_first else None
    view = forecasts.view() if forecasts is not None else None
    return Candidate(
        shortest_first=shortest_first,
        expected_ms=view.p50_ms if view is not None else None,
        item=item,
        tenant=tenant_of(item),
        priority=item.priority,
        due_at_ms=item.due_at,
        urgent=item.due_at <= urgent_ms,
        deadline_at_ms=_deadline_at_ms(item),
        cost=cost,
    )


def _deadline_at_ms(item: DueItem) -> int | None:
    """When the first run an entry dispatches must have ended: a job's next occurrence plus its deadline; a
    workflow's next occurrence plus its soonest root step's; a run's (a workflow step's, or a job's re-send or
    parked retry) its own deadline_at."""
    a = item.attrs
    if item.kind is ItemKind.RUN:
        deadline_at = optional_instant(a.get("deadline_at"))
        return None if deadline_at is None else to_ms(deadline_at)
    if item.kind is ItemKind.JOB and a.get("deadline"):
        return item.due_at + int(a["deadline"]["within_seconds"]) * 1000
    if item.kind is ItemKind.WORKFLOW and a.get(ROOTS_DEADLINE_SECONDS) is not None:
        return item.due_at + int(a[ROOTS_DEADLINE_SECONDS]) * 1000
    return None


def tenant_of(item: DueItem) -> str:
    return str(item.attrs.get("tenant", ""))

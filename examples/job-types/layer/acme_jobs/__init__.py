"""ACME's job types for Tickwork: importing this module registers them (JobTypeModules=acme_jobs).

`invoice_total` totals an invoice from its lines: the payload is checked with `InvoicePayload` when the job is
created (a bad line is a 422 naming it, e.g. `payload.lines.0.quantity`), and the run's result is the invoice's
subtotal, tax and total, to the cent. Self-contained: no network, nothing beyond the Tickwork layer's packages.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tickwork.jobtypes import RunContext, job_type

CENT = Decimal("0.01")


class InvoiceLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1, max_length=200)
    quantity: int = Field(ge=1, le=1_000_000)
    unit_price: Decimal = Field(ge=0, max_digits=12, decimal_places=2)


class InvoicePayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    customer: str = Field(min_length=1, max_length=200)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    tax_rate_percent: Decimal = Field(default=Decimal(0), ge=0, le=100, max_digits=5, decimal_places=2)
    lines: list[InvoiceLine] = Field(min_length=1, max_length=500)


def _money(amount: Decimal) -> str:
    """An amount to the cent, as a string: JSON numbers are floats to most readers, and money is not."""
    return str(amount.quantize(CENT, rounding=ROUND_HALF_EVEN))


@job_type("invoice_total", InvoicePayload)
def invoice_total(payload: InvoicePayload, ctx: RunContext) -> dict[str, Any]:
    """Totals an invoice from its lines: subtotal, tax at the payload's rate, and total, to the cent."""
    subtotal = Decimal(0)
    for line in payload.lines:
        ctx.check()  # stops here if the run was cancelled or is out of time
        subtotal += line.quantity * line.unit_price
    tax = (subtotal * payload.tax_rate_percent / 100).quantize(CENT, rounding=ROUND_HALF_EVEN)
    total = subtotal + tax
    ctx.log("invoice totalled", customer=payload.customer, lines=len(payload.lines), total=_money(total))
    return {
        "customer": payload.customer,
        "currency": payload.currency,
        "lines": len(payload.lines),
        "subtotal": _money(subtotal),
        "tax": _money(tax),
        "total": _money(total),
    }

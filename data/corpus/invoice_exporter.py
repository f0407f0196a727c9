"""Export Northwind Suite invoices to CSV for accounting systems.

Used by the "Export invoices" button on the Billing page and by the nightly
job that feeds invoices to customers' accounting integrations. Only invoices
from the last seven years are exported, matching what the Billing page shows.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Iterable, Iterator

EXPORT_COLUMNS = [
    "invoice_number",
    "issue_date",
    "due_date",
    "currency",
    "subtotal",
    "tax",
    "total",
    "status",
    "billing_country",
]

RETENTION_YEARS = 7
PAYMENT_TERMS_DAYS = 30


@dataclass
class InvoiceLine:
    description: str
    quantity: int
    unit_price: Decimal


@dataclass
class Invoice:
    number: str
    issue_date: date
    currency: str
    billing_country: str
    tax_rate: Decimal
    status: str = "open"
    lines: list[InvoiceLine] = field(default_factory=list)

    @property
    def subtotal(self) -> Decimal:
        return sum((line.unit_price * line.quantity for line in self.lines), Decimal("0"))

    @property
    def due_date(self) -> date:
        """Invoices are payable within 30 days of the issue date under the MSA."""
        return self.issue_date + timedelta(days=PAYMENT_TERMS_DAYS)


def round_money(value: Decimal) -> Decimal:
    """Round to cents using half-up rounding, as printed on PDF invoices."""
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


class InvoiceExporter:
    """Turns invoices into CSV rows.

    Tax is computed on the subtotal, not line by line, so the CSV totals
    always match the PDF invoice even when individual lines would round
    differently.
    """

    def __init__(self, today: date | None = None, delimiter: str = ",") -> None:
        self.today = today or date.today()
        self.delimiter = delimiter

    def earliest_exportable(self) -> date:
        """Oldest issue date that can still be exported."""
        try:
            return self.today.replace(year=self.today.year - RETENTION_YEARS)
        except ValueError:  # 29 February in a non-leap target year
            return self.today.replace(year=self.today.year - RETENTION_YEARS, day=28)

    def to_row(self, invoice: Invoice) -> dict[str, str]:
        subtotal = round_money(invoice.subtotal)
        tax = round_money(subtotal * invoice.tax_rate)
        return {
            "invoice_number": invoice.number,
            "issue_date": invoice.issue_date.isoformat(),
            "due_date": invoice.due_date.isoformat(),
            "currency": invoice.currency.upper(),
            "subtotal": f"{subtotal:.2f}",
            "tax": f"{tax:.2f}",
            "total": f"{subtotal + tax:.2f}",
            "status": invoice.status,
            "billing_country": invoice.billing_country,
        }

    def rows(self, invoices: Iterable[Invoice]) -> Iterator[dict[str, str]]:
        """Yield rows for exportable invoices, oldest first."""
        cutoff = self.earliest_exportable()
        for invoice in sorted(invoices, key=lambda inv: inv.issue_date):
            if invoice.issue_date < cutoff:
                continue
            if invoice.status == "draft":
                continue  # drafts are never exported
            yield self.to_row(invoice)

    def export(self, invoices: Iterable[Invoice]) -> str:
        """Return the CSV document as a string, with a header row."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, delimiter=self.delimiter)
        writer.writeheader()
        for row in self.rows(invoices):
            writer.writerow(row)
        return buffer.getvalue()


def export_for_region(invoices: Iterable[Invoice], region: str) -> str:
    """EU accounting tools expect semicolon-separated files."""
    delimiter = ";" if region.lower() == "eu" else ","
    return InvoiceExporter(delimiter=delimiter).export(invoices)

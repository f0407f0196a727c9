"""Refund calculation for Northwind Suite subscriptions.

Implements the tier rules from the 2024 Refund Policy (effective 2024-03-01).
The billing operations console calls :func:`calculate_refund` when a billing
owner submits a refund request; the result is shown to the reviewer before
approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from enum import Enum


class Tier(str, Enum):
    STARTER = "starter"
    BRONZE = "bronze"
    SILVER = "silver"
    GOLD = "gold"
    PLATINUM = "platinum"
    ENTERPRISE = "enterprise"


@dataclass(frozen=True)
class TierRule:
    """Refund terms for one subscription tier."""

    window_days: int
    fee_percent: Decimal = Decimal("0")
    flat_fee: Decimal = Decimal("0")
    needs_approval: bool = False


# Values mirror the "Refund eligibility by tier" table in refund-policy-2024.
TIER_RULES: dict[Tier, TierRule] = {
    Tier.STARTER: TierRule(window_days=7, flat_fee=Decimal("25.00")),
    Tier.BRONZE: TierRule(window_days=10, fee_percent=Decimal("5")),
    Tier.SILVER: TierRule(window_days=10, fee_percent=Decimal("3")),
    Tier.GOLD: TierRule(window_days=14, fee_percent=Decimal("2"), needs_approval=True),
    Tier.PLATINUM: TierRule(window_days=30, needs_approval=True),
}

# Bronze requests made within this many hours of the charge pay no fee.
BRONZE_FEE_WAIVER_HOURS = 48


class RefundNotAllowed(Exception):
    """Raised when a request falls outside the refund rules."""


@dataclass(frozen=True)
class RefundQuote:
    eligible: bool
    refund_amount: Decimal
    fee: Decimal
    needs_approval: bool
    reason: str = ""


def _money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


class RefundCalculator:
    """Works out how much of a charge can be refunded.

    The calculator is deliberately side-effect free: it never issues a refund,
    it only produces a :class:`RefundQuote` for a human or a workflow to act on.
    """

    def __init__(self, rules: dict[Tier, TierRule] | None = None) -> None:
        self.rules = rules or TIER_RULES

    def days_since_period_start(self, period_start: date, requested_on: date) -> int:
        """Calendar days between the start of the billing period and the request."""
        if requested_on < period_start:
            raise ValueError("request date is before the billing period starts")
        return (requested_on - period_start).days

    def quote(
        self,
        tier: Tier,
        amount_paid: Decimal,
        period_start: date,
        requested_on: date,
        hours_since_charge: float | None = None,
        monthly_plan: bool = False,
    ) -> RefundQuote:
        """Return a refund quote for one charge.

        ``amount_paid`` is the amount actually paid after discounts and before tax.
        Monthly plans are never refunded pro rata, but a monthly charge inside
        the window is refunded in full, less the fee, like an annual one.
        """
        if tier is Tier.ENTERPRISE:
            raise RefundNotAllowed("Enterprise refunds follow the customer's order form")
        rule = self.rules[tier]
        elapsed = self.days_since_period_start(period_start, requested_on)
        if elapsed > rule.window_days:
            return RefundQuote(
                eligible=False,
                refund_amount=Decimal("0.00"),
                fee=Decimal("0.00"),
                needs_approval=False,
                reason=f"outside the {rule.window_days}-day window for {tier.value}",
            )

        fee = rule.flat_fee + amount_paid * rule.fee_percent / Decimal("100")
        if (
            tier is Tier.BRONZE
            and hours_since_charge is not None
            and hours_since_charge <= BRONZE_FEE_WAIVER_HOURS
        ):
            fee = Decimal("0")
        fee = min(_money(fee), amount_paid)
        return RefundQuote(
            eligible=True,
            refund_amount=_money(amount_paid - fee),
            fee=fee,
            needs_approval=rule.needs_approval,
            reason="monthly plan, full period" if monthly_plan else "",
        )


def calculate_refund(tier: str, amount_paid: str, period_start: date, requested_on: date) -> RefundQuote:
    """Convenience wrapper used by the billing console."""
    return RefundCalculator().quote(Tier(tier.lower()), Decimal(amount_paid), period_start, requested_on)

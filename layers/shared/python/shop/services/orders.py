"""Orders: catalogue pricing, atomic placement with bounded retries, the status machine, returns."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from shop import clock, errors, ids
from shop.limits import MAX_ORDER_LINES, MAX_QUANTITY, MAX_TRANSACTION_ITEMS, RETURN_WINDOW_DAYS
from shop.models import (
    ORDER_TRANSITIONS,
    OWNER_ONLY_STATUSES,
    PAYMENT_ONLY_STATUSES,
    Order,
    OrderLine,
    OrderStatus,
    OrderSummary,
    Page,
    Product,
    Shipment,
    ShippingAddress,
    StatusDetails,
    StatusEntry,
)
from shop.models.carts import CartClaim, CartOwner, CartOwnerKind
from shop.models.checkout import CheckoutSettings, Promotion, PromotionUse
from shop.models.orders import (
    RETURN_OUTCOMES,
    OrderPayment,
    OrderPaymentSummary,
    OrderPromotion,
    OrderReturn,
    OrderShipping,
    PaymentStatus,
    Placement,
    ReturnLine,
    ReturnRequest,
    UnpaidLimits,
)
from shop.models.payments import PaymentIntent, PaymentStep, idempotency_key
from shop.models.sessions import StoredLine
from shop.services import returns
from shop.services.actor import Actor
from shop.services.archive_timing import archive_at
from shop.services.checkout_settings import CheckoutSettingsService, Destination, applying, destination
from shop.services.hot_products import HotProductCache, Kind
from shop.services.order_total import LineToPrice, PromotionKind, ShippingOption, Total, price
from shop.services.order_total import Promotion as Offer
from shop.services.ports import CustomerCartStore, OrderArchive, OrderStore, Payments, ProductPrices, SessionStore
from shop.services.stock import MAX_STOCK_ATTEMPTS, StockReservation

if TYPE_CHECKING:
    from shop.config import PaymentSettings, Settings

REPRICE_ATTEMPTS = 3
# How long a cart checkout trusts a flash-sale product's shard count it learnt (a stale one costs one attempt).
SHARD_HINT_SECONDS = 60.0
# Reads and conditional writes one cancel (or return request) tries before answering 503 (the order keeps changing).
CANCEL_ATTEMPTS = 3
RETURN_WINDOW = timedelta(days=RETURN_WINDOW_DAYS)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShipmentIn:
    """What the admin gives when shipping: the order records it with the time it shipped."""

    carrier: str
    tracking_number: str


@dataclass(frozen=True)
class RequestedLine:
    product_id: str
    quantity: int


def merge_lines(lines: list[RequestedLine]) -> dict[str, int]:
    quantities: dict[str, int] = {}
    for line in lines:
        quantities[line.product_id] = quantities.get(line.product_id, 0) + line.quantity
    return quantities


def lines_over_the_limit(lines: list[RequestedLine]) -> dict[str, str]:
    """The quantity field of each line that takes its product past MAX_QUANTITY, duplicates added up."""
    totals: dict[str, int] = {}
    over: dict[str, str] = {}
    for index, line in enumerate(lines):
        before = totals.get(line.product_id, 0)
        totals[line.product_id] = before + line.quantity
        if before <= MAX_QUANTITY < totals[line.product_id]:
            over[f"lines.{index}.quantity"] = f"{line.product_id} adds up to more than {MAX_QUANTITY}"
    return over


def _from_cart(lines: list[StoredLine]) -> tuple[list[OrderLine], dict[str, int]]:
    """A cart's lines at the prices they were set with (placement checks them against the catalogue's and
    re-prices on a change), and their quantities."""
    priced = [OrderLine.priced(line.product_id, line.name, line.unit_price_cents, line.quantity) for line in lines]
    return priced, {line.product_id: line.quantity for line in lines}


def _empty(owner: CartOwner) -> errors.CartEmpty:
    """Checking out an empty cart: the error names the cart as the request did."""
    if owner.kind is CartOwnerKind.SESSION:
        return errors.CartEmpty("the session's cart is empty", {"session_id": owner.id})
    return errors.CartEmpty("your cart is empty", {"cart": "customer"})


def _priced(quantities: dict[str, int], catalogue: dict[str, Product]) -> tuple[list[OrderLine], dict[str, int]]:
    """The lines at the catalogue's prices, and the stock shard count of each product that has shards."""
    lines = [
        OrderLine.priced(pid, catalogue[pid].name, catalogue[pid].price_cents, qty) for pid, qty in quantities.items()
    ]
    return lines, {pid: product.stock_shards for pid, product in catalogue.items() if product.stock_shards > 1}


def _unpaid_limits(quantities: dict[str, int], paying: PaymentSettings) -> UnpaidLimits:
    """PAYMENTS=stripe: the limits the customer's unpaid hold takes the order within (MAX_UNPAID_ORDERS,
    MAX_UNPAID_UNITS). An order that alone holds more units than a customer may hold unpaid is refused here, before
    the provider is called, with nothing read or written."""
    limits = UnpaidLimits(orders=paying.max_unpaid_orders, units=paying.max_unpaid_units)
    units = sum(quantities.values())
    if units > limits.units:
        raise errors.UnpaidOrderLimit(max_orders=limits.orders, max_units=limits.units, order_units=units)
    return limits


class _Intents:
    """The provider's intents one placement creates for its order id, before its transaction.

    The first is created under the order's AUTHORISE key (`shop-order-<id>-authorise`); a reprice that moves
    the total (a cart's price met the catalogue's) cancels it and creates one for the new total under a key of
    its own (`...-authorise-reprice-<n>`). Whatever the placement does not end up holding is cancelled under
    `shop-order-<id>-cancel-<intent id>` (best effort: a failed cancel leaves an intent nobody can confirm, its
    client secret never having been given out, and is logged)."""

    def __init__(self, provider: Payments, order_id: str, currency: str) -> None:
        self.provider = provider
        self.order_id = order_id
        self.currency = currency
        self.current: PaymentIntent | None = None
        self.created = 0

    def for_total(self, total_cents: int) -> PaymentIntent:
        if self.current is not None and self.current.amount_cents == total_cents:
            return self.current
        if self.current is not None:
            self._cancel(self.current, "the order was repriced")
            self.current = None
        part = f"reprice-{self.created}" if self.created else None
        self.current = self.provider.create_intent(
            self.order_id,
            total_cents,
            self.currency,
            idempotency_key=idempotency_key(self.order_id, PaymentStep.AUTHORISE, part),
        )
        self.created += 1
        return self.current

    def cancel_all(self, why: str) -> None:
        if self.current is not None:
            self._cancel(self.current, why)
            self.current = None

    def log_unconfirmed(self) -> None:
        if self.current is not None:
            logger.warning(
                "checkout_intent_left_unconfirmed",
                extra={"order_id": self.order_id, "intent_id": self.current.intent_id},
            )

    def _cancel(self, intent: PaymentIntent, why: str) -> None:
        key = idempotency_key(self.order_id, PaymentStep.CANCEL, intent.intent_id)
        try:
            self.provider.cancel(intent.intent_id, idempotency_key=key)
        except errors.DomainError as failed:
            logger.warning(
                "checkout_intent_cancel_failed",
                extra={"order_id": self.order_id, "intent_id": intent.intent_id, "why": why, "error": failed.code},
            )


@dataclass(frozen=True)
class Offers:
    """The promotions an order is priced with: the automatic ones that apply, then the code's (`coded`), if given."""

    promotions: tuple[Promotion, ...] = ()
    coded: Promotion | None = None
    promo_code: str | None = None

    def without(self, promotion_id: str) -> Offers:
        """These offers but an automatic promotion that can no longer be used."""
        return replace(self, promotions=tuple(p for p in self.promotions if p.promotion_id != promotion_id))

    def refused(self, promotion_id: str, *, customer: bool) -> Offers:
        """What a refused use of `promotion_id` means: the code's is PromoCodeAlreadyUsed (the customer's own
        count) or PromoCodeExhausted; an automatic one no longer applies (the offers without it)."""
        if self.coded is not None and self.coded.promotion_id == promotion_id:
            code = self.promo_code or ""
            raise errors.PromoCodeAlreadyUsed(code) if customer else errors.PromoCodeExhausted(code)
        return self.without(promotion_id)


NO_OFFERS = Offers()


def total_of(
    lines: list[OrderLine], where: Destination, *, prices_include_tax: bool, offers: Offers = NO_OFFERS
) -> Total:
    """What the order costs, stored with its breakdown and asked of the payment provider: the one pricing
    function's total (shop.services.order_total) for its lines, shipping option, tax rate and promotions. A code
    whose minimum the lines do not reach is PromoMinSubtotal."""
    option = where.option
    shipping = None
    if option is not None:
        shipping = ShippingOption(option.option_id, option.name, option.price_cents, option.free_over_cents)
    total = price(
        [LineToPrice(line.product_id, line.unit_price_cents, line.quantity) for line in lines],
        shipping=shipping,
        rate_bps=where.rate_bps,
        promotions=[
            Offer(p.promotion_id, PromotionKind(p.kind), p.value, p.min_subtotal_cents, p.code)
            for p in offers.promotions
        ],
        prices_include_tax=prices_include_tax,
    )
    coded = offers.coded
    if coded is not None and coded.promotion_id in total.not_reached:
        raise errors.PromoMinSubtotal(offers.promo_code or "", coded.min_subtotal_cents, total.subtotal_cents)
    return total


def uses_of(total: Total, offers: Offers, shards: dict[str, int]) -> list[PromotionUse]:
    """The uses the promotions that applied take: on the counter `shards` names (else a random one) when the
    promotion has a usage limit, on the customer's count when it has a per-customer one."""
    by_id = {promotion.promotion_id: promotion for promotion in offers.promotions}
    uses = []
    for applied in total.promotions:
        promotion = by_id[applied.promotion_id]
        if promotion.use_shards == 0 and promotion.per_customer_limit is None:
            continue
        shard = None
        if promotion.use_shards:
            shard = shards.get(promotion.promotion_id)
            if shard is None:
                shard = random.randrange(promotion.use_shards)
        allotment = promotion.allotment(shard) if shard is not None else 0
        uses.append(PromotionUse(promotion.promotion_id, shard, allotment, promotion.per_customer_limit))
    return uses


def offers_at(settings: CheckoutSettings, promo_code: str | None) -> Offers:
    """The promotions that apply now (PromoCodeInvalid for a code that does not)."""
    promotions, coded = applying(settings, promo_code, clock.iso_now())
    return Offers(tuple(promotions), coded, promo_code)


@dataclass(frozen=True)
class Quote:
    """What an order of these lines to this destination would store (POST /checkout/quote), before anything is
    written: its lines, its total's breakdown, and what each of the destination's options would charge for
    shipping."""

    lines: list[OrderLine]
    total: Total
    where: Destination
    currency: str
    shipping_prices: dict[str, int]  # option id -> what it charges this order for shipping


class OrderService:
    def __init__(
        self,
        *,
        orders: OrderStore,
        products: ProductPrices,
        sessions: SessionStore,
        carts: CustomerCartStore,
        archive: OrderArchive,
        hot: HotProductCache | None = None,
        settings: Callable[[], Settings],
        payment_settings: Callable[[], PaymentSettings],
        payments: Callable[[], Payments | None],
        checkout: CheckoutSettingsService,
    ) -> None:
        """The rules over the stores given (shop.wiring builds them). `hot` keeps the catalogue entries of
        flash-sale products a moment (this instance's own cache). `settings` and `payment_settings` give the
        settings at each use (shop.config's). `payments` gives the payment provider on the first checkout that
        needs one (None: PAYMENTS=none, version 2's flow), so an instance that takes no order never loads the
        provider's library."""
        self.settings = settings
        self.payment_settings = payment_settings
        self._payments = payments
        self.archive = archive
        self.orders = orders
        self.products = products
        self.sessions = sessions
        self.carts = carts
        self.hot = hot if hot is not None else HotProductCache()
        self.checkout = checkout
        # (store scope, product id) -> (until, shard count): what a cart checkout learnt of a flash-sale product
        self._shard_hints: dict[tuple[str, str], tuple[float, int]] = {}

    def _price(self, quantities: dict[str, int], *, fresh: bool = False) -> tuple[list[OrderLine], dict[str, int]]:
        """The lines at catalogue prices, and the stock shard count of each product that has shards."""
        return _priced(quantities, self._catalogue(quantities, fresh=fresh))

    def _new_order(
        self,
        actor: Actor,
        lines: list[OrderLine],
        address: ShippingAddress,
        *,
        total: Total | None = None,
        where: Destination | None = None,
        order_id: str | None = None,
        intent: PaymentIntent | None = None,
        uses: list[PromotionUse] | None = None,
    ) -> Order:
        """The order to place (a new id unless given: one id per placement, kept across its attempts) with the
        breakdown of its `total` (priced here when not given, shipped `where` or by no option), with its payment
        under PAYMENTS=stripe: the intent created for it, when there is one."""
        if where is None:
            where = Destination(address.country, address.region, None, None, (), None)
        if total is None:
            total = total_of(lines, where, prices_include_tax=self.settings().prices_include_tax)
        moment = clock.now()
        now = clock.iso(moment)
        paying = self.payment_settings()
        lines = [
            line.model_copy(update={"discount_cents": priced.discount_cents, "tax_cents": priced.tax_cents})
            for line, priced in zip(lines, total.lines, strict=True)
        ]
        option = where.option
        shipping = None
        if option is not None and where.zone_id is not None:
            shipping = OrderShipping(
                zone_id=where.zone_id, option_id=option.option_id, name=option.name, price_cents=option.price_cents
            )
        status, payment, payment_expires_at = OrderStatus.PENDING, None, None
        if paying.enabled:  # PAYMENTS=stripe: unpaid until the provider says the amount is authorised
            status = OrderStatus.PENDING_PAYMENT
            payment = OrderPayment(
                provider=paying.provider,
                amount_cents=total.total_cents,
                currency=paying.currency,
                intent_id=intent.intent_id if intent is not None else None,
                client_secret=intent.client_secret if intent is not None else None,
            )
            payment_expires_at = clock.epoch(moment) + paying.payment_window_seconds
        taken = {use.promotion_id: use.shard for use in uses or () if use.shard is not None}
        return Order(
            order_id=order_id or ids.new_id(),
            customer_id=actor.sub,
            status=status,
            version=1,
            lines=lines,
            total_cents=total.total_cents,
            subtotal_cents=total.subtotal_cents,
            discount_cents=total.discount_cents,
            shipping_cents=total.shipping_cents,
            shipping_tax_cents=total.shipping_tax_cents,
            tax_cents=total.tax_cents,
            prices_include_tax=total.prices_include_tax,
            tax_rate_bps=total.rate_bps,
            currency=paying.currency,
            shipping_option=shipping,
            promotions=[
                OrderPromotion(
                    promotion_id=applied.promotion_id,
                    code=applied.code,
                    kind=applied.kind.value,
                    discount_cents=applied.discount_cents,
                )
                for applied in total.promotions
            ],
            promotion_uses=taken,
            counted_promotions=[p.promotion_id for p in total.promotions if p.promotion_id not in taken],
            customer_uses=[use.promotion_id for use in uses or () if use.customer_limit is not None],
            shipping_address=address,
            created_at=now,
            updated_at=now,
            history=[StatusEntry(status=status, at=now)],
            payment=payment,
            payment_expires_at=payment_expires_at,
        )

    def place(
        self,
        actor: Actor,
        *,
        address: ShippingAddress,
        lines: list[RequestedLine] | None = None,
        session_id: str | None = None,
        customer_cart: bool = False,
        idempotency_key: str | None = None,
        shipping_option_id: str | None = None,
        promo_code: str | None = None,
    ) -> Order:
        """Three store calls on the common path: one read (products, session or customer cart), one of the
        checkout's settings (shop.services.checkout_settings: one GetItem while this instance's copy is current),
        one transaction. The order ships by `shipping_option_id`, or by its destination's zone's first option.

        With an idempotency_key, placing again under it returns the order placed first (at most one).

        PAYMENTS=stripe (docs/payments.md, "Checkout"): after the read, and only if the read shows nothing
        refused, the provider's intent is created for the order id this placement chose (its AUTHORISE key),
        and the order is written PENDING_PAYMENT with that intent, its stock and its payment window in the one
        transaction. A provider outage is PaymentProviderUnavailable (503) with nothing written. A transaction
        refused after the intent exists cancels the intent (best effort) and answers the refusal. A placement
        claim found taken answers the order placed first and cancels this run's intent. The same transaction holds
        the order on the customer's unpaid hold, within MAX_UNPAID_ORDERS and MAX_UNPAID_UNITS: beyond either,
        UnpaidOrderLimit (409), nothing written (docs/payments.md, "Hoarding")."""
        provider = None
        if self.payment_settings().enabled:
            # The provider first: a missing configuration or an unreadable secret refuses the checkout before
            # anything is written (the adapter loads here, at an instance's first checkout).
            provider = self._provider()
        try:
            return self._place(
                actor,
                address=address,
                lines=lines,
                session_id=session_id,
                customer_cart=customer_cart,
                idempotency_key=idempotency_key,
                shipping_option_id=shipping_option_id,
                promo_code=promo_code,
                provider=provider,
            )
        except errors.DomainError:
            if provider is None:
                raise
            # A repeat of a placement that completed (its answer lost) finds its cart emptied (or a product
            # gone, out of stock, the provider down) because of the placement it repeats: that placement, if
            # there was one, is the answer, complete with its intent (one read, only on a failure).
            placed = self.orders.placed_under(actor.sub, idempotency_key) if idempotency_key is not None else None
            if placed is None:
                raise
            return placed

    def _provider(self) -> Payments:
        provider = self._payments()
        if provider is None:
            raise errors.PaymentMisconfigured("PAYMENTS is on but no payment provider is configured")
        return provider

    def _place(
        self,
        actor: Actor,
        *,
        address: ShippingAddress,
        lines: list[RequestedLine] | None,
        session_id: str | None,
        customer_cart: bool,
        idempotency_key: str | None,
        shipping_option_id: str | None = None,
        promo_code: str | None = None,
        provider: Payments | None = None,
    ) -> Order:
        cart_claim: CartClaim | None = None
        shards: dict[str, int] = {}  # a cart's checkout (session or customer): what this instance learnt lately
        if session_id is not None or customer_cart:
            now = clock.epoch(clock.now())
            if session_id is not None:
                owner, cart = CartOwner.session(session_id), self.sessions.get(session_id, now=now)
            else:
                owner, cart = CartOwner.customer(actor.sub), self.carts.get(actor.sub, now=now, require_profile=False)
            if not cart.lines:
                raise _empty(owner)
            cart_claim = CartClaim(owner, cart.cart_version, now)
            priced, quantities = _from_cart(cart.lines)
            shards = self._hinted_shards(quantities)
        else:
            quantities, catalogue = self._requested(lines or [])
            priced, shards = _priced(quantities, catalogue)
            if provider is not None:
                # Before an intent exists: a product whose own item (no flash-sale shards) visibly holds too
                # little is refused as the transaction would refuse it (an eventually consistent read: a restock
                # a moment ago may not show yet, as if the customer had come a moment earlier).
                short = [
                    pid
                    for pid, quantity in quantities.items()
                    if catalogue[pid].stock_shards <= 1 and catalogue[pid].stock < quantity
                ]
                if short:
                    raise errors.OutOfStock(short)

        def resolve(settings: CheckoutSettings) -> tuple[Destination, Offers]:
            return destination(settings, address, shipping_option_id), offers_at(settings, promo_code)

        # Priced with the snapshot this instance keeps, which the placement's transaction checks (ConditionCheck). A
        # refusal is answered only from the latest edit's settings: the kept ones are checked first (one GetItem).
        checkout = self.checkout.kept()
        try:
            where, offers = resolve(checkout)
        except errors.DomainError:
            checkout = self.checkout.current()
            where, offers = resolve(checkout)

        placement = None
        if idempotency_key is not None:
            placement = Placement(idempotency_key, clock.epoch(clock.now()) + self.settings().idempotency_ttl_seconds)
        return self._reserve_and_place(
            actor,
            address,
            priced,
            where=where,
            offers=offers,
            checkout=(checkout, resolve),
            quantities=quantities,
            shards=shards,
            cart_claim=cart_claim,
            placement=placement,
            provider=provider,
        )

    def _reserve_and_place(
        self,
        actor: Actor,
        address: ShippingAddress,
        priced: list[OrderLine],
        *,
        where: Destination,
        offers: Offers = NO_OFFERS,
        checkout: tuple[CheckoutSettings, Callable[[CheckoutSettings], tuple[Destination, Offers]]] | None = None,
        quantities: dict[str, int],
        shards: dict[str, int],
        cart_claim: CartClaim | None,
        placement: Placement | None,
        provider: Payments | None = None,
    ) -> Order:
        """One transaction per attempt: a moved price re-reads the catalogue (REPRICE_ATTEMPTS in all), a
        flash-sale shard that held too little sends the line to another (shop.services.stock). The order id
        is chosen once, so every attempt (and the provider's intent, with a provider) names the same order."""
        stock = StockReservation(
            quantities,
            shards,
            self.products.stock_layout,
            self.products.gather_stock,
            read_snapshot=self.products.stock_snapshot,
        )
        # The transaction's items besides the stock takes: the order, its customer entry, the cart or session
        # it empties, the Idempotency-Key it claims (shop.repository.orders.OrderRepository.place).
        room = MAX_TRANSACTION_ITEMS - 2 - sum(part is not None for part in (cart_claim, placement, checkout))
        paying = self.payment_settings()
        room -= 1 if paying.enabled else 0  # the customer's unpaid hold
        # PAYMENTS=stripe: the order is unpaid, held on the customer's unpaid hold within the shop's limits.
        unpaid = _unpaid_limits(quantities, paying) if paying.enabled else None
        order_id = ids.new_id()
        intents = _Intents(provider, order_id, paying.currency) if provider is not None else None
        reprices = 0
        released_settled = False
        include_tax = self.settings().prices_include_tax
        try:
            # One attempt more than reprices and stock need: the one after releasing held orders that were settled.
            # Attempts for promotion uses besides: a refused use names a counter another checkout filled, at most
            # one per counter of each limited promotion, and then one more.
            use_attempts = sum(p.use_shards for p in offers.promotions) + len(offers.promotions)
            promotion_shards: dict[str, int] = {}
            settings_reads = 0
            for attempt in range(REPRICE_ATTEMPTS + MAX_STOCK_ATTEMPTS + 2 + use_attempts):
                try:
                    total = total_of(priced, where, prices_include_tax=include_tax, offers=offers)
                except errors.PromoMinSubtotal:
                    if checkout is None or settings_reads:
                        raise
                    settings_reads += 1  # refused from the kept settings: answered only from the latest edit's
                    fresh = self.checkout.current()
                    checkout = (fresh, checkout[1])
                    where, offers = checkout[1](fresh)
                    continue
                uses = uses_of(total, offers, promotion_shards)
                if intents is not None and total.total_cents <= 0:
                    # No intent holds 0 cents (a free product alone, or repriced to 0): refused before the
                    # provider is called (a reprice's earlier intent is cancelled below, as for any refusal).
                    raise errors.NothingToPay(sorted({line.product_id for line in priced}))
                intent = intents.for_total(total.total_cents) if intents is not None else None
                order = self._new_order(
                    actor, priced, address, total=total, where=where, order_id=order_id, intent=intent, uses=uses
                )
                try:
                    # the uses' counters, and the order's DISCOUNTS item when a promotion applied
                    takes = stock.takes(room - 2 * len(uses) - (1 if total.promotions else 0))
                    placed = self.orders.place(
                        order,
                        cart_claim,
                        placement=placement,
                        takes=takes,
                        attempt=attempt,
                        unpaid=unpaid,
                        uses=uses,
                        settings=self.checkout.check(checkout[0]) if checkout is not None else None,
                    )
                except errors.CheckoutSettingsChanged:
                    # Edited since this instance read them: read again and price again, once.
                    settings_reads += 1
                    if checkout is None or settings_reads > 1:
                        raise
                    fresh = self.checkout.refreshed()
                    checkout = (fresh, checkout[1])
                    where, offers = checkout[1](fresh)
                    promotion_shards.clear()
                    continue
                except errors.PromotionUseRefused as refused:
                    if refused.shard is None:
                        offers = offers.refused(refused.promotion_id, customer=True)
                        continue
                    free = self._free_counters(offers, refused.promotion_id)
                    if free:
                        promotion_shards[refused.promotion_id] = random.choice(free)
                    else:
                        offers = offers.refused(refused.promotion_id, customer=False)
                    continue
                except errors.StockSourceShort as short:
                    stock.learn(short)
                    self._remember_shards(stock.shards)
                    continue
                except errors.PriceChanged:
                    reprices += 1
                    if reprices == REPRICE_ATTEMPTS:
                        raise
                    priced, _ = self._price(quantities, fresh=True)
                    continue
                except errors.UnpaidOrderLimit as limited:
                    # The customer's unpaid hold refused. Held orders that are no longer unpaid (their release by
                    # the stream lost, or still on its way) leave it now, and the placement is tried once more.
                    if released_settled or not self._release_settled(actor.sub, limited):
                        raise
                    released_settled = True
                    continue
                if intents is not None and placed.order_id != order_id:
                    # The placement claim was taken (a repeat of a placement that completed, or a concurrent
                    # one): the order placed first is the answer, with its own intent; this run's is cancelled.
                    intents.cancel_all("the Idempotency-Key's order was placed by another run")
                return placed
        except errors.WriteCancelled:
            # The store cancelled the transaction (a concurrent one on its items, throttled): nothing written.
            if intents is not None:
                intents.cancel_all("the store cancelled the placement's transaction")
            raise
        except errors.ServiceUnavailable:
            # The store did not answer (or the provider, for a repriced total): whether the transaction was
            # written is unknown, so the intent stays. If it was not, the intent is an orphan no one can pay
            # (its client secret was never given out); the repeat places under a new order id and intent.
            if intents is not None:
                intents.log_unconfirmed()
            raise
        except errors.DomainError as refused:
            # Refused with nothing written (out of stock, a price that kept moving, the cart changed, stock
            # too scattered): the intent made for this order must never be paid.
            if intents is not None:
                intents.cancel_all(refused.code)
            raise
        raise AssertionError("unreachable")

    def _requested(self, lines: list[RequestedLine]) -> tuple[dict[str, int], dict[str, Product]]:
        """The quantities of `lines` (duplicates added up) and their products, within the order's limits."""
        quantities = merge_lines(lines)
        if not quantities:
            raise errors.InvalidRequest("an order needs at least one line")
        if len(quantities) > MAX_ORDER_LINES:
            raise errors.InvalidRequest(f"an order holds at most {MAX_ORDER_LINES} products")
        catalogue = self._catalogue(quantities)
        # After pricing: an unknown product is a 404 whatever its quantities.
        over = lines_over_the_limit(lines)
        if over:
            raise errors.InvalidRequest(
                f"an order holds at most {MAX_QUANTITY} of one product (lines of one product add up)", over
            )
        return quantities, catalogue

    def quote(
        self,
        *,
        address: ShippingAddress,
        lines: list[RequestedLine] | None = None,
        session_id: str | None = None,
        shipping_option_id: str | None = None,
        promo_code: str | None = None,
    ) -> Quote:
        """What placing these lines (or the session's cart) to `address` would store, read as the placement reads
        it and priced by the same function, with nothing written: the catalogue's prices (a cart's lines at the
        prices they were set with, as its checkout starts), the checkout's settings as of their latest edit."""
        if session_id is not None:
            cart = self.sessions.get(session_id, now=clock.epoch(clock.now()))
            if not cart.lines:
                raise _empty(CartOwner.session(session_id))
            priced, _ = _from_cart(cart.lines)
        else:
            quantities, catalogue = self._requested(lines or [])
            priced, _ = _priced(quantities, catalogue)
        checkout = self.checkout.current()
        where = destination(checkout, address, shipping_option_id)
        offers = offers_at(checkout, promo_code)
        include_tax = self.settings().prices_include_tax
        total = total_of(priced, where, prices_include_tax=include_tax, offers=offers)
        while (exhausted := self._exhausted(offers, total)) is not None:  # as a placement would find them
            offers = offers.refused(exhausted, customer=False)
            total = total_of(priced, where, prices_include_tax=include_tax, offers=offers)
        shipping_prices = {
            option.option_id: total_of(
                priced, replace(where, option=option), prices_include_tax=include_tax, offers=offers
            ).shipping_cents
            for option in where.options
        }
        lines_out = [
            line.model_copy(update={"discount_cents": part.discount_cents, "tax_cents": part.tax_cents})
            for line, part in zip(priced, total.lines, strict=True)
        ]
        return Quote(lines_out, total, where, self.payment_settings().currency, shipping_prices)

    def _free_counters(self, offers: Offers, promotion_id: str) -> list[int]:
        """The counters of a limited promotion that have room left (one consistent read of them all)."""
        promotion = next(p for p in offers.promotions if p.promotion_id == promotion_id)
        return self.checkout.free_counters(promotion)

    def _exhausted(self, offers: Offers, total: Total) -> str | None:
        """The first limited promotion that applied and whose every counter is full."""
        applied = {p.promotion_id for p in total.promotions}
        for promotion in offers.promotions:
            if (
                promotion.promotion_id in applied
                and promotion.use_shards
                and not self._free_counters(offers, promotion.promotion_id)
            ):
                return promotion.promotion_id
        return None

    def _release_settled(self, customer_id: str, limited: errors.UnpaidOrderLimit) -> bool:
        """After the customer's unpaid hold refused a placement (`limited`: what it held then), the held orders that
        are no longer PENDING_PAYMENT leave it, in one write conditional on each still being held (a release by the
        stream meanwhile makes it write nothing). One read, only on this refusal: the held orders, consistently.
        True when one was found settled (the placement is worth one more attempt); False when all are unpaid."""
        held = limited.held_order_ids
        if not held:
            return False
        found = self.orders.held_unpaid(held)
        waiting = sum(units for status, units in found.values() if status is OrderStatus.PENDING_PAYMENT)
        settled = {oid: units for oid, (status, units) in found.items() if status is not OrderStatus.PENDING_PAYMENT}
        gone = [oid for oid in held if oid not in found]  # archived: its order item (and its lines) left the table
        if not settled and not gone:
            return False
        # The hold counted each order's units when it took it: what it held beyond the others' is the gone orders'.
        gone_units = max(0, limited.held_units - waiting - sum(settled.values()))
        released = self.orders.release_unpaid(customer_id, [*settled, *gone], sum(settled.values()) + gone_units)
        logger.info(
            "unpaid_hold_released_at_placement",
            extra={"customer_id": customer_id, "order_ids": [*settled, *gone], "released": released},
        )
        return True

    def _catalogue(self, quantities: dict[str, int], *, fresh: bool = False) -> dict[str, Product]:
        """The products of `quantities` (ProductNotFound, ProductUnavailable).

        A hot product's entry may come from this instance's cache (the placement's conditions re-check its
        price and status); `fresh` reads every product consistently, past the cache (a reprice)."""
        scope = self.products.cache_scope()
        catalogue: dict[str, Product] = {}
        if not fresh:
            for pid in quantities:
                cached = self.hot.get(scope, Kind.CATALOGUE, pid)
                if cached is not None:
                    catalogue[pid] = cached
        wanted = [pid for pid in quantities if pid not in catalogue]
        if wanted:
            found = self.products.get_many(wanted, consistent=fresh)
            catalogue.update({pid: self.hot.keep(scope, Kind.CATALOGUE, product) for pid, product in found.items()})
        missing = [pid for pid in quantities if pid not in catalogue]
        if missing:
            raise errors.ProductNotFound(missing)
        archived = [pid for pid in quantities if not catalogue[pid].listed]
        if archived:
            raise errors.ProductUnavailable(archived)
        return catalogue

    def _hinted_shards(self, quantities: dict[str, int]) -> dict[str, int]:
        """The shard counts this instance learnt of the cart's products, so a flash-sale line goes to a shard at
        once (a cart holds no shard count; without a hint the first attempt finds the product item empty)."""
        scope, now = self.products.cache_scope(), time.monotonic()
        hints = {pid: self._shard_hints.get((scope, pid)) for pid in quantities}
        return {pid: hint[1] for pid, hint in hints.items() if hint is not None and hint[0] > now}

    def _remember_shards(self, shards: dict[str, int]) -> None:
        scope, until = self.products.cache_scope(), time.monotonic() + SHARD_HINT_SECONDS
        for pid, count in shards.items():
            self._shard_hints[(scope, pid)] = (until, count)

    def get(self, actor: Actor, order_id: str) -> Order:
        """The order, from the table or, once archived, from the archive (`archived` true)."""
        try:
            return self._live(actor, order_id)
        except errors.OrderArchived as archived:
            return self.archive.get(archived.archive_key)

    def payment_of(self, actor: Actor, order_id: str) -> tuple[OrderPayment, bool]:
        """The order's payment, and whether the caller may see the client secret: the owner only, and only
        while the order waits for its payment (an admin, or a paid, failed or expired order: never).
        OrderNotFound for another customer's order; PaymentNotFound for an order placed without payment."""
        order = self.get(actor, order_id)
        if order.payment is None:
            raise errors.PaymentNotFound("this order takes no payment through the shop", {"order_id": order_id})
        secret_shown = (
            actor.sub == order.customer_id
            and order.status is OrderStatus.PENDING_PAYMENT
            and order.payment.client_secret is not None
        )
        return order.payment, secret_shown

    def _live(self, actor: Actor, order_id: str) -> Order:
        """The order in the table; OrderArchived (its owner or an admin asked) when it is archived."""
        try:
            order = self.orders.get(order_id)
        except errors.OrderArchived as archived:
            if not actor.may_see(archived.customer_id):
                raise errors.OrderNotFound("order not found") from None
            raise
        if not actor.may_see(order.customer_id):
            raise errors.OrderNotFound("order not found")
        return order

    def list_for_customer(
        self, actor: Actor, customer_id: str, *, limit: int, next_token: str | None
    ) -> Page[OrderSummary]:
        actor.require_self_or_admin(customer_id)
        return self.orders.list_for_customer(customer_id, limit=limit, next_token=next_token)

    def list_by_status(
        self, actor: Actor, status: OrderStatus, *, limit: int, next_token: str | None
    ) -> Page[OrderSummary]:
        actor.require_admin()
        return self.orders.list_by_status(status, limit=limit, next_token=next_token)

    def list_expiring_authorisations(
        self, actor: Actor, *, limit: int, next_token: str | None
    ) -> Page[OrderPaymentSummary]:
        """The confirmed orders whose card authorisation will soon lapse (the admin's GET /orders?payment=expiring):
        CONFIRMED and placed more than AUTHORISATION_WARN_DAYS ago, oldest first, each with its payment's status.

        Placement stands for confirmation: a paid order is confirmed within its payment window (at most a day) after
        it was placed, so every order confirmed more than the warning's days ago is listed, and one confirmed up to
        a window later may be too (a warning a little early). The store's key condition selects exactly these: no
        order is read to be left out (docs/payments.md, "Orders whose authorisation will soon lapse")."""
        actor.require_admin()
        cutoff = clock.now() - timedelta(days=self.payment_settings().authorisation_warn_days)
        return self.orders.list_confirmed_before(clock.iso(cutoff), limit=limit, next_token=next_token)

    def change_status(
        self,
        actor: Actor,
        order_id: str,
        new_status: OrderStatus,
        *,
        expected_version: int,
        shipment: ShipmentIn | None = None,
        reason: str | None = None,
        ship_without_payment: bool = False,
    ) -> Order:
        """An admin's move along the status machine. SHIPPED needs the shipment; rejecting a return
        (RETURN_REQUESTED -> DELIVERED) needs a reason; RETURNED puts every line back in stock.

        SHIPPED needs the order's payment held: a payment whose authorisation lapsed (LAPSED) is PaymentNotHeld,
        unless `ship_without_payment`, which is then recorded on the order and its history entry. The flag on an
        order whose payment is held changes nothing (it covers a lapse recorded between the read and the write);
        with any other status it is refused (InvalidRequest)."""
        actor.require_admin()
        if new_status is OrderStatus.SHIPPED and shipment is None:
            raise errors.InvalidRequest(
                "shipping an order needs its carrier and tracking_number",
                {"carrier": "required with SHIPPED", "tracking_number": "required with SHIPPED"},
            )
        if ship_without_payment and new_status is not OrderStatus.SHIPPED:
            raise errors.InvalidRequest(
                "ship_without_payment goes only with SHIPPED", {"ship_without_payment": "only with SHIPPED"}
            )
        order = self.orders.get(order_id)
        if (
            expected_version >= 1
            and order.version == expected_version + 1
            and _landed(new_status, order.status)
            and _requested(shipment, reason).recorded_in(order.history[-1])
        ):
            return order  # this change is made: a retry whose first attempt's answer was lost
        if order.version != expected_version:
            raise errors.VersionMismatch("the order changed since you read it", {"current_version": order.version})
        if new_status in OWNER_ONLY_STATUSES:
            raise errors.InvalidTransition(
                f"only the customer requests a return (POST /orders/{order_id}/return)",
                {"from": order.status.value, "to": new_status.value},
            )
        settled_by_payment = order.status is OrderStatus.PENDING_PAYMENT and new_status is OrderStatus.CONFIRMED
        if new_status in PAYMENT_ONLY_STATUSES or settled_by_payment:
            raise errors.InvalidTransition(
                "only the payment provider's events and the payment window settle an unpaid order",
                {"from": order.status.value, "to": new_status.value},
            )
        rejecting = order.status is OrderStatus.RETURN_REQUESTED and new_status is OrderStatus.DELIVERED
        if rejecting and not reason:
            raise errors.InvalidRequest("rejecting a return needs a reason", {"reason": "required to reject a return"})
        if new_status is OrderStatus.SHIPPED and order.payment is not None:
            return self._ship(order, shipment, reason, without_payment_allowed=ship_without_payment)
        if order.status is OrderStatus.RETURN_REQUESTED and new_status in RETURN_OUTCOMES:
            return self._accept_return(order, reason)
        if rejecting and order.returns:  # units were returned before: the order stays partly returned
            return self._move(order, OrderStatus.PARTIALLY_RETURNED, reason=reason)
        return self._move(order, new_status, shipment=shipment, reason=reason)

    def _accept_return(self, order: Order, reason: str | None) -> Order:
        """The requested units back in stock and their refund due, in one write: RETURNED once every unit is back,
        PARTIALLY_RETURNED before (shop.services.returns)."""
        accepted = returns.accepted(order, version=order.version + 1, at=clock.iso_now())
        landed = OrderStatus.RETURNED if returns.everything_back(order, accepted) else OrderStatus.PARTIALLY_RETURNED
        return self._move(
            order,
            landed,
            reason=reason,
            accepted_return=accepted,
            restock=returns.restocked_lines(order, accepted),
        )

    def _ship(
        self, order: Order, shipment: ShipmentIn | None, reason: str | None, *, without_payment_allowed: bool
    ) -> Order:
        """SHIPPED for an order that takes a payment. Its payment must still be held when the change is written:
        the provider's lapse is recorded on the payment without moving the version, so the write is conditional on
        the payment not being LAPSED as well. A lapse recorded between the read and the write is PaymentNotHeld;
        with the admin's `ship_without_payment` the order is read again and shipped, recorded as shipped without
        its payment (at the version the admin read, or VersionMismatch)."""
        for _ in range(2):
            lapsed = order.payment is not None and order.payment.status is PaymentStatus.LAPSED
            if lapsed and not without_payment_allowed:
                raise errors.PaymentNotHeld(order.order_id, PaymentStatus.LAPSED.value)
            try:
                return self._move(
                    order,
                    OrderStatus.SHIPPED,
                    shipment=shipment,
                    reason=reason,
                    without_payment=lapsed,
                    unless_payment=None if lapsed else PaymentStatus.LAPSED,  # LAPSED is final: nothing to guard
                )
            except errors.PaymentNotHeld:
                if not without_payment_allowed:
                    raise
            current = self.orders.get(order.order_id)
            if current.version != order.version:
                raise errors.VersionMismatch(
                    "the order changed since you read it", {"current_version": current.version}
                )
            order = current
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    def cancel(self, actor: Actor, order_id: str) -> Order:
        """The owner's or an admin's cancel; a concurrent change is re-read and the cancel re-tried."""
        for _ in range(CANCEL_ATTEMPTS):
            order = self._live(actor, order_id)
            try:
                return self._move(order, OrderStatus.CANCELLED)
            except errors.VersionMismatch:
                continue
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    def request_return(
        self, actor: Actor, order_id: str, reason: str, lines: Sequence[ReturnLine] | None = None
    ) -> Order:
        """The owner asks to return units of a DELIVERED (or PARTIALLY_RETURNED) order, within RETURN_WINDOW_DAYS
        of its delivery: `lines` (None: every unit not returned yet), checked by shop.services.returns.

        Another customer's order reads as absent; an admin is not the owner (403). A concurrent change
        is re-read and the request re-tried, as a cancel is."""
        for _ in range(CANCEL_ATTEMPTS):
            order = self.get(actor, order_id)
            if actor.sub != order.customer_id:
                raise errors.Forbidden("only the customer who placed the order may return it")
            returnable = OrderStatus.RETURN_REQUESTED in ORDER_TRANSITIONS[order.status]
            if returnable and clock.now() > delivered_at(order) + RETURN_WINDOW:
                raise errors.ReturnWindowClosed(
                    f"returns close {RETURN_WINDOW_DAYS} days after delivery",
                    {"delivered_at": clock.iso(delivered_at(order)), "return_window_days": RETURN_WINDOW_DAYS},
                )
            request = returns.request_of(returns.asked_units(order, lines), clock.iso_now()) if returnable else None
            try:
                return self._move(order, OrderStatus.RETURN_REQUESTED, reason=reason, return_request=request)
            except errors.VersionMismatch:
                continue
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    def _move(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        shipment: ShipmentIn | None = None,
        reason: str | None = None,
        without_payment: bool = False,
        unless_payment: PaymentStatus | None = None,
        return_request: ReturnRequest | None = None,
        accepted_return: OrderReturn | None = None,
        restock: Sequence[OrderLine] = (),
    ) -> Order:
        """The status machine's step from the order as read; cancelling puts every line back in stock, accepting a
        return its `restock` lines (the repository writes it in the same transaction). `without_payment`: recorded
        as shipped without its payment held; `unless_payment`: the write also requires the payment not in it;
        `return_request` and `accepted_return` (its time set to the change's) are written with the change."""
        if new_status not in ORDER_TRANSITIONS[order.status]:
            raise errors.InvalidTransition(
                f"an order cannot go from {order.status} to {new_status}",
                {"from": order.status.value, "to": new_status.value},
            )
        moment = clock.now()
        now = clock.iso(moment)
        details = StatusDetails(
            shipment=Shipment(carrier=shipment.carrier, tracking_number=shipment.tracking_number, shipped_at=now)
            if new_status is OrderStatus.SHIPPED and shipment is not None
            else None,
            reason=reason,
            delivered_at=now if order.status is OrderStatus.SHIPPED and new_status is OrderStatus.DELIVERED else None,
            confirmed_at=now if new_status is OrderStatus.CONFIRMED else None,
            without_payment=without_payment,
            return_request=return_request.model_copy(update={"requested_at": now}) if return_request else None,
            accepted_return=accepted_return.model_copy(update={"accepted_at": now}) if accepted_return else None,
        )
        if new_status is OrderStatus.CANCELLED:
            restock = order.lines
        return self.orders.change_status(
            order,
            new_status,
            updated_at=now,
            restock=restock,
            details=details,
            expires_at=archive_at(
                new_status,
                clock.epoch(moment),
                self.settings().archive_after_days,
                self.settings().archive_grace_seconds,
            ),
            unless_payment=unless_payment,
        )


def _landed(asked: OrderStatus, status: OrderStatus) -> bool:
    """Whether an admin's change to `asked` leaves an order in `status`: a decided return lands where its units say
    (accepted: RETURNED or PARTIALLY_RETURNED; rejected after an accepted return: PARTIALLY_RETURNED)."""
    if asked in RETURN_OUTCOMES:
        return status in RETURN_OUTCOMES
    return status is asked or (asked is OrderStatus.DELIVERED and status is OrderStatus.PARTIALLY_RETURNED)


def _requested(shipment: ShipmentIn | None, reason: str | None) -> StatusDetails:
    """The details a status change request asks for, to recognise the stored change it made (times aside)."""
    return StatusDetails(
        shipment=Shipment(carrier=shipment.carrier, tracking_number=shipment.tracking_number, shipped_at="")
        if shipment is not None
        else None,
        reason=reason,
    )


def delivered_at(order: Order) -> datetime:
    """When the order was first delivered: its `delivered_at`, else (orders delivered before it was kept)
    its last DELIVERED history entry, else its last change."""
    if order.delivered_at:
        return datetime.fromisoformat(order.delivered_at)
    delivered = [entry.at for entry in order.history if entry.status is OrderStatus.DELIVERED]
    return datetime.fromisoformat(delivered[0] if delivered else order.updated_at)

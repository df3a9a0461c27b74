"""Behaviour (event time), the generator's first layer: a discrete-event simulation of the shop.
Each user session, order, the profile database and the restocking process is a Python
generator (an Actor) that emits events and yields how long to wait before its next step; a heap
orders the steps by time. Users browse in bursts separated by inactivity, search and sometimes
click a result, add to cart and sometimes order; orders go through payment (with failures, and
rare card-testing bursts), shipping or cancellation; inventory follows orders and restocks;
profiles are created, updated and deleted with a log sequence number (LSN). What it emits goes
to the delivery layer (kappa_shop.log.delivery)."""

from __future__ import annotations

import functools
import heapq
import itertools
import random
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from kappa_shop.log.catalog import CATEGORIES, Product, products
from kappa_shop.log.config import DAY, HOUR, MINUTE, SECOND, GeneratorConfig
from kappa_shop.log.delivery import Delivery, Writer
from kappa_shop.log.format import format_event_time

MAX_USERS = 180_000
# Mean number of valid events one session leads to (page views, searches, clicks,
# carts, and the order, payment, shipping and inventory events that follow), used to set the
# session arrival rate for a requested scale: traffic is spread over the whole period, and
# the run stops early if the requested number is reached first (so the count is within a
# few percent of the request, never much above it).
EVENTS_PER_SESSION = 9.0

# A simulated process: emits events, yields how many milliseconds to wait before its next step.
Actor = Iterator[int]

COUNTRIES = ("DE", "FR", "NL", "ES", "IT", "PL", "SE", "GB", "US", "CA")
TIERS = ("bronze", "silver", "gold", "platinum")
CARRIERS = ("dhl", "ups", "postnl", "colissimo")
FAILURE_REASONS = ("card_declined", "insufficient_funds", "expired_card")


class Shop:
    """The simulated shop: users, their sessions and orders, inventory and profiles."""

    def __init__(self, config: GeneratorConfig, progress: Callable[[str], None]) -> None:
        self.config = config
        self.progress = progress
        self.rng = random.Random(config.seed)
        self.delivery = Delivery(config, self.rng, Writer(Path(), config))
        self.catalog: list[Product] = products()
        self.products_by_category: dict[str, list[Product]] = {}
        for product in self.catalog:
            self.products_by_category.setdefault(product.category, []).append(product)
        self.queries = self._query_vocabulary()
        self.actors: list[tuple[int, int, Actor]] = []
        self.sequence = itertools.count()
        self.lsn = config.first_lsn
        self.order_number = 0
        self.search_number = 0
        # users: index -> [email version, country, tier, clock skew ms]; live: who can act
        self.users: dict[int, list[Any]] = {}
        self.live_users: list[int] = []
        self.live_position: dict[int, int] = {}
        self.next_user = 1
        self.stock: dict[str, int] = {}
        span_ms = config.end_ms - config.start_ms
        self.session_rate = config.events / EVENTS_PER_SESSION / span_ms  # sessions per ms
        self.hourly_demand = max(1.0, self.session_rate * HOUR * 0.08 * 1.6 / len(self.catalog))
        self.initial_users = min(max(config.events // 80, 8), MAX_USERS * 5 // 6)
        self.stopped = False
        self._current = config.start_ms
        self._last_query = ""

    @property
    def valid_events(self) -> int:
        return sum(counts.valid for counts in self.delivery.counts.values())

    def schedule(self, at_ms: int, actor: Actor) -> None:
        heapq.heappush(self.actors, (at_ms, next(self.sequence), actor))

    def emit(
        self, topic: str, event_type: str, payload: dict[str, Any], at_ms: int, skew_ms: int = 0
    ) -> None:
        self.delivery.emit(topic, event_type, payload, at_ms, skew_ms)

    # -- users and profiles -----------------------------------------------------------------
    def _create_user(self, at_ms: int) -> None:
        rng = self.rng
        index = self.next_user
        self.next_user += 1
        skew = 0
        if rng.random() < self.config.skewed_producer_fraction:
            limit = int(self.config.max_clock_skew_seconds * SECOND)
            skew = rng.randint(-limit, limit)
        state = [0, rng.choice(COUNTRIES), rng.choices(TIERS, (60, 25, 12, 3))[0], skew]
        self.users[index] = state
        self.live_position[index] = len(self.live_users)
        self.live_users.append(index)
        self._profile_event("user_created", index, at_ms)

    def _profile_event(self, event_type: str, index: int, at_ms: int) -> None:
        self.lsn += 1
        user_id = f"u-{index:07d}"
        payload: dict[str, Any] = {"lsn": self.lsn, "user_id": user_id}
        if event_type != "user_deleted":
            version, country, tier, _ = self.users[index]
            suffix = f"+{version}" if version else ""
            payload.update(
                {"email": f"{user_id}{suffix}@example.com", "country": country, "tier": tier}
            )
        self.emit("user_profile_changes", event_type, payload, at_ms)

    def _initial_users(self) -> Actor:
        # the existing customer base, created in the hour before the simulated span
        spacing = max(HOUR // self.initial_users, 1)
        for _ in range(self.initial_users):
            self._create_user(self._clock)
            yield spacing

    def _profile_changes(self) -> Actor:
        rng = self.rng
        span = self.config.end_ms - self.config.start_ms
        signups_per_ms = self.initial_users * 0.2 / span
        updates_per_ms = self.initial_users / (15 * DAY)
        rate = signups_per_ms + updates_per_ms
        while not self.stopped:
            yield max(int(rng.expovariate(rate)), 1)
            now = self._clock
            if rng.random() < signups_per_ms / rate and len(self.users) < MAX_USERS:
                self._create_user(now)
                continue
            if len(self.live_users) < 2:
                continue
            index = self.live_users[rng.randrange(len(self.live_users))]
            if rng.random() < 0.04:
                self._delete_user(index)
                self._profile_event("user_deleted", index, now)
                continue
            state = self.users[index]
            change = rng.random()
            if change < 0.4:
                state[2] = rng.choice(TIERS)
            elif change < 0.7:
                state[1] = rng.choice(COUNTRIES)
            else:
                state[0] += 1
            self._profile_event("user_updated", index, now)

    def _delete_user(self, index: int) -> None:
        position = self.live_position.pop(index)
        last = self.live_users.pop()
        if last != index:
            self.live_users[position] = last
            self.live_position[last] = position

    def _pick_user(self) -> int | None:
        if not self.live_users:
            return None
        # a few users are far more active than most: bias toward the front of the list
        draw = self.rng.random()
        return self.live_users[int(len(self.live_users) * draw * draw)]

    # -- browsing ---------------------------------------------------------------------------
    def _session_arrivals(self) -> Actor:
        rng = self.rng
        while True:
            yield max(int(rng.expovariate(self.session_rate)), 1)
            if self.valid_events >= self.config.events:
                self.stopped = True
                return
            user = self._pick_user()
            if user is not None:
                self.schedule(self._clock, self._session(user))

    def _session(self, index: int) -> Actor:
        rng = self.rng
        user_id = f"u-{index:07d}"
        skew = self.users[index][3]
        views_left = 1 + int(rng.expovariate(1 / 4.5))
        cart: list[dict[str, Any]] = []
        shown: list[str] = []
        current_product: Product | None = None
        page = rng.choice(("/home", "/home", "/home", "/search", "/category/books"))
        while True:
            now = self._clock
            if page.startswith("/product/"):
                current_product = self.catalog[int(page.rsplit("-", 1)[1]) - 1]
            self.emit("web_events", "page_view", {"user_id": user_id, "page_path": page}, now, skew)
            views_left -= 1
            action = rng.random()
            if current_product is not None and action < 0.22:
                yield self._think()
                quantity = rng.choices((1, 2, 3), (80, 15, 5))[0]
                cart.append(
                    {
                        "product_id": current_product.product_id,
                        "quantity": quantity,
                        "unit_price": current_product.unit_price,
                    }
                )
                payload = {"user_id": user_id, **cart[-1]}
                self.emit("web_events", "add_to_cart", payload, self._clock, skew)
            elif action < 0.40:
                yield self._think()
                shown = yield from self._search(user_id, skew)
            if views_left <= 0:
                break
            yield self._think()
            if shown and rng.random() < 0.5:
                position = min(int(rng.expovariate(0.45)), len(shown) - 1)
                product_id = shown[position]
                self.emit(
                    "search_clicks",
                    "search_result_click",
                    {
                        "user_id": user_id,
                        "query": self._last_query,
                        "position": position + 1,
                        "product_id": product_id,
                    },
                    self._clock,
                    skew,
                )
                yield rng.randint(300, 1500)
                page = f"/product/{product_id}"
                shown = []
            else:
                page = self._browse_target()
        if cart and rng.random() < 0.5:
            yield self._think()
            self.schedule(self._clock, self._order(user_id, cart))

    def _search(self, user_id: str, skew: int) -> Generator[int, None, list[str]]:
        """Emit one search; return the product ids it showed (generator: may wait)."""
        rng = self.rng
        query, results = self.queries[rng.randrange(len(self.queries))]
        shown = results[: rng.choice((0, 5, 10, 10, 10))] if results else []
        self.search_number += 1
        self._last_query = query
        self.emit(
            "searches",
            "search",
            {
                "user_id": user_id,
                "search_id": f"s-{self.search_number:09d}",
                "query": query,
                "result_product_ids": list(shown),
            },
            self._clock,
            skew,
        )
        yield rng.randint(2 * SECOND, 20 * SECOND)
        return shown

    def _think(self) -> int:
        """Time to the user's next action: seconds mostly; now and then a pause near the
        session gap (some just under 30 minutes, some just over); rarely none at all."""
        rng = self.rng
        draw = rng.random()
        if draw < 0.01:
            return 0
        if draw < 0.04:
            return rng.randint(25 * MINUTE, 35 * MINUTE)
        return min(int(rng.expovariate(1 / (40 * SECOND))) + 500, 10 * MINUTE)

    def _browse_target(self) -> str:
        rng = self.rng
        draw = rng.random()
        if draw < 0.65:
            return f"/product/{self.catalog[rng.randrange(len(self.catalog))].product_id}"
        if draw < 0.85:
            return f"/category/{rng.choice(sorted(CATEGORIES))}"
        return rng.choice(("/home", "/cart", "/help", "/account"))

    def _query_vocabulary(self) -> list[tuple[str, list[str]]]:
        vocabulary = []
        for category, nouns in sorted(CATEGORIES.items()):
            matching = [product.product_id for product in self.products_by_category[category]]
            for noun in nouns:
                query = noun.lower()
                ranked = sorted(matching, key=functools.partial(_search_rank, query))
                vocabulary.append((query, ranked[:10]))
        vocabulary += [("zzzz", []), ("gift ideas under 5", [])]
        return vocabulary

    # -- orders and inventory ---------------------------------------------------------------
    def _order(self, user_id: str, cart: list[dict[str, Any]]) -> Actor:
        rng = self.rng
        self.order_number += 1
        order_id = f"o-{self.order_number:09d}"
        amount = round(sum(item["quantity"] * item["unit_price"] for item in cart), 2)
        placed = {
            "order_id": order_id,
            "user_id": user_id,
            "items": cart,
            "amount": amount,
            "currency": "EUR",
        }
        self.emit("order_events", "order_placed", placed, self._clock)
        for item in cart:
            self._inventory("reservation", item["product_id"], -item["quantity"], order_id)

        def order_event(event_type: str, **fields: Any) -> None:
            payload = {"order_id": order_id, "user_id": user_id, **fields}
            self.emit("order_events", event_type, payload, self._clock)

        def release() -> None:
            for item in cart:
                self._inventory("release", item["product_id"], item["quantity"], order_id)

        yield rng.randint(5 * SECOND, 60 * SECOND)
        draw = rng.random()
        if draw < 0.03:  # changed their mind before paying
            yield rng.randint(MINUTE, 30 * MINUTE)
            order_event("order_cancelled", reason="customer_request")
            release()
            yield from self._impossible(order_event)
            return
        if draw < 0.045:  # card testing: a burst of declines, then a success within minutes
            for _ in range(rng.randint(3, 5)):
                order_event("payment_failed", amount=amount, reason="card_declined")
                yield rng.randint(10 * SECOND, 90 * SECOND)
        elif draw < 0.12:
            for _ in range(rng.randint(1, 2)):
                order_event("payment_failed", amount=amount, reason=rng.choice(FAILURE_REASONS))
                yield rng.randint(30 * SECOND, 5 * MINUTE)
            if rng.random() < 0.3:
                order_event("order_cancelled", reason="payment_failed")
                release()
                return
        order_event("order_paid", amount=amount)
        yield rng.randint(10 * MINUTE, 36 * HOUR)
        if rng.random() < 0.04:  # cancelled after payment: refunded, stock released
            order_event("order_cancelled", reason="refund_requested")
            release()
            yield from self._impossible(order_event)
            return
        order_event("order_shipped", carrier=rng.choice(CARRIERS))

    def _impossible(self, order_event: Callable[..., None]) -> Actor:
        """Now and then the order service misbehaves after a cancellation (a known bug)."""
        if self.rng.random() < 0.05:
            yield self.rng.randint(MINUTE, HOUR)
            order_event("order_shipped", carrier=self.rng.choice(CARRIERS))

    def _inventory(self, event_type: str, product_id: str, delta: int, order_id: str) -> None:
        self.stock[product_id] = self.stock.get(product_id, 0) + delta
        payload: dict[str, Any] = {"product_id": product_id, "quantity_delta": delta}
        if order_id:
            payload["order_id"] = order_id
        self.emit("inventory_changes", event_type, payload, self._clock + 100)

    def _initial_stock(self) -> Actor:
        for product in self.catalog:
            quantity = int(self.hourly_demand * 12) + self.rng.randint(5, 40)
            self._inventory("restock", product.product_id, quantity, "")
            yield 50

    def _restocking(self) -> Actor:
        rng = self.rng
        while not self.stopped:
            for product in self.catalog:
                if self.stock.get(product.product_id, 0) < self.hourly_demand * 2 + 3 and (
                    rng.random() < 0.5
                ):
                    quantity = int(self.hourly_demand * 12) + rng.randint(10, 60)
                    self._inventory("restock", product.product_id, quantity, "")
            yield HOUR

    @property
    def _clock(self) -> int:
        """The simulation clock: the time of the step being run."""
        return self._current


def _search_rank(query: str, product_id: str) -> int:
    """Where a product ranks among a query's results: a fixed shuffle per query."""
    return zlib.crc32(f"{query}|{product_id}".encode())


def run_shop(shop: Shop) -> None:
    """Run the heap loop, keeping the shop's clock at the time of the step being run."""
    config = shop.config
    start = config.start_ms
    shop.schedule(start - HOUR, shop._initial_users())
    shop.schedule(start - 30 * MINUTE, shop._initial_stock())
    shop.schedule(start, shop._session_arrivals())
    shop.schedule(start, shop._profile_changes())
    shop.schedule(start + HOUR, shop._restocking())
    report_every = max(config.events // 20, 1)
    next_report = report_every
    while shop.actors:
        at_ms, _, actor = heapq.heappop(shop.actors)
        if at_ms > config.end_ms:
            continue  # what would happen after the simulated span has not happened yet
        shop._current = at_ms
        shop.delivery.arrive_until(at_ms)
        try:
            wait = next(actor)
        except StopIteration:
            continue
        shop.schedule(at_ms + wait, actor)
        if shop.valid_events >= next_report:
            shop.progress(
                f"  {shop.valid_events:>12,} events generated  "
                f"(event time {format_event_time(at_ms)[:16]})"
            )
            next_report += report_every
    shop.delivery.arrive_all()
    shop.delivery.writer.close()

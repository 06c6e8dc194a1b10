"""The seeded customers (users with their interests) and the products every service shares.

Generated from a fixed seed, so every process (and every experiment run) sees the same
users, interests, products and prices without a database or a network call.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

SEED = 20261130
USER_COUNT = 200
PRODUCT_COUNT = 240

CATEGORIES = (
    "books",
    "coffee",
    "cycling",
    "games",
    "garden",
    "hiking",
    "kitchen",
    "music",
    "photo",
    "tea",
)
TIERS = ("basic", "plus", "pro")
TIER_LIMIT_CENTS = {"basic": 50_000, "plus": 200_000, "pro": 1_000_000}
"""The most a single charge may be before payment declines it, by tier."""

_FIRST = (
    "Aziz",
    "Dilnoza",
    "Farrukh",
    "Gulnora",
    "Jasur",
    "Kamola",
    "Laylo",
    "Malika",
    "Nodir",
    "Otabek",
    "Rustam",
    "Sevara",
    "Timur",
    "Umida",
    "Zarina",
    "Bekzod",
)
_LAST = (
    "Karimov",
    "Yusupova",
    "Rashidov",
    "Aliyeva",
    "Tursunov",
    "Saidova",
    "Ergashev",
    "Nazarova",
    "Qodirov",
    "Hasanova",
)
_NOUNS = (
    "Atlas",
    "Kettle",
    "Lens",
    "Trail",
    "Grinder",
    "Chain",
    "Novel",
    "Seed",
    "Deck",
    "Vinyl",
    "Lamp",
    "Pack",
)
_ADJECTIVES = ("Compact", "Classic", "Field", "Quiet", "Bright", "Steady", "Swift", "Warm")


@dataclass(frozen=True)
class User:
    """A seeded user; `blocked` users have every charge declined."""

    user_id: str
    display_name: str
    email: str
    interests: tuple[str, ...]
    tier: str
    blocked: bool


@dataclass(frozen=True)
class Product:
    """A seeded product with a popularity score in [0, 1)."""

    product_id: str
    title: str
    category: str
    price_cents: int
    popularity: float


@dataclass(frozen=True)
class Customers:
    """Users by id and products ordered by popularity, most popular first."""

    users: dict[str, User]
    products: tuple[Product, ...]


def user_id(n: int) -> str:
    """The id of the n-th seeded user, 1-based: user_id(1) == 'u-0001'."""
    return f"u-{n:04d}"


@cache
def customers() -> Customers:
    """Build the customers once per process; the same seed gives the same customers."""
    rng = random.Random(SEED)
    users: dict[str, User] = {}
    for n in range(1, USER_COUNT + 1):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        uid = user_id(n)
        users[uid] = User(
            user_id=uid,
            display_name=f"{first} {last}",
            email=f"{first.lower()}.{last.lower()}.{n}@example.test",
            interests=tuple(rng.sample(CATEGORIES, k=3)),
            tier=rng.choices(TIERS, weights=(6, 3, 1))[0],
            blocked=(n % 50 == 0),
        )
    products = []
    for n in range(1, PRODUCT_COUNT + 1):
        category = CATEGORIES[n % len(CATEGORIES)]
        products.append(
            Product(
                product_id=f"p-{n:04d}",
                title=f"{rng.choice(_ADJECTIVES)} {category.title()} {rng.choice(_NOUNS)}",
                category=category,
                price_cents=rng.randrange(499, 25_000, 100),
                popularity=round(rng.random(), 4),
            )
        )
    products.sort(key=lambda p: (-p.popularity, p.product_id))
    return Customers(users=users, products=tuple(products))

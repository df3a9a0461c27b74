"""The shop's product catalog: fixed reference data shared by the generator and the
`product_catalog` seed (seeds/reference/product_catalog.csv is this list, written out).

It depends on nothing but its own constant seed, so every generated log, whatever its seed
or scale, refers to the same products.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass

PRODUCT_COUNT = 200
_CATALOG_SEED = 20240301

CATEGORIES: dict[str, tuple[str, ...]] = {
    "books": ("Notebook", "Cookbook", "Atlas", "Novel", "Field Guide"),
    "kitchen": ("Kettle", "Teapot", "Skillet", "Knife Set", "Grinder"),
    "outdoor": ("Tent", "Lantern", "Backpack", "Hammock", "Compass"),
    "electronics": ("Headphones", "Charger", "Speaker", "Keyboard", "Webcam"),
    "garden": ("Trowel", "Planter", "Hose", "Seed Kit", "Pruner"),
}
ADJECTIVES = ("Classic", "Compact", "Deluxe", "Everyday", "Travel", "Pro", "Mini", "Heritage")


@dataclass(frozen=True)
class Product:
    """One catalog entry. Prices are in EUR with two decimals."""

    product_id: str
    product_name: str
    category: str
    unit_price: float


def products() -> list[Product]:
    """The whole catalog, p-0001 to p-0200, always the same."""
    rng = random.Random(_CATALOG_SEED)
    catalog = []
    category_names = sorted(CATEGORIES)
    for number in range(1, PRODUCT_COUNT + 1):
        category = category_names[(number - 1) % len(category_names)]
        name = f"{rng.choice(ADJECTIVES)} {rng.choice(CATEGORIES[category])}"
        price = round(rng.uniform(3, 250), 2)
        catalog.append(Product(f"p-{number:04d}", name, category, price))
    return catalog


def as_csv() -> str:
    """The catalog as the CSV text of the product_catalog seed."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["product_id", "product_name", "category", "unit_price"])
    for product in products():
        writer.writerow(
            [
                product.product_id,
                product.product_name,
                product.category,
                f"{product.unit_price:.2f}",
            ]
        )
    return buffer.getvalue()

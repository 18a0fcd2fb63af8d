"""Hardware catalog: accelerators, servers, networks, switches, storage tiers, prices, facility and reliability.

Data lives in YAML under `trainsizer/catalog/data/` (built from the hardware references, checked, every figure
with sources, date, confidence and doubts). Users overlay their own file of the same shape to add entries or
override fields (e.g. negotiated prices); overridden values record the overlay file as their source.

    from trainsizer.catalog import load_catalog
    cat = load_catalog()                       # cached built-in catalog
    cat = load_catalog(["my_prices.yaml"])     # with an overlay
    cat.accelerator("h100-sxm-80gb").peak_tflops("bf16")   # ids or unambiguous aliases
"""

from trainsizer.catalog.age import STALE_AFTER_DAYS, PriceAge, price_age
from trainsizer.catalog.catalog import Catalog, Facility, Reliability, load_catalog
from trainsizer.catalog.loader import DATA_DIR, SECTIONS, overlay_source_id
from trainsizer.catalog.records import (
    Accelerator,
    AltValue,
    CollectiveMeasurement,
    Figure,
    Formula,
    Network,
    NicSpec,
    PcieGeneration,
    PricePoint,
    PriceRange,
    Range,
    Record,
    ReliabilityDataset,
    ReliabilityFormula,
    Server,
    Source,
    StorageTier,
    Switch,
)

__all__ = [
    "DATA_DIR",
    "SECTIONS",
    "STALE_AFTER_DAYS",
    "Accelerator",
    "AltValue",
    "Catalog",
    "CollectiveMeasurement",
    "Facility",
    "Figure",
    "Formula",
    "Network",
    "NicSpec",
    "PcieGeneration",
    "PriceAge",
    "PricePoint",
    "PriceRange",
    "Range",
    "Record",
    "Reliability",
    "ReliabilityDataset",
    "ReliabilityFormula",
    "Server",
    "Source",
    "StorageTier",
    "Switch",
    "load_catalog",
    "overlay_source_id",
    "price_age",
]

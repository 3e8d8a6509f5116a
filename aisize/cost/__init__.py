"""Cost and total cost of ownership: the price table, priced lines, and the TCO formulas.

    from aisize.cost import load_prices, per_gpu_hour
    prices = load_prices()
    per_gpu_hour(capital_usd=317_000, life_years=4, operating_usd_per_year=20_000, gpus=8)

The planner (:mod:`aisize.plan.costing`) prices a plan's bill of materials with these.
"""

from aisize.cost.lines import CostLine, priced
from aisize.cost.prices import KINDS, Price, PriceTable, check_cloud_rate, check_overrides, server_price_id, \
    switch_price_id
from aisize.cost.prices import load as load_prices
from aisize.cost.storage import storage_line, storage_unit_price_id, unit_usd
from aisize.cost.tco import (HOURS_PER_YEAR, break_even_months, break_even_utilisation, capital_per_hour,
                             energy_per_year, per_gpu_hour, per_million_tokens, per_run)

__all__ = ["CostLine", "priced", "KINDS", "Price", "PriceTable", "load_prices", "check_overrides",
           "check_cloud_rate", "server_price_id", "switch_price_id", "HOURS_PER_YEAR", "capital_per_hour",
           "energy_per_year", "per_gpu_hour", "per_run", "per_million_tokens", "break_even_utilisation",
           "break_even_months", "storage_line", "storage_unit_price_id", "unit_usd"]

"""Numbers as a user reads them: plain decimals with a sensible precision, and their unit.

Python's ``:g`` turns 15,381,700 into ``1.53817e+07``: the model copies that
into its answer and the user has to decode it.  Every number a tool reports
(an attribute value, a statistic, an area) goes through ``plain_number``:
never an exponent, whole numbers in full, others to ``SIGNIFICANT`` digits,
thousands grouped (``15,381,700``; ``0.000123``; ``12.3457``).  Areas and
lengths carry their unit and a larger unit beside big values
(``15,381,700 m² (15.38 km²)``).  Pure Python.
"""

from __future__ import annotations

import decimal
import math

SIGNIFICANT = 6
MAX_DECIMALS = 12  # below 1e-12 a value is shown as 0 with its sign dropped


def plain_number(value: float | int | decimal.Decimal, significant: int = SIGNIFICANT, grouping: bool = True) -> str:
    """``value`` in plain decimal: whole numbers in full, others to ``significant`` digits, no exponent."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}" if grouping else str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "infinity" if number > 0 else "-infinity"
    comma = "," if grouping else ""
    if number.is_integer():
        return f"{int(number):{comma}}"
    magnitude = math.floor(math.log10(abs(number)))
    decimals = min(max(significant - 1 - magnitude, 0), MAX_DECIMALS)
    text = f"{number:{comma}.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def area_text(square_metres: float) -> str:
    """``450 m²``, ``45,000 m² (4.5 ha)``, ``15,381,700 m² (15.38 km²)``."""
    base = f"{plain_number(square_metres)} m²"
    size = abs(square_metres)
    if size >= 1_000_000:
        return f"{base} ({plain_number(round(square_metres / 1_000_000, 2))} km²)"
    if size >= 10_000:
        return f"{base} ({plain_number(round(square_metres / 10_000, 2))} ha)"
    return base


def length_text(metres: float) -> str:
    """``850 m``, ``12,400 m (12.4 km)``."""
    base = f"{plain_number(metres)} m"
    if abs(metres) >= 10_000:
        return f"{base} ({plain_number(round(metres / 1000, 2))} km)"
    return base

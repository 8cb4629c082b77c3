"""Numbers as a user reads them: plain decimals with a sensible precision, and their unit.

Python's ``:g`` turns 15,381,700 into ``1.53817e+07``: the model copies that
into its answer and the user has to decode it.  Every number a tool reports
(an attribute value, a statistic, an area) goes through ``plain_number``:
never an exponent, whole numbers in full, others to ``SIGNIFICANT`` digits,
thousands grouped (``15,381,700``; ``0.000123``; ``12.3457``).  Areas and
lengths carry their unit and a larger unit beside big values
(``15,381,700 m² (15.38 km²)``).  Pure Python.

A value the model may copy back into an expression (an attribute in a table)
goes through ``exact_number`` instead: the shortest text that reads back as
the same float, still without exponent or grouping (``1234567.89``,
``0.00001``), so ``"price" = 1234567.89`` selects the row it was read from.
Bin edges go through ``fixed_number`` with decimals from the bin width, so
adjacent edges never read alike.
"""

from __future__ import annotations

import decimal
import math

SIGNIFICANT = 6
MAX_DECIMALS = 12  # below 1e-12 a value is shown as 0 with its sign dropped
SQL_DIGITS = 15  # a float's worth: more significant digits than this in a numeric are a computation's


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


def exact_number(value: float | int | decimal.Decimal) -> str:
    """``value`` exactly as stored: the shortest round-trip digits of a float, without exponent or grouping."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return "NaN" if value.is_nan() else _plain_decimal(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "infinity" if number > 0 else "-infinity"
    return _plain_decimal(decimal.Decimal(repr(number)))  # repr: the shortest digits that read back as this float


def sql_number(value: float | decimal.Decimal, digits: int = SQL_DIGITS) -> tuple[str, bool]:
    """A SQL result's number as text, and whether it was rounded.

    Floats are their shortest round-trip digits (they read back as the same value).
    A numeric with more than ``digits`` significant digits is a computed one (avg():
    ``466.6666666666666667``): it is rounded to ``digits`` so it reads plainly, and
    the caller says so.
    """
    if isinstance(value, decimal.Decimal) and value.is_finite() and value != 0:
        shape = value.as_tuple()
        fraction = -shape.exponent if isinstance(shape.exponent, int) and shape.exponent < 0 else 0
        if fraction and len(shape.digits) > digits:  # whole numbers (a sum of integers) stay exact
            keep = max(digits - (value.adjusted() + 1), 0)  # decimals left once the whole part is counted
            if keep < fraction:
                rounded = value.quantize(decimal.Decimal(1).scaleb(-keep), rounding=decimal.ROUND_HALF_EVEN)
                return _plain_decimal(rounded), True
    return exact_number(value), False


def _plain_decimal(value: decimal.Decimal) -> str:
    if value.is_infinite():
        return "infinity" if value > 0 else "-infinity"
    text = f"{value:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fixed_number(value: float, decimals: int, grouping: bool = True) -> str:
    """``value`` to ``decimals`` places (trailing zeros dropped), no exponent: for numbers read side by side."""
    number = float(value)
    if not math.isfinite(number):
        return plain_number(number)
    text = f"{number:{',' if grouping else ''}.{max(decimals, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def step_decimals(step: float) -> int:
    """Decimals that tell apart numbers ``step`` apart: one place below the step's first digit (0.00458 -> 4)."""
    if not math.isfinite(step) or step <= 0:
        return 0
    return max(1 - math.floor(math.log10(step)), 0)


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

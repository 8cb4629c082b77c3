"""Figures typed: a measure's value with its unit and how it was measured.

A bare ``1000000`` is square feet in one project and square metres in the next;
an area in square degrees scaled by 111,320² looks like square metres.  So every
area, length, distance and perimeter a tool reports is a ``Figure``: the value
(``None`` for a column of per-feature values, such as a field a calculator
wrote), its unit (``m²``, ``ft² (US survey)``) and its method
(``ellipsoidal on WGS 84`` or ``planar in EPSG:2229``).  Tools carry them in
their artifact (``core.artifacts``), so the dock, the run log and the evals read
them without parsing the text, and print them with ``label``.  Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core.numbers import plain_number

ELLIPSOIDAL = "ellipsoidal"
PLANAR = "planar"


@dataclass(frozen=True)
class Figure:
    """One reported measure: ``what`` it is, its ``value`` (``None``: per-feature values), ``unit`` and ``method``.

    ``warning`` says why the figure is not what it seems (planar in degrees, on
    Web Mercator); empty when it can be taken as it is.
    """

    what: str
    value: float | None
    unit: str
    method: str
    warning: str = ""

    @property
    def basis(self) -> str:
        """``m², ellipsoidal on WGS 84``: the unit and the method, for a table header or a note."""
        return f"{self.unit}, {self.method}" if self.method else self.unit

    @property
    def label(self) -> str:
        """``area of 'parcels' = 92,903 m² (ellipsoidal on GRS 1980)``; a column's without its value."""
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            text = f"{self.what}: {self.basis}"
        else:
            text = f"{self.what} = {plain_number(self.value)} {self.unit}" + (
                f" ({self.method})" if self.method else ""
            )
        return f"{text}. {self.warning}" if self.warning else text

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"what": self.what, "value": self.value, "unit": self.unit, "method": self.method}
        if self.warning:
            data["warning"] = self.warning
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Figure | None:
        """The figure ``to_dict`` wrote, or ``None`` for anything else."""
        if not isinstance(data, Mapping) or not isinstance(data.get("unit"), str):
            return None
        value = data.get("value")
        number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        return cls(
            what=str(data.get("what") or ""),
            value=number,
            unit=str(data["unit"]),
            method=str(data.get("method") or ""),
            warning=str(data.get("warning") or ""),
        )

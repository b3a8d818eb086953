"""A server of typed tools for the official SDK clients (Python and TypeScript) to call.

``plan_trip`` takes a dataclass, a TypedDict, an Enum and a nested list and returns a
dataclass, so both clients see ``outputSchema`` and validate ``structuredContent``
against it; ``total`` returns a primitive (wrapped as ``{"result": ...}``).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from typing import Annotated, TypedDict

from tornado_mcp import Arg, Server

RECEIVED: dict[str, object] = {}


class Mode(enum.Enum):
    TRAIN = "train"
    BIKE = "bike"


@dataclass
class Traveller:
    """Who travels.

    Attributes:
        name: Their name.
        age: Their age in years.
    """

    name: str
    age: int


class Budget(TypedDict):
    amount: float
    currency: str


@dataclass
class Leg:
    start: str
    end: str
    mode: Mode


@dataclass
class Plan:
    traveller: Traveller
    legs: list[Leg]
    cost: float
    days: list[list[str]]


def build() -> Server:
    server = Server("typed-interop")

    @server.tool()
    def plan_trip(traveller: Traveller, budget: Budget, mode: Mode,
                  stops: Annotated[list[list[str]], Arg("Stops per day", max_items=14)]
                  ) -> Plan:
        """Plan a trip through the given stops.

        Args:
            traveller: Who travels.
            budget: How much may be spent.
            mode: How to get around.
            stops: The places to visit, one list per day.
        """
        RECEIVED.update(traveller=traveller, budget=budget, mode=mode, stops=stops)
        assert isinstance(traveller, Traveller) and isinstance(mode, Mode)
        places = [p for day in stops for p in day]
        legs = [Leg(a, b, mode) for a, b in itertools.pairwise(places)]
        return Plan(traveller, legs, min(budget["amount"], 10.0 * len(legs)), stops)

    @server.tool()
    def total(values: list[float]) -> float:
        """Add up the values."""
        return sum(values)

    return server


ARGS = {"traveller": {"name": "Ada", "age": 36},
        "budget": {"amount": 100.0, "currency": "EUR"}, "mode": "train",
        "stops": [["Oslo", "Bergen"], ["Flam"]]}
EXPECTED = {"traveller": {"name": "Ada", "age": 36},
            "legs": [{"start": "Oslo", "end": "Bergen", "mode": "train"},
                     {"start": "Bergen", "end": "Flam", "mode": "train"}],
            "cost": 20.0, "days": [["Oslo", "Bergen"], ["Flam"]]}

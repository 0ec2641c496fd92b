"""Workbench tools for web analytics: visitors, visit counts, traffic sources and plots (6 tools).

Names, parameters, validation rules and observations follow NeMo Gym's workplace assistant
schemas; ``WorkbenchEnvironment`` binds these functions as its methods (``self._state``).
Date filters compare text, as NeMo Gym's do, so ISO dates order correctly.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from tasks.environments.tooling import ToolError, tool

PLOT_VALUES = (
    "total_visits",
    "session_duration_seconds",
    "user_engaged",
    "visits_direct",
    "visits_referral",
    "visits_search_engine",
    "visits_social_media",
)
PLOT_TYPES = ("bar", "line", "scatter", "histogram")


def choose(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ToolError(f"{what} not valid. Please choose from: {', '.join(map(repr, allowed))}.")
    return value


def _visits(self, time_min: str, time_max: str) -> list[dict[str, Any]]:
    return [
        v
        for v in self._state["analytics"]
        if (not time_min or v["date_of_visit"] >= time_min) and (not time_max or v["date_of_visit"] <= time_max)
    ]


def _per_day(visits: list[dict[str, Any]], value: Any) -> str:
    totals: dict[str, int] = defaultdict(int)
    for v in visits:
        totals[v["date_of_visit"]] += value(v)
    return json.dumps({day: totals[day] for day in sorted(totals)})


@tool(writes=False)
def analytics_get_visitor_information_by_id(self, visitor_id: str) -> str:
    """Returns the analytics data for a given visitor ID.

    Args:
        visitor_id: ID of the visitor
    """
    found = [v for v in self._state["analytics"] if v["visitor_id"] == visitor_id]
    if not found:
        raise ToolError("Visitor not found.")
    return json.dumps(found)


@tool(writes=True)
def analytics_create_plot(self, time_min: str, time_max: str, value_to_plot: str, plot_type: str) -> str:
    """Plots the analytics data for a given time range and value.

    Args:
        time_min: Start date of the time range. Date format is YYYY-MM-DD
        time_max: End date of the time range. Date format is YYYY-MM-DD
        value_to_plot: Value to plot. Available values are: 'total_visits', 'session_duration_seconds', 'user_engaged',
            'visits_direct', 'visits_referral', 'visits_search_engine', 'visits_social_media'
        plot_type: Type of plot. Can be 'bar', 'line', 'scatter' or 'histogram'
    """
    if not time_min or not time_max:
        raise ToolError("Start or end date not provided.")
    choose(value_to_plot, PLOT_VALUES, "Value to plot")
    choose(plot_type, PLOT_TYPES, "Plot type")
    path = f"plots/{time_min}_{time_max}_{value_to_plot}_{plot_type}.png"
    self._state["plots"].append({"file_path": path})
    return path


@tool(writes=False)
def analytics_total_visits_count(self, time_min: str = "", time_max: str = "") -> str:
    """Returns the total number of visits within a specified time range.

    Args:
        time_min: Start date of the time range. Date format is YYYY-MM-DD
        time_max: End date of the time range. Date format is YYYY-MM-DD
    """
    return _per_day(_visits(self, time_min, time_max), lambda v: 1)


@tool(writes=False)
def analytics_engaged_users_count(self, time_min: str = "", time_max: str = "") -> str:
    """Returns the number of engaged users within a specified time range.

    Args:
        time_min: Start date of the time range. Date format is YYYY-MM-DD
        time_max: End date of the time range. Date format is YYYY-MM-DD
    """
    return _per_day(_visits(self, time_min, time_max), lambda v: int(bool(v["user_engaged"])))


@tool(writes=False)
def analytics_traffic_source_count(self, time_min: str = "", time_max: str = "", traffic_source: str = "") -> str:
    """Returns the number of visits from a specific traffic source within a specified time range.

    Args:
        time_min: Start date of the time range. Date format is YYYY-MM-DD
        time_max: End date of the time range. Date format is YYYY-MM-DD
        traffic_source: Traffic source to filter the visits. Available values are: 'direct', 'referral',
            'search engine', 'social media'
    """
    visits = _visits(self, time_min, time_max)
    if not traffic_source:
        return _per_day(visits, lambda v: 1)
    return _per_day(visits, lambda v: int(v["traffic_source"] == traffic_source))


@tool(writes=False)
def analytics_get_average_session_duration(self, time_min: str = "", time_max: str = "") -> str:
    """Returns the average session duration within a specified time range.

    Args:
        time_min: Start date of the time range. Date format is YYYY-MM-DD
        time_max: End date of the time range. Date format is YYYY-MM-DD
    """
    days: dict[str, list[float]] = defaultdict(list)
    for v in _visits(self, time_min, time_max):
        days[v["date_of_visit"]].append(float(v["session_duration_seconds"]))
    return json.dumps({d: sum(s) / len(s) for d, s in sorted(days.items())})


ANALYTICS_TOOLS = (
    analytics_get_visitor_information_by_id,
    analytics_create_plot,
    analytics_total_visits_count,
    analytics_engaged_users_count,
    analytics_traffic_source_count,
    analytics_get_average_session_duration,
)

"""Name -> environment class registry, and TRL ``environment_factory`` dicts built from it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

from tasks.environments.workbench import WorkbenchEnvironment
from tasks.environments.workplace import WorkplaceEnvironment
from tasks.environments.workplace_lite import WorkplaceLiteEnvironment

NO_ENVIRONMENT = ""  # the ``environment`` value of rows from tool-free domains


class NoToolsEnvironment:
    """Stand-in for rows without an environment in mixed runs: no tools, nothing to reset.

    TRL routes every row of a dict ``environment_factory`` by its ``environment`` column, so
    math/code/... rows (``environment == ""``) need an entry too; this one exposes no tools."""

    def reset(self, **row: Any) -> None:
        return None


ENVIRONMENTS: MappingProxyType[str, type] = MappingProxyType(
    {
        "workbench": WorkbenchEnvironment,
        "workplace": WorkplaceEnvironment,
        "workplace_lite": WorkplaceLiteEnvironment,
    }
)


class UnknownEnvironmentError(KeyError):
    """An environment name nobody registered; the message lists the known names."""

    def __str__(self) -> str:
        return str(self.args[0])


def known_environments() -> list[str]:
    return sorted(ENVIRONMENTS)


def get_environment_class(name: str) -> type:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise UnknownEnvironmentError(
            f"unknown environment {name!r}; known environments: {', '.join(known_environments())}"
        ) from None


def environment_factories(names: Iterable[str] | None = None) -> dict[str, Callable[[], Any]]:
    """``environment_factory`` for GRPOTrainer: the named environments (all by default) plus
    ``""`` -> ``NoToolsEnvironment`` so rows of tool-free domains route too."""
    chosen = known_environments() if names is None else sorted(set(names) - {NO_ENVIRONMENT})
    factories: dict[str, Callable[[], Any]] = {name: get_environment_class(name) for name in chosen}
    factories[NO_ENVIRONMENT] = NoToolsEnvironment
    return factories

"""Multi-turn tool environments for TRL's ``environment_factory``, their tasks and scoring.

Importing this package registers the ``workplace`` verifier (text-only replay scoring).
"""

from tasks.environments.registry import (
    ENVIRONMENTS,
    NO_ENVIRONMENT,
    NoToolsEnvironment,
    UnknownEnvironmentError,
    environment_factories,
    get_environment_class,
    known_environments,
)
from tasks.environments.scoring import (
    EnvironmentReplayVerifier,
    environment_rewards,
    episode_verdict,
    replay,
)
from tasks.environments.tooling import ToolError, call_tool, tool, tool_names
from tasks.environments.workbench import WorkbenchEnvironment
from tasks.environments.workplace import WorkplaceEnvironment
from tasks.environments.workplace_tasks import generate_workplace_tasks

__all__ = [
    "ENVIRONMENTS",
    "NO_ENVIRONMENT",
    "EnvironmentReplayVerifier",
    "NoToolsEnvironment",
    "ToolError",
    "UnknownEnvironmentError",
    "WorkbenchEnvironment",
    "WorkplaceEnvironment",
    "call_tool",
    "environment_factories",
    "environment_rewards",
    "episode_verdict",
    "generate_workplace_tasks",
    "get_environment_class",
    "known_environments",
    "replay",
    "tool",
    "tool_names",
]

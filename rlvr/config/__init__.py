"""Typed config: schemas registered with Hydra's ConfigStore, and their validation.

Every entry point composes the YAML tree in ``conf/`` against these dataclasses, converts the
result to objects once (``to_config``) and validates it before any model is loaded.
"""

from rlvr.config.checks import (
    CHOICES,
    check_distill,
    check_model_source,
    to_config,
    validate,
)
from rlvr.config.schemas import (
    AlgoConfig,
    AnalyzeConfig,
    ConfigError,
    DistillConfig,
    DomainConfig,
    EvalConfig,
    LoggerConfig,
    MergeConfig,
    MixtureConfig,
    ModelConfig,
    PathsConfig,
    PeftConfig,
    ReportConfig,
    RunConfig,
    SandboxConfig,
    SFTConfig,
    StudyConfig,
    TinySpecConfig,
    TrainerConfig,
    register_configs,
)

__all__ = [
    "AlgoConfig",
    "AnalyzeConfig",
    "CHOICES",
    "ConfigError",
    "DistillConfig",
    "DomainConfig",
    "EvalConfig",
    "LoggerConfig",
    "MergeConfig",
    "MixtureConfig",
    "ModelConfig",
    "PathsConfig",
    "PeftConfig",
    "ReportConfig",
    "RunConfig",
    "SFTConfig",
    "SandboxConfig",
    "StudyConfig",
    "TinySpecConfig",
    "TrainerConfig",
    "check_distill",
    "check_model_source",
    "register_configs",
    "to_config",
    "validate",
]

"""The study as one command: plan, stage commands, manifest, launchers and progress.

python -m rlvr.study experiment=tiny_study            # SFT -> experts -> mixed -> merges -> eval -> report
python -m rlvr.study experiment=m2rl_study study.dry_run=true
"""

from rlvr.analysis import pairs as _pairs  # noqa: F401  (registers the optional stage by name)
from rlvr.analysis import stage as _analyze_stage  # noqa: F401  (registers the optional stage by name)
from rlvr.filtering import stage as _filter_stage  # noqa: F401  (registers the optional stage by name)
from rlvr.study import (
    arms,  # noqa: E402,F401  (registers cascade and adaptive by name)
    mt_opd,  # noqa: E402,F401  (registers the optional stage by name)
)

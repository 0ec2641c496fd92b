"""Training building blocks: the GRPO and SFT trainers, stage set-up, trainer arguments, saving and checkpoints."""

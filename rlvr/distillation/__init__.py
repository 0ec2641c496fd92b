"""MT-OPD's building blocks: the routed distillation trainer and the teachers it routes to."""

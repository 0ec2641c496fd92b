"""Training rows: building them from tasks, the mixture sampler, weight schedules, agent rows."""

"""Adapters that run docket's RL objectives inside the field's engines: TRL and verl."""

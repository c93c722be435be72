"""docket.agents.scripted."""

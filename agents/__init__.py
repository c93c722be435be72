"""docket.agents."""

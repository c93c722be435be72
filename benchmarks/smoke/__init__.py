"""docket/smoke: the end-to-end check that an agent, its tools and the sandbox work."""

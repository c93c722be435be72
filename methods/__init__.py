"""docket.methods."""

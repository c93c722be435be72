"""docket.methods.decoding."""

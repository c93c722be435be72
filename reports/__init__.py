"""docket.reports."""

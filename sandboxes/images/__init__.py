"""docket's container images (one folder each: Dockerfile, compose.yaml) and Docker checks."""

"""docket.sandboxes.k8s: `docket suite` shards as a Kubernetes Indexed Job (`suite_job`), with
the k8s sandbox for the agents' containers and an S3 store for the logs."""

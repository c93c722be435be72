"""docket/fed_topics: label-skewed topic classification for federated LoRA (FedPissa on Flower)."""

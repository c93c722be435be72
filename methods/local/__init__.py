"""docket.methods.local: the `docket/local` and `docket/smollm2` model providers (local
transformers checkpoints decoded in-process) and the registry of their decoding-method plugins."""

"""Dustin: speculative decoding with sparse verification (`algorithm`), its `docket/local` plugin
(`plugin`) and the pass-key retrieval harness (`passkey`)."""

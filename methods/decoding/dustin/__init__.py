"""Dustin: speculative decoding with sparse verification (`algorithm`), its knobs (`settings`;
the experiment-only ones in `experimental`), its `docket/local` plugin (`plugin`) and the
pass-key retrieval harness (`passkey`)."""

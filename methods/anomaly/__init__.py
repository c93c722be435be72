"""Tabular anomaly detection with language models: AnoLLM and DiSPaT self-play (see README.md)."""

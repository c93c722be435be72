"""ECHO: tree rollouts, hybrid advantage shaping, adaptive clipping, TTRL pseudo-labels."""

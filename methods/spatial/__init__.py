"""Spatial methods: AffIn-Space operators (affine decomposition, canonical resampling, pose
subspace projection, conditional reconstruction) and their tiny-VLM integration. See README.md."""

"""The test suite as a package: shared helpers import as `tests.<folder>.<module>` under both
pytest and mypy, and test files in different folders may share a basename."""

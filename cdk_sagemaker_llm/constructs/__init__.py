"""The constructs, one concept per module."""

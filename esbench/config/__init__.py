"""Configuration: structured schemas, the algorithm registry, Hydra composition and validation."""

"""Configuration: structured schemas, Hydra composition and validation."""

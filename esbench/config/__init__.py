"""Configuration: structured schemas, Hydra composition and validation."""

from esbench.config.resolvers import register_resolvers

register_resolvers()

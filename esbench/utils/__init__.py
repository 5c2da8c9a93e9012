"""Small shared helpers: atomic file writes, seed derivation, hashing."""

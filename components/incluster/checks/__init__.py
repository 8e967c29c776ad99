"""The proof's checks and findings: one module per family, pure functions over the evidence record."""

"""The evidence record: each probe line and API object parsed once, checked against its schema, tied to its Pod."""

"""The probes: what runs on the card in a proof Pod (memory, compute, fault, bandwidth) and the bindings they share."""

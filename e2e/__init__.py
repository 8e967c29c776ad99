"""The real-engine scenarios (e2e/run): the Pulumi CLI against a local control plane."""

"""The host proof: a stack's proof Pods run as processes on one GPU host, judged by the same judge (no Kubernetes)."""

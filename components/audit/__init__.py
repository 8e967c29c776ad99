"""`python -m components.audit`: which Pods of any cluster can reach a GPU, and is a quota holding each."""

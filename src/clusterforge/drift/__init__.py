"""Drift: compare every node with the declared state (Ansible check+diff and the quick validators)."""

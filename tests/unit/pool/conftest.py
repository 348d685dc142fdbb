"""Fixtures of the pool tests: `k8s`, the local Kubernetes API stand-in (k8s_standin.py)."""

from __future__ import annotations

from k8s_standin import k8s

__all__ = ["k8s"]

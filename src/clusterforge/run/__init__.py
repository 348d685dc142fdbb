"""Runs: Ansible through ansible-runner (provision, check/diff), rolling reboots, run records."""

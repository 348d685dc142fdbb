"""Where a run's logs are kept: beside the records database, one folder per run (0700).

`<records dir>/logs/<kind>-<run id>/`: Ansible's output and events of each playbook run (ansible-runner's
`stdout` and `job_events/`, never its `env/` or `command`, which hold the environment), so a failed run can
be read after the fact; the path is printed when a run fails.
"""

from __future__ import annotations

import os
from pathlib import Path

from clusterforge.records._util import default_db_path

#: ansible-playbook's exit codes that report on hosts (0 ok, 2 a host failed, 3 a host unreachable); any
#: other (1 error, 4 parser error, 5 bad options, 99 interrupted, 250 unexpected) means the tool failed
PLAYBOOK_RAN = (0, 2, 3)


def run_logs(kind: str, run_id: str) -> Path:
    root = default_db_path().parent / "logs"
    path = root / f"{kind}-{run_id}"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for p in (root, path):
        os.chmod(p, 0o700)
    return path

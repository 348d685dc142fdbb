"""Run one lab BMC: `python -m clusterforge.lab.bmc.emulator CONFIG.py` (sushy-emulator, our driver).

Registers :class:`~clusterforge.lab.bmc.driver.BiosFakeDriver` as sushy-tools' fake driver, then hands over
to sushy-emulator's own `main()` with `--fake --config CONFIG.py` (listen address, port, TLS certificate,
htpasswd file and state directory all come from the config file). Started detached by `start_bmcs`
(pidfile `emulator.pid` beside the config), ended by `stop_bmcs`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m clusterforge.lab.bmc.emulator CONFIG.py", file=sys.stderr)
        return 2
    config = Path(args[0]).resolve()
    from sushy_tools.emulator import main as sushy_main
    from sushy_tools.emulator.resources.systems import fakedriver

    from clusterforge.lab.bmc.driver import BiosFakeDriver

    fakedriver.FakeDriver = BiosFakeDriver  # sushy's Application looks the class up at first use
    sushy_main.app.logger.setLevel(logging.INFO)  # staged/applied BIOS changes show in emulator.log
    sys.argv = ["sushy-emulator", "--fake", "--config", str(config)]
    return int(sushy_main.main() or 0)


if __name__ == "__main__":
    sys.exit(main())

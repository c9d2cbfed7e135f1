"""A pytest plugin that runs the conformance kit on a plug-in device.

    pytest -p pyaten.testing.pytest_plugin --pyaten-device=openreg tests/test_openreg.py

Options: `--pyaten-device=NAME` (the device the `pyaten_device` fixture returns; "cpu" when
not given) and `--pyaten-backend=MODULE`, the package that registers the device (default:
`pyaten_<name>` when it can be imported). What it adds:

- the fixture `pyaten_device`: the device string;
- parametrisation: a test that takes `conformance_sample` runs once per row of the kit's
  sample table (ids are the operator names); `check_sample(conformance_sample, device)`
  raises on a mismatch;
- with `--pyaten-device`, the kit's per-operator coverage table at the end of the run.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from pyaten.testing import conformance

__all__ = ["check_sample"]

check_sample = conformance.check_sample


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("pyaten", "pyaten plug-in devices")
    group.addoption("--pyaten-device", default=None, metavar="NAME",
                    help="run pyaten's conformance samples on this device (e.g. openreg)")
    group.addoption("--pyaten-backend", default=None, metavar="MODULE",
                    help="the package that registers the device (default: pyaten_<name>)")


def _device(config: Any) -> str | None:
    return config.getoption("--pyaten-device", default=None)


def pytest_configure(config: Any) -> None:
    device = _device(config)
    if device is None:
        return
    module = config.getoption("--pyaten-backend", default=None)
    name = device.partition(":")[0]
    if module is None and name not in ("cpu", "meta"):
        module = f"pyaten_{name}"
    if module is not None:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise pytest.UsageError(
                f"--pyaten-device={device}: cannot import the backend package '{module}' "
                f"({error}); install it or name it with --pyaten-backend=MODULE"
            ) from None
    import pyaten

    try:
        pyaten.device(device)
    except RuntimeError as error:
        raise pytest.UsageError(f"--pyaten-device={device}: {error}") from None


@pytest.fixture
def pyaten_device(request: Any) -> str:
    """The device given with --pyaten-device ("cpu" when none was given)."""
    return _device(request.config) or "cpu"


def pytest_generate_tests(metafunc: Any) -> None:
    if "conformance_sample" in metafunc.fixturenames:
        table = conformance.samples()
        ids = [f"{s.op}-{i}" if [t.op for t in table].count(s.op) > 1 else s.op
               for i, s in enumerate(table)]
        metafunc.parametrize("conformance_sample", table, ids=ids)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    device = _device(config)
    if device is None or device == "cpu":
        return
    report = conformance.run_backend_conformance(device)
    terminalreporter.section(f"pyaten conformance: {device}")
    terminalreporter.write_line(str(report))

"""The tests; a package so that test modules can import the shared helpers as `tests.conftest`."""

"""Test helpers for Faregate and its plugins: the base of fake upstream servers
(:mod:`.fake_server`), real gateways (:mod:`.harness`), pytest fixtures
(:mod:`.pytest_plugin`), log rows (:mod:`.logs`), conformance suites. The fakes of
particular vendors ship with their plugins (``faregate_adapter_openai.testing``, ...)."""

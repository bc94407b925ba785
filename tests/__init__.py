"""The test suite as a package, so ``tests.<module>`` is always this directory: an installed
top-level ``tests`` (``smdebug_rulesconfig`` installs one; the SageMaker Python SDK pulls it in, in
Studio images and wherever a user adds it) would otherwise win over a namespace package
(tests/test_test_package.py checks it)."""

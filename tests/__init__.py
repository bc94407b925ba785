"""The test suite as a package, so ``tests.<module>`` is always this directory: an installed
top-level ``tests`` (``smdebug_rulesconfig``, pulled in by the studio extra's ``sagemaker``) would
otherwise win over a namespace package (tests/test_test_package.py checks it)."""

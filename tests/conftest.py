"""Test session set-up: capture is on for every test in this process.

GRUMPY_MIN_BYTES is lowered to grumpy's floor (64 KiB) so that test arrays
stay small; everything else is grumpy's default."""

import os

os.environ.setdefault("GRUMPY_MIN_BYTES", "65536")
os.environ.setdefault("GRUMPY_CACHE_DIR", "off")  # every test compiles; test_fusion checks the disk cache

import grumpy  # noqa: E402

grumpy.enable()

import numpy as np  # noqa: E402,F401  (patched by grumpy on import)

"""Test session setup: the package of the build tree under test (PYTHONPATH
from scripts/check.py) and a private kernel cache for the session."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
_cache = tempfile.mkdtemp(prefix="flashattn-pytest-")
os.environ.setdefault("FLASHATTN_CACHE_DIR", _cache)

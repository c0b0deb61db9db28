#!/usr/bin/env python3
"""Moved: the Python example is now examples/python/example.py, built on the small client
module examples/python/tool_cli_client.py (discovery, the identity proof, errors as exceptions).
This path still runs it, for links and scripts that name it.

    python3 examples/python_client.py
"""

import os
import runpy

runpy.run_path(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "example.py"),
    run_name="__main__",
)

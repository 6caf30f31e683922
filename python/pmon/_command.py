# SPDX-License-Identifier: Apache-2.0
"""The ``pmon`` command of the Python package: the pmon program it carries.

It replaces this Python process (``os.execv``), so pmon has the same pid,
stdio, signals and exit status as the command the user ran.
"""

import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libexec", "pmon")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("pmon: the pmon program is missing from the package (%s)\n" % exe)
        return 127
    os.execv(exe, [exe] + sys.argv[1:])
    return 127

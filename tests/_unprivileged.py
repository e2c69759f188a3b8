"""Run a command as a process that file permissions apply to.

A non-root user runs it as is.  Root ignores file permissions (CAP_DAC_OVERRIDE), so under
root the command runs under ``setpriv`` with the permission-override capabilities removed
from its bounding set: it keeps uid 0 (and so can still run the interpreter installed in
root's home) but, like any other user, cannot write a file or directory whose mode forbids
it.
"""

import os
import shutil
import subprocess
import sys

import pytest


def unprivileged_prefix():
    """The command prefix (a list), or skip the test when it cannot be built."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def run_python(code, *, env=None, cwd=None):
    """Run ``code`` with this interpreter, unprivileged; returns the CompletedProcess."""
    return subprocess.run(unprivileged_prefix() + [sys.executable, "-c", code],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=600)

"""Helpers for CLI contract tests: failures are collected (every check runs), run() drives the
ferry binary and checks its exit code. Used by test_gen_cli.py."""
import subprocess
import sys


class Contract:
    def __init__(self, ferry, timeout=300):
        self.ferry = ferry
        self.timeout = timeout
        self.failures = []

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what)

    def run(self, *args, expect_rc=0):
        p = subprocess.run([self.ferry, *args], capture_output=True, text=True,
                           timeout=self.timeout)
        self.check(p.returncode == expect_rc,
                   f"{' '.join(args)}: exit {p.returncode}, expected {expect_rc}; "
                   f"stderr: {p.stderr.strip()[:300]}")
        return p

    def finish(self):
        print(f"{len(self.failures)} failed")
        sys.exit(1 if self.failures else 0)

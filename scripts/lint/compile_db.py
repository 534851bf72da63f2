"""CMake's compile_commands.json for the lint scripts (tidy.py, thread_safety.py)."""
import json
import os
import shlex


def load(build_dir):
    """{real path of a source: its entry}; raises OSError naming the file when absent."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        return {os.path.realpath(e["file"]): e for e in json.load(f)}


def words(entry):
    """The entry's compiler command as a list of words, whichever form CMake wrote."""
    return shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])

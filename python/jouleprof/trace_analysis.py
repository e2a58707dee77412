"""Trace analysis of a stored run, as ``jouleprof trace --from RUN`` gives it (docs/trace.md).

    from jouleprof.trace_analysis import analyse
    t = analyse("last")                                   # the run's "trace" section as a dict
    t = analyse(12, method="regression")                  # another attribution method's tables
    t = analyse("last", replay="replay.json")             # replay-informed tables
    for row in t["gpus"][0]["by_component"]:
        print(row["key"], row["energy_j"], row["low_j"], row["high_j"])
"""

import json

from ._jouleprof import trace_analysis as _trace_analysis


def analyse(run="last", db=None, method=None, replay=None):
    """The "trace" section of stored traced run ``run`` (ID, "last" or "last~N"), attributed again
    with ``method`` (default: replay with ``replay``, else split) and ``replay`` (a `jouleprof replay
    --json` file). Nothing is run or stored. Raises jouleprof's typed errors on bad input."""
    return json.loads(_trace_analysis(str(run), db or "", method or "", replay or ""))

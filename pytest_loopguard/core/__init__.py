"""The values of a run and the engine contract.

Events, results, verdicts, call identity, tool classification, the run context, expectations and the safe
reading of untrusted files: no engine, no policy, no trace I/O.
"""

"""`loopguard bench`: the performance goals, measured."""

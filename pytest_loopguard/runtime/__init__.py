"""Policies and the Guard that runs their engines for one run, the run protocol, and replay."""

"""The project's own checks beside the tests: documentation coverage, the lineage picture
(drawn and checked), and slim CI (build and test only what changed since main).

The top wing: imports any wing below it; only the command line imports it.
"""

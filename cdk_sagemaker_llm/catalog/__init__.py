"""Pure catalogs (no aws_cdk): instance types, Deep Learning Container lines, model specs, prices.

The constructs and the planning package read these facts; the command-line tools that synthesize
nothing (``size``, ``predict``, ``recommend``) import only this and ``planning``.
"""

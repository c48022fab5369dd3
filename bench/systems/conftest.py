"""The system scripts run in their own systems' environments (raphtory is not in
chronoray's): pytest's doctest collection leaves them alone."""

collect_ignore_glob = ["*_run.py"]
